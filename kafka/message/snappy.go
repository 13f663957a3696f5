package message

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// Snappy (codec 2, docs/PROTOCOL.md §2). Kafka 0.7's JVM client compresses
// through snappy-java's stream format: a 16-byte header, then blocks, each an
// int32 length and one raw snappy block of at most 32 KiB of input:
//
//	+-------------------------------------+---------+---------+--------+---------+--------+---------+--
//	| 0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00   | version | compat  | len 1  | block 1 | len 2  | block 2 | …
//	| 8 B                                 | int32=1 | int32=1 | int32  | len 1 B | int32  | len 2 B |
//	+-------------------------------------+---------+---------+--------+---------+--------+---------+--
//	 0                                     8         12        16
//
// Other 0.7 clients (Python, C, Go) write the whole set as one raw block, with
// no header. A raw block starts with the uncompressed length as a varint,
// then literal and copy elements (the snappy format itself).
//
// We read both (a payload that begins with the 8-byte magic is a stream) and
// write the stream format, as the JVM client does, so a 0.7 JVM consumer
// reads what our producer writes.

// snappyMagic opens snappy-java's stream format; the two int32s after it are
// the version and the oldest compatible version, both 1.
var snappyMagic = [8]byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const (
	snappyHeaderSize = len(snappyMagic) + 4 + 4
	// snappyBlockInput is snappy-java's default block size: 32 KiB of input
	// per block.
	snappyBlockInput = 32 << 10
)

// appendSnappyStream appends set, compressed in snappy-java's stream format,
// to dst.
func appendSnappyStream(dst, set []byte) []byte {
	need := snappyHeaderSize
	for n := len(set); n > 0; n -= snappyBlockInput {
		need += 4 + s2.MaxEncodedLen(min(n, snappyBlockInput))
	}
	dst = growTo(dst, len(dst)+need)
	dst = append(dst, snappyMagic[:]...)
	dst = byteOrder.AppendUint32(dst, 1) // version
	dst = byteOrder.AppendUint32(dst, 1) // compatible version
	for len(set) > 0 {
		chunk := set[:min(len(set), snappyBlockInput)]
		set = set[len(chunk):]
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		// Encode straight into dst's spare capacity.
		need := s2.MaxEncodedLen(len(chunk))
		block := s2.EncodeSnappy(dst[len(dst):len(dst)+need], chunk)
		byteOrder.PutUint32(dst[lenAt:], uint32(len(block)))
		dst = dst[:len(dst)+len(block)]
	}
	return dst
}

// growTo makes sure cap(b) >= n, keeping b's contents and length. It grows
// to exactly n: callers that grow repeatedly choose n to amortise.
func growTo(b []byte, n int) []byte {
	if cap(b) >= n {
		return b
	}
	nb := make([]byte, len(b), n)
	copy(nb, b)
	return nb
}

// isSnappyStream reports whether a snappy payload is in snappy-java's stream
// format rather than one raw block.
func isSnappyStream(p []byte) bool {
	return len(p) >= len(snappyMagic) && bytes.Equal(p[:len(snappyMagic)], snappyMagic[:])
}

// appendUnsnappy appends the decompressed payload p (stream format or one
// raw block) to dst, refusing anything that would inflate beyond limit bytes
// before it decodes a byte of it: every block states its decoded length up
// front, so the sum is known after a pass over the headers.
func appendUnsnappy(dst, p []byte, limit int) ([]byte, error) {
	if !isSnappyStream(p) {
		n, err := s2.DecodedLen(p)
		if err != nil {
			return dst, fmt.Errorf("%w: raw snappy block of %d bytes: %v", ErrBadPayload, len(p), err)
		}
		if n > limit {
			return dst, fmt.Errorf("%w: raw snappy block of %d bytes claims %d bytes, limit %d", ErrTooLarge, len(p), n, limit)
		}
		start := len(dst)
		dst = growTo(dst, start+n)
		if _, err := s2.Decode(dst[start:start+n], p); err != nil {
			return dst, fmt.Errorf("%w: raw snappy block of %d bytes: %v", ErrBadPayload, len(p), err)
		}
		return dst[:start+n], nil
	}
	if len(p) < snappyHeaderSize {
		return dst, fmt.Errorf("%w: snappy stream of %d bytes is shorter than its %d-byte header", ErrBadPayload, len(p), snappyHeaderSize)
	}
	if compat := binary.BigEndian.Uint32(p[12:]); compat != 1 {
		return dst, fmt.Errorf("%w: snappy stream needs reader version %d, we read version 1", ErrBadPayload, compat)
	}
	// First pass: walk the block headers, check the framing, add up the
	// decoded lengths.
	total := 0
	for pos := snappyHeaderSize; pos < len(p); {
		if len(p)-pos < 4 {
			return dst, fmt.Errorf("%w: snappy stream ends in a %d-byte block length at byte %d", ErrBadPayload, len(p)-pos, pos)
		}
		n := int(binary.BigEndian.Uint32(p[pos:]))
		pos += 4
		if n > len(p)-pos || n == 0 {
			return dst, fmt.Errorf("%w: snappy block at byte %d claims %d bytes, %d left", ErrBadPayload, pos-4, n, len(p)-pos)
		}
		d, err := s2.DecodedLen(p[pos : pos+n])
		if err != nil {
			return dst, fmt.Errorf("%w: snappy block at byte %d: %v", ErrBadPayload, pos-4, err)
		}
		if total += d; total > limit {
			return dst, fmt.Errorf("%w: snappy stream of %d bytes inflates past %d bytes", ErrTooLarge, len(p), limit)
		}
		pos += n
	}
	start := len(dst)
	dst = growTo(dst, start+total)
	out := dst[start : start+total]
	for pos, at := snappyHeaderSize, 0; pos < len(p); {
		n := int(binary.BigEndian.Uint32(p[pos:]))
		pos += 4
		d, _ := s2.DecodedLen(p[pos : pos+n])
		if _, err := s2.Decode(out[at:at+d], p[pos:pos+n]); err != nil {
			return dst, fmt.Errorf("%w: snappy block at byte %d: %v", ErrBadPayload, pos-4, err)
		}
		pos += n
		at += d
	}
	return dst[:start+total], nil
}

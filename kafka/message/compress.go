package message

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
)

// Compression (Kafka 0.7, docs/PROTOCOL.md §2): a batch is encoded as a
// message set, compressed as one stream, and wrapped in one magic-1 message
// with the codec bits set. The wrapper's CRC covers the compressed bytes.
//
//	gzip   (1): the payload is a gzip stream (RFC 1952) of the inner set.
//	snappy (2): the payload is snappy-java's stream format, or one raw
//	            snappy block (see snappy.go).
//
// A wrapper holds plain messages only: a wrapper inside a wrapper is refused
// (ErrNestedWrapper), as 0.7's consumer could not unpack one either.

// MaxDecompressedSize is the most a wrapper may inflate to: 64 MiB. A
// payload that would grow past it is refused with ErrTooLarge, before its
// bytes are produced (snappy states its length up front) or as soon as the
// limit is crossed (gzip), so a small hostile message cannot make a reader
// allocate without bound. Our producer refuses to build a wrapper whose inner
// set exceeds it, so it never writes what its own consumer would refuse.
// 64 MiB is 64 times 0.7's largest message (max.message.size, 1,000,000
// bytes) and far above a batch of 200 ordinary messages.
const MaxDecompressedSize = 64 << 20

// Compress wraps set in one magic-1 message compressed with codec.
func Compress(codec Codec, set []byte) ([]byte, error) {
	return AppendCompressed(nil, codec, set)
}

// AppendCompressed appends to dst one magic-1 wrapper holding set compressed
// with codec. Compressing into a reused dst spares the copy and, for
// snappy, every allocation.
func AppendCompressed(dst []byte, codec Codec, set []byte) ([]byte, error) {
	if len(set) > MaxDecompressedSize {
		return dst, fmt.Errorf("%w: inner set of %d bytes, limit %d", ErrTooLarge, len(set), MaxDecompressedSize)
	}
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, MagicV1, byte(codec)&codecMask, 0, 0, 0, 0)
	switch codec {
	case CodecNone:
		dst = append(dst, set...)
	case CodecGzip:
		w := appendWriter{dst}
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(&w)
		_, err := zw.Write(set)
		if err == nil {
			err = zw.Close()
		}
		gzipWriters.Put(zw)
		if err != nil {
			return dst[:start], fmt.Errorf("message: gzip %d bytes: %w", len(set), err)
		}
		dst = w.b
	case CodecSnappy:
		dst = appendSnappyStream(dst, set)
	default:
		return dst[:start], fmt.Errorf("%w: %v", ErrUnsupportedCodec, codec)
	}
	payload := dst[start+HeaderSizeV1:]
	byteOrder.PutUint32(dst[start:], uint32(len(dst)-start-LengthSize))
	byteOrder.PutUint32(dst[start+HeaderSizeV1-4:], crc32.ChecksumIEEE(payload))
	return dst, nil
}

// Decompress returns the inner message set of a wrapper. For a magic-0
// message it is ErrNotWrapper: there is nothing inside. It checks that the
// inner set is whole messages that are not themselves compressed; CRCs of
// the inner messages are left to the caller, as for any set (Unpack, in
// deep.go, checks them too).
func Decompress(m Message) ([]byte, error) {
	return AppendDecompressed(nil, m)
}

// AppendDecompressed appends the inner set of wrapper m to dst (see
// Decompress); a consumer that reuses dst decompresses without allocating
// once dst has grown.
func AppendDecompressed(dst []byte, m Message) ([]byte, error) {
	return appendDecompressed(dst, m, false)
}

// appendDecompressed is AppendDecompressed, checking the inner CRCs too when
// crcs is set (Unpack).
func appendDecompressed(dst []byte, m Message, crcs bool) ([]byte, error) {
	if m.Magic() != MagicV1 {
		return dst, fmt.Errorf("%w: magic-%d message of %d bytes", ErrNotWrapper, m.Magic(), len(m))
	}
	start := len(dst)
	var err error
	switch c := m.Codec(); c {
	case CodecNone:
		dst = append(dst, m.Payload()...)
	case CodecGzip:
		dst, err = appendGunzip(dst, m.Payload(), MaxDecompressedSize)
	case CodecSnappy:
		dst, err = appendUnsnappy(dst, m.Payload(), MaxDecompressedSize)
	default:
		return dst, fmt.Errorf("%w: %v", ErrUnsupportedCodec, c)
	}
	if err != nil {
		return dst[:start], fmt.Errorf("%v wrapper of %d bytes: %w", m.Codec(), len(m), err)
	}
	if err := checkInner(dst[start:], crcs); err != nil {
		return dst[:start], fmt.Errorf("%v wrapper of %d bytes: %w", m.Codec(), len(m), err)
	}
	return dst, nil
}

// checkInner checks the structure of a wrapper's inner set: whole messages,
// none of them compressed; and with crcs, every message's CRC.
func checkInner(set []byte, crcs bool) error {
	it := NewIterator(set, 0)
	for it.Next() {
		m := it.Message()
		if c := m.Codec(); c != CodecNone {
			return fmt.Errorf("%w: inner message at byte %d has codec %v", ErrNestedWrapper, it.Offset(), c)
		}
		if crcs && !m.Valid() {
			return fmt.Errorf("%w: inner message at byte %d (stored %08x)", ErrChecksum, it.Offset(), m.Checksum())
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("%w: inner set: %w", ErrBadPayload, err)
	}
	if it.Remaining() != 0 {
		return fmt.Errorf("%w: inner set of %d bytes ends in a partial message of %d bytes", ErrBadPayload, len(set), it.Remaining())
	}
	return nil
}

// appendGunzip appends the gunzipped p to dst, stopping with ErrTooLarge as
// soon as more than limit bytes come out.
func appendGunzip(dst, p []byte, limit int) ([]byte, error) {
	g := gunzips.Get().(*gunzip)
	defer gunzips.Put(g)
	g.br.Reset(p)
	zr := &g.zr
	if err := zr.Reset(&g.br); err != nil {
		return dst, fmt.Errorf("%w: gzip header: %v", ErrBadPayload, err)
	}
	start := len(dst)
	for {
		// Never ask for more than one byte past the limit, so a hostile
		// stream costs at most limit+1 bytes of memory.
		end := start + limit + 1
		if len(dst) == cap(dst) {
			dst = growTo(dst, min(max(2*cap(dst), len(dst)+4*len(p), 512), end))
		}
		n, err := zr.Read(dst[len(dst):min(cap(dst), end)])
		dst = dst[:len(dst)+n]
		if len(dst)-start > limit {
			return dst, fmt.Errorf("%w: gzip stream of %d bytes inflates past %d bytes", ErrTooLarge, len(p), limit)
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			return dst, fmt.Errorf("%w: gzip: %v", ErrBadPayload, err)
		}
	}
}

var (
	gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}
	gunzips     = sync.Pool{New: func() any { return new(gunzip) }}
)

// gunzip is a gzip reader and the reader of the payload it reads, pooled
// together so that a reused one allocates nothing per wrapper (its Reset
// reuses the inflater). A zero gzip.Reader is ready for Reset.
type gunzip struct {
	br bytes.Reader
	zr gzip.Reader
}

// appendWriter is an io.Writer that appends to a byte slice.
type appendWriter struct{ b []byte }

func (w *appendWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// AppendInflated appends payload, compressed with codec, decompressed to
// dst: at most MaxDecompressedSize bytes, with nothing checked of what it
// holds. Kafka 0.8's wrappers hold 0.8 message sets (package protocol08),
// which are not this package's to check.
func AppendInflated(dst []byte, codec Codec, payload []byte) ([]byte, error) {
	switch codec {
	case CodecGzip:
		return appendGunzip(dst, payload, MaxDecompressedSize)
	case CodecSnappy:
		return appendUnsnappy(dst, payload, MaxDecompressedSize)
	}
	return dst, fmt.Errorf("%w: %v", ErrUnsupportedCodec, codec)
}

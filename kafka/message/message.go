// Package message is the byte format of Kafka's messages and message sets
// (paper §3.1, docs/PROTOCOL.md §2). The same bytes are the producer's request body, the
// log file's contents and the fetch response body: nothing is re-encoded on
// the way from producer to consumer.
//
// A message is a 4-byte big-endian length N followed by N bytes. Magic 0 is
// the paper's format, with 9 bytes of overhead per message:
//
//	+--------+-------+--------+---------------------+
//	| N      | magic | CRC-32 | payload             |
//	| 4 B    | 1 B=0 | 4 B    | N-5 B               |
//	+--------+-------+--------+---------------------+
//	 0        4       5        9
//
// Magic 1 is Kafka 0.7's format, 10 bytes of overhead: an attributes byte
// whose low two bits name the compression codec (0 none, 1 gzip, 2 snappy):
//
//	+--------+-------+------------+--------+----------+
//	| N      | magic | attributes | CRC-32 | payload  |
//	| 4 B    | 1 B=1 | 1 B        | 4 B    | N-6 B    |
//	+--------+-------+------------+--------+----------+
//	 0        4       5            6        10
//
// The CRC is IEEE CRC-32 of the payload only. A message set is messages back
// to back, with no header of its own. A message's offset is its byte position
// in its partition's log, so the next message's offset is offset + 4 + N
// (§3.1: "our message ids are increasing but not consecutive").
package message

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Magic values and sizes of the two formats.
const (
	MagicV0 byte = 0
	MagicV1 byte = 1

	// LengthSize is the size of the int32 N in front of every message.
	LengthSize = 4
	// HeaderSizeV0 is the whole per-message overhead of magic 0: the paper's
	// "9 bytes" (§5).
	HeaderSizeV0 = LengthSize + 1 + 4
	// HeaderSizeV1 is the per-message overhead of magic 1.
	HeaderSizeV1 = LengthSize + 1 + 1 + 4

	minBodyV0 = 1 + 4     // magic + crc
	minBodyV1 = 1 + 1 + 4 // magic + attributes + crc

	codecMask = 0x03
	// AttrKeyed marks a magic-1 message whose payload carries a key
	// (keyed.go); 0.7 never sets it.
	AttrKeyed  = 0x04
	attrsKnown = codecMask | AttrKeyed
)

// Codec is the compression codec named by a magic-1 message's attributes.
type Codec uint8

// The codecs of Kafka 0.7.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

var byteOrder = binary.BigEndian

// SizeV0 is the size on the wire and on disk of a magic-0 message holding
// payloadLen bytes.
func SizeV0(payloadLen int) int { return HeaderSizeV0 + payloadLen }

// AppendV0 appends one magic-0 message holding payload to dst.
func AppendV0(dst, payload []byte) []byte {
	dst = byteOrder.AppendUint32(dst, uint32(minBodyV0+len(payload)))
	dst = append(dst, MagicV0)
	dst = byteOrder.AppendUint32(dst, crc32.ChecksumIEEE(payload))
	return append(dst, payload...)
}

// AppendV1 appends one magic-1 message with the given codec bits to dst. The
// payload is stored as given: for a compressed wrapper, use Compress.
func AppendV1(dst []byte, codec Codec, payload []byte) []byte {
	dst = byteOrder.AppendUint32(dst, uint32(minBodyV1+len(payload)))
	dst = append(dst, MagicV1, byte(codec)&codecMask)
	dst = byteOrder.AppendUint32(dst, crc32.ChecksumIEEE(payload))
	return append(dst, payload...)
}

// Append appends one uncompressed message holding payload to dst in the
// given format: MagicV0 (the paper's) or MagicV1 (0.7's, attributes 0).
// Any other magic is written as MagicV1, the format 0.7 writes.
func Append(dst []byte, magic byte, payload []byte) []byte {
	if magic == MagicV0 {
		return AppendV0(dst, payload)
	}
	return AppendV1(dst, CodecNone, payload)
}

// Size is the size on the wire and on disk of an uncompressed message of
// the given format holding payloadLen bytes.
func Size(magic byte, payloadLen int) int {
	if magic == MagicV0 {
		return HeaderSizeV0 + payloadLen
	}
	return HeaderSizeV1 + payloadLen
}

// Message is one whole message, its length prefix included. It is a view
// into a larger buffer: it does not own its bytes. Its methods assume the
// structure was checked by an Iterator or Validate.
type Message []byte

// Size is the number of bytes the message takes in a set: 4 + N.
func (m Message) Size() int { return len(m) }

// Magic is the format version.
func (m Message) Magic() byte { return m[LengthSize] }

// headerSize is the overhead of this message's format.
func (m Message) headerSize() int {
	if m.Magic() == MagicV1 {
		return HeaderSizeV1
	}
	return HeaderSizeV0
}

// Codec is the compression codec; always CodecNone for magic 0.
func (m Message) Codec() Codec {
	if m.Magic() == MagicV1 {
		return Codec(m[LengthSize+1] & codecMask)
	}
	return CodecNone
}

// Checksum is the stored CRC-32.
func (m Message) Checksum() uint32 {
	h := m.headerSize()
	return byteOrder.Uint32(m[h-4 : h])
}

// Payload is the message body after the header.
func (m Message) Payload() []byte { return m[m.headerSize():] }

// Valid reports whether the stored CRC matches the payload.
// §3.3: "Kafka stores a CRC for each message in the log" to detect corruption.
func (m Message) Valid() bool { return crc32.ChecksumIEEE(m.Payload()) == m.Checksum() }

// checkHeader checks the structure of the message that starts at set[0],
// given that at least LengthSize+1 bytes are present. It returns the
// message's total size.
func checkHeader(set []byte, offset int64) (int, error) {
	n := int(int32(byteOrder.Uint32(set)))
	switch magic := set[LengthSize]; magic {
	case MagicV0:
		if n < minBodyV0 {
			return 0, fmt.Errorf("%w: length %d < %d at offset %d", ErrCorrupt, n, minBodyV0, offset)
		}
	case MagicV1:
		if n < minBodyV1 {
			return 0, fmt.Errorf("%w: length %d < %d at offset %d", ErrCorrupt, n, minBodyV1, offset)
		}
		// The CRC covers the payload only (0.7's format), so the attributes
		// byte is checked here: 0.7 uses its low two bits, for the codec,
		// and this project bit 2 for a key (keyed.go), and nothing else. A
		// flipped bit above them is corruption, an unknown codec could never
		// be read back, and a wrapper has no key.
		if len(set) > LengthSize+1 {
			switch a := set[LengthSize+1]; {
			case a&^attrsKnown != 0:
				return 0, fmt.Errorf("%w: attributes %#02x at offset %d set bits other than the codec's two and the key's", ErrCorrupt, a, offset)
			case Codec(a&codecMask) > CodecSnappy:
				return 0, fmt.Errorf("%w: %v at offset %d", ErrUnsupportedCodec, Codec(a&codecMask), offset)
			case a&AttrKeyed != 0 && a&codecMask != 0:
				return 0, fmt.Errorf("%w: attributes %#02x at offset %d: a compressed wrapper with a key", ErrCorrupt, a, offset)
			}
		}
	default:
		return 0, fmt.Errorf("%w %d at offset %d", ErrBadMagic, magic, offset)
	}
	return LengthSize + n, nil
}

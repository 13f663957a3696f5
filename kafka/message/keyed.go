package message

import (
	"fmt"
	"hash/crc32"
)

// Keys. Kafka 0.8 gave every message an optional key (partitioning and, later,
// compaction use it); the paper's and 0.7's messages have none. A keyed message
// is stored here in 0.7's magic-1 frame with attribute bit 2 (AttrKeyed) set and
// the key in front of the value:
//
//	+--------+-------+------------+--------+---------+-------+-------+
//	| N      | magic | attributes | CRC-32 | key len | key   | value |
//	| 4 B    | 1 B=1 | 1 B: 0x04  | 4 B    | int32 K | K B   | rest  |
//	+--------+-------+------------+--------+---------+-------+-------+
//	 0        4       5            6        10        14      14+K
//
// The CRC covers key length, key and value (the payload, as in 0.7). A message
// without a key keeps the plain frame, so the paper's 9 bytes of overhead and
// the §5 experiments do not move; the key costs 4 bytes more than its own. A
// compressed wrapper carries no key (its inner messages may). A 0.7 client that
// does not know bit 2 reads the key length and key as the first bytes of the
// payload.

// keyLenSize is the int32 in front of a key.
const keyLenSize = 4

// AppendKeyed appends one magic-1 message holding key and value to dst; a nil
// key appends a plain, unkeyed message (AppendV1), an empty one a keyed
// message with a zero-length key.
func AppendKeyed(dst, key, value []byte) []byte {
	if key == nil {
		return AppendV1(dst, CodecNone, value)
	}
	dst = byteOrder.AppendUint32(dst, uint32(minBodyV1+keyLenSize+len(key)+len(value)))
	dst = append(dst, MagicV1, AttrKeyed)
	crcAt := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = byteOrder.AppendUint32(dst, uint32(len(key)))
	dst = append(dst, key...)
	dst = append(dst, value...)
	byteOrder.PutUint32(dst[crcAt:], crc32.ChecksumIEEE(dst[crcAt+4:]))
	return dst
}

// SizeKeyed is the size of AppendKeyed's message.
func SizeKeyed(key, value []byte) int {
	if key == nil {
		return HeaderSizeV1 + len(value)
	}
	return HeaderSizeV1 + keyLenSize + len(key) + len(value)
}

// Keyed reports whether the message carries a key.
func (m Message) Keyed() bool { return m.Magic() == MagicV1 && m[LengthSize+1]&AttrKeyed != 0 }

// KeyValue splits the payload into key and value: for an unkeyed message
// the key is nil and the value the whole payload. A key length that does
// not fit the payload is ErrCorrupt.
func (m Message) KeyValue() (key, value []byte, err error) {
	p := m.Payload()
	if !m.Keyed() {
		return nil, p, nil
	}
	if len(p) < keyLenSize {
		return nil, nil, fmt.Errorf("%w: keyed message of %d payload bytes has no key length", ErrCorrupt, len(p))
	}
	k := int64(int32(byteOrder.Uint32(p)))
	if k < 0 || k > int64(len(p)-keyLenSize) {
		return nil, nil, fmt.Errorf("%w: key length %d in a %d-byte payload", ErrCorrupt, k, len(p))
	}
	return p[keyLenSize : keyLenSize+k : keyLenSize+k], p[keyLenSize+k:], nil
}

// InnerCount is the number of messages inside wrapper m, Kafka 0.8 numbers
// each of them. It checks the wrapper as ValidateWholeDeep does, in pieces,
// without holding the inner set (checkwrapper.go).
func InnerCount(m Message) (int, error) {
	if m.Codec() == CodecNone {
		return 0, fmt.Errorf("%w: a %d-byte message without a codec", ErrNotWrapper, len(m))
	}
	return checkWrapperCount(m)
}

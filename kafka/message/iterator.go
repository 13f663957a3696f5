package message

import (
	"fmt"
	"hash/crc32"
)

// Iterator walks a message set without allocating. The zero value is an
// empty iterator; NewIterator or Reset gives it a set.
//
// Next stops cleanly at a partial tail: a fetch response may end in the
// middle of a message (docs/PROTOCOL.md §4), and the consumer keeps the whole messages
// and fetches again from NextOffset of the last one. Err is then nil and
// Remaining tells how many bytes were left over. Next stops with Err set on a
// structurally impossible message (bad magic, N too small,
// attribute bits other than the codec's, an unknown codec). It does not check
// CRCs: call Message().Valid(), or use Validate.
type Iterator struct {
	set  []byte
	base int64 // offset of set[0]
	pos  int   // start of the next message in set, and end of the current one
	cur  int   // start of the current message
	err  error
}

// NewIterator returns an iterator over set, whose first byte is at offset
// base in its partition.
func NewIterator(set []byte, base int64) Iterator {
	return Iterator{set: set, base: base}
}

// Reset points the iterator at a new set, reusing it.
func (it *Iterator) Reset(set []byte, base int64) {
	*it = Iterator{set: set, base: base}
}

// Next advances to the next whole message. It returns false at the end of the
// set, at a partial tail, or on a corrupt message (see Err).
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	rest := it.set[it.pos:]
	if len(rest) < LengthSize+1 {
		return false
	}
	size, err := checkHeader(rest, it.base+int64(it.pos))
	if err != nil {
		it.err = err
		return false
	}
	if size > len(rest) {
		return false // partial tail
	}
	it.cur = it.pos
	it.pos += size
	return true
}

// skipPlain moves the iterator over the run of messages plainPrefix takes
// (whole, uncompressed, CRC right) and returns how many it passed; the
// current message is then an empty one. The validating loops below call it
// before each Next, which then meets only the messages plainPrefix leaves
// to the full checks.
func (it *Iterator) skipPlain() int {
	if it.err != nil {
		return 0
	}
	n, count := plainPrefix(it.set[it.pos:], len(it.set))
	if count > 0 {
		it.pos += n
		it.cur = it.pos
	}
	return count
}

// PlainPrefix is the length of the longest prefix of set made of whole
// uncompressed messages (magic 0, or magic 1 with an attributes byte of 0)
// whose CRCs are right. It checks them in one tight loop, the CRC its only
// call, so that an iterator can then hand them out by their length fields
// alone (DeepIterator does); whatever stops it (a partial tail, a wrapper,
// a bad message) is left to the iterator's full checks.
func PlainPrefix(set []byte) int {
	n, _ := plainPrefix(set, len(set))
	return n
}

// plainPrefix is PlainPrefix that stops at the first message boundary at or
// past atLeast bytes, and also counts the messages.
func plainPrefix(set []byte, atLeast int) (n, count int) {
	pos := 0
	for pos < atLeast && len(set)-pos >= HeaderSizeV1 {
		rest := set[pos:]
		body := int(byteOrder.Uint32(rest)) // N: magic, (attributes,) CRC and payload
		hdr := HeaderSizeV0
		switch {
		case rest[LengthSize] == MagicV1 && rest[LengthSize+1] == 0 && body >= minBodyV1:
			hdr = HeaderSizeV1
		case rest[LengthSize] != MagicV0 || body < minBodyV0:
			return pos, count
		}
		end := LengthSize + body
		if end > len(rest) {
			return pos, count
		}
		if crc := byteOrder.Uint32(rest[hdr-4:]); crc32.ChecksumIEEE(rest[hdr:end]) != crc {
			return pos, count
		}
		pos += end
		count++
	}
	return pos, count
}

// Message is the current message; valid until the set's buffer is reused.
func (it *Iterator) Message() Message { return Message(it.set[it.cur:it.pos:it.pos]) }

// Offset is the offset of the current message.
func (it *Iterator) Offset() int64 { return it.base + int64(it.cur) }

// NextOffset is the offset just after the current message: Offset()+4+N.
func (it *Iterator) NextOffset() int64 { return it.base + int64(it.pos) }

// Err is the error that stopped Next, nil at a clean end or a partial tail.
func (it *Iterator) Err() error { return it.err }

// Consumed is the number of bytes of whole messages passed so far.
func (it *Iterator) Consumed() int { return it.pos }

// Remaining is the number of bytes after the last whole message returned.
func (it *Iterator) Remaining() int { return len(it.set) - it.pos }

// Validate checks every message of set, CRC included. valid is the number of
// bytes of whole good messages from the start of the set, count their number.
// A partial tail is not an error (valid then stops short of len(set)); a
// corrupt message or a CRC mismatch is, and valid stops before it.
func Validate(set []byte) (valid int, count int, err error) {
	it := NewIterator(set, 0)
	for count += it.skipPlain(); it.Next(); count += it.skipPlain() {
		if m := it.Message(); !m.Valid() {
			return it.cur, count, fmt.Errorf("%w at offset %d (stored %08x)", ErrChecksum, it.cur, m.Checksum())
		}
		count++
	}
	return it.Consumed(), count, it.Err()
}

// ValidateWhole is Validate for a set that must hold whole messages only, as a
// producer request does: a partial tail is ErrTruncated.
func ValidateWhole(set []byte) (count int, err error) {
	valid, count, err := Validate(set)
	if err != nil {
		return count, err
	}
	if valid != len(set) {
		return count, fmt.Errorf("%w: %d bytes left after %d whole messages (%d bytes)", ErrTruncated, len(set)-valid, count, valid)
	}
	return count, nil
}

// Framed is the length of the whole messages at the start of set, found by
// their length fields alone: no magic, attribute or CRC is looked at, so it
// costs one load per message. It is where a fetch that follows set must
// start (the consumer sends that fetch before it iterates set, §3.2's
// asynchronous pull); what set holds is checked by the Iterator that walks
// it. A length too small for any message ends the scan there.
func Framed(set []byte) int {
	pos := 0
	for len(set)-pos >= LengthSize {
		n := byteOrder.Uint32(set[pos:])
		if n < minBodyV0 || uint64(n) > uint64(len(set)-pos-LengthSize) {
			break
		}
		pos += LengthSize + int(n)
	}
	return pos
}

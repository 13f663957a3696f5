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
	pos  int   // start of the next message in set
	cur  int   // start of the current message
	end  int   // end of the current message
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
	it.end = it.pos + size
	it.pos = it.end
	return true
}

// nextPlain is Next for the message the consumer's loop meets nearly
// always, in one function with no further calls but the CRC's: a whole
// uncompressed message (magic 0, or magic 1 with an attributes byte of 0)
// whose CRC is right. It advances and reports true for such a message
// only; for anything else (a partial tail, a wrapper, a bad message) it
// leaves the iterator where it was and reports false, and Next and its
// callers' checks decide, as they would have without it.
func (it *Iterator) nextPlain() bool {
	rest := it.set[it.pos:]
	if it.err != nil || len(rest) < HeaderSizeV1 {
		return false
	}
	n := int(int32(byteOrder.Uint32(rest)))
	var hdr int
	switch {
	case rest[LengthSize] == MagicV1 && rest[LengthSize+1] == 0 && n >= minBodyV1:
		hdr = HeaderSizeV1
	case rest[LengthSize] == MagicV0 && n >= minBodyV0:
		hdr = HeaderSizeV0
	default:
		return false
	}
	end := LengthSize + n
	if end > len(rest) || crc32.ChecksumIEEE(rest[hdr:end]) != byteOrder.Uint32(rest[hdr-4:]) {
		return false
	}
	it.cur, it.end = it.pos, it.pos+end
	it.pos = it.end
	return true
}

// advance is Next for the validating loops: plain reports that nextPlain
// took the message (whole, uncompressed, CRC right), so nothing is left to
// check of it.
func (it *Iterator) advance() (ok, plain bool) {
	if it.nextPlain() {
		return true, true
	}
	return it.Next(), false
}

// Message is the current message; valid until the set's buffer is reused.
func (it *Iterator) Message() Message { return Message(it.set[it.cur:it.end:it.end]) }

// Offset is the offset of the current message.
func (it *Iterator) Offset() int64 { return it.base + int64(it.cur) }

// NextOffset is the offset just after the current message: Offset()+4+N.
func (it *Iterator) NextOffset() int64 { return it.base + int64(it.end) }

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
	for ok, plain := it.advance(); ok; ok, plain = it.advance() {
		if m := it.Message(); !plain && !m.Valid() {
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

package message

import (
	"fmt"
	"sync"
)

// Unpack appends the inner set of wrapper m to dst, checked as a reader
// needs it: the payload decodes within MaxDecompressedSize, the inner set is
// whole messages, none of them compressed, and every inner message's CRC
// matches its payload (§3.3). The wrapper's own CRC is the caller's to
// check, as for any message. On an error dst comes back as it was given.
//
// It is the one place a wrapper is opened to be read: DeepIterator (the
// consumers), ValidateWholeDeep (the broker's check of a produced set) and
// the log's recovery all call it. Decompress, which leaves inner CRCs alone,
// is for tools that show what a bad wrapper holds.
func Unpack(dst []byte, m Message) ([]byte, error) {
	return appendDecompressed(dst, m, true)
}

// DeepIterator walks a message set like Iterator and also unpacks compressed
// wrappers (with Unpack), yielding their inner messages. Offsets stay those
// of the log: an inner message reports its wrapper's offset, and its
// NextOffset is the wrapper's own start for every inner message but the
// last, which reports the offset after the wrapper. A consumer that commits
// in the middle of a wrapper therefore replays the whole wrapper:
// at-least-once (§3.3).
//
// It checks every CRC, of wrappers and of inner messages: a mismatch stops
// iteration with ErrChecksum, a wrapper that does not unpack with Unpack's
// error; SkipBad goes on after such a message. The wrapper's inner set is
// unpacked into a buffer the iterator keeps and reuses (Reset keeps it too),
// so an inner message is valid until Next unpacks the next wrapper, and once
// the buffer has grown no message costs an allocation. Uncompressed sets
// allocate nothing.
type DeepIterator struct {
	outer   Iterator
	plain   int      // outer.set[outer.pos:plain] is whole plain messages already checked (plainPrefix)
	inner   Iterator // over buf, while inIn
	buf     []byte   // the current wrapper's inner set
	inIn    bool     // iterating inside a wrapper
	last    bool     // the current inner message is its wrapper's last
	stopped bool     // the last Next reported false
	resume  int64    // then: the offset after the last message handed out
	err     error
}

// NewDeepIterator returns a deep iterator over set starting at offset base.
func NewDeepIterator(set []byte, base int64) DeepIterator {
	return DeepIterator{outer: NewIterator(set, base)}
}

// Reset points the iterator at a new set, keeping its unpacking buffer.
func (d *DeepIterator) Reset(set []byte, base int64) {
	*d = DeepIterator{outer: NewIterator(set, base), buf: d.buf[:0]}
}

// Next advances to the next message, descending into wrappers. It returns
// false at the end of the set, at a partial tail (Err nil), or on a bad
// message (Err set).
//
// The hot path is a run of uncompressed messages (the paper's magic 0, or
// 0.7's magic 1 with no codec): Next checks them ahead in one pass,
// plainChunk bytes at a time (PlainPrefix), and then hands them out by
// their length fields alone (NextChecked). Everything else (wrappers, bad
// messages, a partial tail) is next's and open's.
func (d *DeepIterator) Next() bool {
	return d.NextChecked() || d.next()
}

// NextChecked is Next's hot path alone, small enough for the compiler to
// inline into a caller's loop: it advances to the next message of a run
// already checked and reports true, or reports false, without moving,
// when Next must be called. `d.NextChecked() || d.Next()` is Next.
func (d *DeepIterator) NextChecked() bool {
	o := &d.outer
	if o.pos >= d.plain {
		return false
	}
	o.cur = o.pos
	o.pos += LengthSize + int(byteOrder.Uint32(o.set[o.pos:]))
	return true
}

// plainChunk is how far ahead next checks a run of plain messages: far
// enough to make the check one tight loop, near enough that a message's
// bytes are still in the core's cache when it is handed out.
const plainChunk = 16 << 10

// next is the rest of Next: the check of the run of plain messages ahead,
// and then the messages it does not take: inside a wrapper, after an
// error, at the end of the set, after an empty wrapper.
func (d *DeepIterator) next() bool {
	d.stopped = true
	for d.err == nil {
		if d.inIn {
			if d.inner.Next() { // Unpack checked the inner set whole, CRCs included
				d.last = d.inner.Remaining() == 0
				d.stopped = false
				return true
			}
			d.inIn = false
		}
		o := &d.outer
		if o.err == nil {
			n, _ := plainPrefix(o.set[o.pos:], plainChunk)
			d.plain = o.pos + n
			if d.NextChecked() {
				d.stopped = false
				return true
			}
		}
		d.resume = o.base + int64(o.pos)
		if !o.Next() {
			d.err = o.Err()
			return false
		}
		if d.open() {
			d.stopped = false
			return true
		}
	}
	return false
}

// open checks the current outer message and, if it is a wrapper, unpacks it
// and moves to its first inner message. It reports whether there is a
// message to yield: not on an error (d.err set), nor for an empty wrapper.
func (d *DeepIterator) open() bool {
	m := d.outer.Message()
	if !m.Valid() {
		d.err = fmt.Errorf("%w at offset %d (%d bytes, stored %08x)", ErrChecksum, d.outer.Offset(), len(m), m.Checksum())
		return false
	}
	if m.Codec() == CodecNone {
		return true
	}
	buf, err := Unpack(d.buf[:0], m)
	d.buf = buf
	if err != nil {
		d.err = fmt.Errorf("wrapper at offset %d: %w", d.outer.Offset(), err)
		return false
	}
	d.inner.Reset(d.buf, 0)
	if !d.inner.Next() {
		return false
	}
	d.inIn, d.last = true, d.inner.Remaining() == 0
	return true
}

// SkipBad clears the error of a bad message (a CRC mismatch, a wrapper that
// does not unpack), so that Next goes on with the message after it, and
// reports whether it could: a set whose framing is broken (Iterator's
// errors) has no next message to go on with.
func (d *DeepIterator) SkipBad() bool {
	if d.outer.Err() != nil {
		return false
	}
	d.err = nil
	return true
}

// Message is the current (inner or plain) message.
func (d *DeepIterator) Message() Message {
	if d.inIn {
		return d.inner.Message()
	}
	return d.outer.Message()
}

// Offset is the log offset of the current message (its wrapper's, if inside one).
func (d *DeepIterator) Offset() int64 { return d.outer.Offset() }

// NextOffset is where to resume after the current message (see type doc).
func (d *DeepIterator) NextOffset() int64 {
	if d.inIn && !d.last {
		return d.outer.Offset()
	}
	return d.outer.NextOffset()
}

// Resume is where reading resumes after the messages Next has handed out:
// after a Next that reported true, NextOffset; after one that reported
// false, the offset just after the last message handed out, which at a bad
// message is that message's own, so that nothing is passed over unseen.
func (d *DeepIterator) Resume() int64 {
	if d.stopped {
		return d.resume
	}
	return d.NextOffset()
}

// Err is the error that stopped Next.
func (d *DeepIterator) Err() error { return d.err }

// Consumed is the number of bytes of whole outer messages passed so far.
func (d *DeepIterator) Consumed() int { return d.outer.Consumed() }

// ValidateWholeDeep is ValidateWhole for a set a producer sent (the broker's
// check before appending it, §3.3): also every compressed wrapper must
// Unpack, so the log never stores a wrapper its consumers, and its own
// recovery, would refuse. count is the number of outer messages. A set
// without wrappers costs what ValidateWhole costs and allocates nothing;
// a wrapper is checked as it is inflated, in pieces (checkwrapper.go).
func ValidateWholeDeep(set []byte) (count int, err error) {
	return ValidateWholeDeepInto(set, nil)
}

// ValidateWholeDeepInto is ValidateWholeDeep that also appends to *inner,
// when inner is not nil, the number of messages inside each wrapper, in
// order (the log numbers them, log/index.go); a set without wrappers leaves
// it as it was.
func ValidateWholeDeepInto(set []byte, inner *[]int) (count int, err error) {
	it := NewIterator(set, 0)
	for count += it.skipPlain(); it.Next(); count += it.skipPlain() {
		// What skipPlain left: a wrapper, a bad message, or an empty one.
		n, err := validateOther(it.Message(), it.cur)
		if err != nil {
			return count, err
		}
		if inner != nil && it.Message().Codec() != CodecNone {
			*inner = append(*inner, n)
		}
		count++
	}
	if err := it.Err(); err != nil {
		return count, err
	}
	if it.Remaining() != 0 {
		return count, fmt.Errorf("%w: %d bytes left after %d whole messages (%d bytes)", ErrTruncated, it.Remaining(), count, it.Consumed())
	}
	return count, nil
}

// validateOther is ValidateWholeDeep's check of a message at offset that
// skipPlain left to it (a wrapper, a bad message, an empty magic-0 one): its
// CRC, a keyed message's key length, and if it is a wrapper,
// checkWrapperCount (which checks what Unpack would, without holding the
// inner set, and returns how many messages it holds; 0 for a plain message).
func validateOther(m Message, offset int) (int, error) {
	if !m.Valid() {
		return 0, fmt.Errorf("%w at offset %d (stored %08x)", ErrChecksum, offset, m.Checksum())
	}
	if m.Codec() == CodecNone {
		if _, _, err := m.KeyValue(); err != nil {
			return 0, fmt.Errorf("message at offset %d: %w", offset, err)
		}
		return 0, nil
	}
	n, err := checkWrapperCount(m)
	if err != nil {
		return 0, fmt.Errorf("wrapper at offset %d: %w", offset, err)
	}
	return n, nil
}

// maxPooledBuffer: a buffer that grew past 4 MiB (a wrapper of far more
// than a batch of ordinary messages) is left to the collector, not kept.
const maxPooledBuffer = 4 << 20

var unpackBuffers = sync.Pool{New: func() any { return new([]byte) }}

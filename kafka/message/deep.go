package message

import "fmt"

// DeepIterator walks a message set like Iterator and also unpacks compressed
// wrappers, yielding their inner messages. Offsets stay those of the log: an
// inner message reports its wrapper's offset, and its NextOffset is the
// wrapper's own start for every inner message but the last, which reports the
// offset after the wrapper. A consumer that commits in the middle of a
// wrapper therefore replays the whole wrapper: at-least-once (§3.3).
//
// It checks every CRC, of wrappers and of inner messages: a mismatch stops
// iteration with ErrChecksum. Uncompressed sets allocate nothing.
type DeepIterator struct {
	outer Iterator
	inner Iterator
	inIn  bool  // iterating inside a wrapper
	wOff  int64 // wrapper offset
	wNext int64 // offset after the wrapper
	last  bool  // current inner message is the wrapper's last
	err   error
}

// NewDeepIterator returns a deep iterator over set starting at offset base.
func NewDeepIterator(set []byte, base int64) DeepIterator {
	return DeepIterator{outer: NewIterator(set, base)}
}

// Next advances to the next message, descending into wrappers.
func (d *DeepIterator) Next() bool {
	if d.err != nil {
		return false
	}
	for {
		if d.inIn {
			if d.inner.Next() {
				if m := d.inner.Message(); !m.Valid() {
					d.err = fmt.Errorf("%w inside wrapper at offset %d", ErrChecksum, d.wOff)
					return false
				}
				d.last = d.inner.Remaining() == 0
				return true
			}
			if err := d.inner.Err(); err != nil {
				d.err = fmt.Errorf("inside wrapper at offset %d: %w", d.wOff, err)
				return false
			}
			if d.inner.Remaining() != 0 {
				d.err = fmt.Errorf("%w: wrapper at offset %d ends in a partial message", ErrTruncated, d.wOff)
				return false
			}
			d.inIn = false
		}
		if !d.outer.Next() {
			d.err = d.outer.Err()
			return false
		}
		m := d.outer.Message()
		if !m.Valid() {
			d.err = fmt.Errorf("%w at offset %d", ErrChecksum, d.outer.Offset())
			return false
		}
		if m.Codec() == CodecNone {
			return true
		}
		inner, err := Decompress(m)
		if err != nil {
			d.err = fmt.Errorf("wrapper at offset %d: %w", d.outer.Offset(), err)
			return false
		}
		d.wOff, d.wNext = d.outer.Offset(), d.outer.NextOffset()
		d.inner.Reset(inner, 0)
		d.inIn = true
	}
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
		return d.wOff
	}
	return d.outer.NextOffset()
}

// Err is the error that stopped Next.
func (d *DeepIterator) Err() error { return d.err }

// Consumed is the number of bytes of whole outer messages passed so far.
func (d *DeepIterator) Consumed() int { return d.outer.Consumed() }

package stream

import (
	"encoding/binary"
	"fmt"
)

// The checkpoint's building blocks: varints (encoding/binary's) and length-prefixed byte strings.

func appendBytes(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decoder reads what the append functions wrote; the first problem sticks in err and every later read
// returns zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: %s with %d bytes left", ErrBadCheckpoint, what, len(d.b))
	}
	d.b = nil
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail("a truncated number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("a truncated number")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a count and checks it against limit (and against the bytes left, each item taking at least
// one), so a corrupt count cannot make a huge allocation.
func (d *decoder) count(limit int) int {
	v := d.uvarint()
	if v > uint64(limit) || v > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("a count of %d", v))
		return 0
	}
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.fail(fmt.Sprintf("a %d-byte string", n))
		return nil
	}
	s := d.b[:n:n]
	d.b = d.b[n:]
	return s
}

func (d *decoder) end() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes after the end", ErrBadCheckpoint, len(d.b))
	}
	return d.err
}

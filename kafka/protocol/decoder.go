package protocol

import (
	"encoding/binary"
	"fmt"
)

// Decoder parses request bodies like the DecodeXxx functions but reuses memory
// across calls, which is what a broker connection wants at 150,000 requests
// per second: topic names are interned (the same few topics arrive over and
// over, so after the first request no string is allocated) and the slices of
// MULTIFETCH and MULTIPRODUCE requests are reused.
//
// What a Decoder returns is valid only until its next call. A Decoder is not
// safe for concurrent use; use one per connection. The zero value is ready,
// and a nil *Decoder works too (it allocates every time): that is what the
// DecodeXxx functions use.
type Decoder struct {
	topics   map[string]string
	last     string // the topic returned last, checked before the map
	fetches  []FetchRequest
	produces []ProduceRequest
}

// Forget drops what the Decoder still references of the last body it
// parsed (a MULTIPRODUCE's message sets alias the body), so that the
// body's buffer can be reused by someone else or freed.
func (d *Decoder) Forget() {
	clear(d.produces[:cap(d.produces)])
}

// maxInterned bounds the intern table so a client cycling through random
// topic names cannot grow a connection's memory without limit.
const maxInterned = 1024

func (d *Decoder) topic(b []byte) string {
	if d == nil {
		return string(b)
	}
	if string(b) == d.last { // a producer's requests name one topic over and over: no hash
		return d.last
	}
	if s, ok := d.topics[string(b)]; ok { // no allocation: the compiler special-cases m[string(b)]
		d.last = s
		return s
	}
	s := string(b)
	if d.topics == nil {
		d.topics = make(map[string]string)
	}
	if len(d.topics) < maxInterned {
		d.topics[s] = s
		d.last = s
	}
	return s
}

// reader is a bounds-checked cursor over a request body. The first failure
// sticks in err; later reads return zero values, so decoding code can read a
// whole structure and check err once.
type reader struct {
	b    []byte
	off  int
	kind string // request name, for error messages
	err  error
}

func (r *reader) fail(what string, v int64) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s %d at byte %d of a %d-byte body",
			ErrMalformed, r.kind, what, v, r.off, len(r.b))
	}
}

func (r *reader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if len(r.b)-r.off < n {
		r.fail(what+" truncated, bytes needed", int64(n))
		return false
	}
	return true
}

func (r *reader) int16(what string) int16 {
	if !r.need(2, what) {
		return 0
	}
	v := int16(binary.BigEndian.Uint16(r.b[r.off:]))
	r.off += 2
	return v
}

func (r *reader) int32(what string) int32 {
	if !r.need(4, what) {
		return 0
	}
	v := int32(binary.BigEndian.Uint32(r.b[r.off:]))
	r.off += 4
	return v
}

func (r *reader) int64(what string) int64 {
	if !r.need(8, what) {
		return 0
	}
	v := int64(binary.BigEndian.Uint64(r.b[r.off:]))
	r.off += 8
	return v
}

// bytes returns the next n bytes as a sub-slice (capacity clipped, so an
// append by the caller cannot overwrite what follows).
func (r *reader) bytes(n int, what string) []byte {
	if !r.need(n, what) {
		return nil
	}
	v := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return v
}

// topic reads an int16-length string and interns it through d.
func (r *reader) topic(d *Decoder) string {
	n := r.int16("topic length")
	if r.err != nil {
		return ""
	}
	if n < 0 {
		r.fail("negative topic length", int64(n))
		return ""
	}
	b := r.bytes(int(n), "topic")
	if r.err != nil {
		return ""
	}
	return d.topic(b)
}

// count reads an int16 element count and checks it is non-negative and that
// the rest of the body could hold that many elements of at least minSize
// bytes, before anything is allocated for them.
func (r *reader) count(minSize int) int {
	n := r.int16("count")
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.fail("negative count", int64(n))
		return 0
	}
	if int(n)*minSize > len(r.b)-r.off {
		r.fail("count larger than the body can hold", int64(n))
		return 0
	}
	return int(n)
}

// end rejects trailing bytes.
func (r *reader) end() error {
	if r.err == nil && r.off != len(r.b) {
		r.fail("trailing bytes after the request", int64(len(r.b)-r.off))
	}
	return r.err
}

// str reads an int16-length string without interning (host names and the
// like, which are rare).
func (r *reader) str(what string) string {
	n := r.int16(what + " length")
	if r.err != nil {
		return ""
	}
	if n < 0 {
		r.fail("negative "+what+" length", int64(n))
		return ""
	}
	return string(r.bytes(int(n), what))
}

// int32s reads an int16 count followed by that many int32s (a replica list).
func (r *reader) int32s(what string) []int32 {
	n := r.count(4)
	if r.err != nil {
		return nil
	}
	out := make([]int32, n)
	for i := range out {
		out[i] = r.int32(what)
	}
	return out
}

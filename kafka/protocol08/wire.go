package protocol08

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrMalformed wraps every decoding error: a request that does not parse as
// its api_key and api_version say.
var ErrMalformed = errors.New("protocol08: malformed request")

// reader is a bounds-checked cursor; the first failure sticks in err and
// later reads return zero values.
type reader struct {
	b    []byte
	off  int
	kind string
	err  error
}

func (r *reader) fail(what string, v int64) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s %d at byte %d of %d", ErrMalformed, r.kind, what, v, r.off, len(r.b))
	}
}

func (r *reader) need(n int, what string) bool {
	if r.err != nil {
		return false
	}
	if n < 0 || len(r.b)-r.off < n {
		r.fail(what+" truncated, bytes needed", int64(n))
		return false
	}
	return true
}

func (r *reader) int8(what string) int8 {
	if !r.need(1, what) {
		return 0
	}
	r.off++
	return int8(r.b[r.off-1])
}

func (r *reader) int16(what string) int16 {
	if !r.need(2, what) {
		return 0
	}
	r.off += 2
	return int16(binary.BigEndian.Uint16(r.b[r.off-2:]))
}

func (r *reader) int32(what string) int32 {
	if !r.need(4, what) {
		return 0
	}
	r.off += 4
	return int32(binary.BigEndian.Uint32(r.b[r.off-4:]))
}

// length reads the int32 or int16 (size 4 or 2) length of field what; the
// name is put together only if it fails, so a hot loop builds no strings.
func (r *reader) length(what string, size int) int64 {
	if r.err != nil {
		return 0
	}
	if len(r.b)-r.off < size {
		r.fail(what+" length truncated, bytes needed", int64(size))
		return 0
	}
	r.off += size
	if size == 2 {
		return int64(int16(binary.BigEndian.Uint16(r.b[r.off-2:])))
	}
	return int64(int32(binary.BigEndian.Uint32(r.b[r.off-4:])))
}

func (r *reader) int64(what string) int64 {
	if !r.need(8, what) {
		return 0
	}
	r.off += 8
	return int64(binary.BigEndian.Uint64(r.b[r.off-8:]))
}

// nullableString reads a string that may be null (length -1); null is
// returned as "" with null set.
func (r *reader) nullableString(what string) (s string, null bool) {
	n := r.length(what, 2)
	if r.err != nil {
		return "", false
	}
	if n == -1 {
		return "", true
	}
	if n < 0 {
		r.fail("negative "+what+" length", int64(n))
		return "", false
	}
	if !r.need(int(n), what) {
		return "", false
	}
	r.off += int(n)
	return string(r.b[r.off-int(n) : r.off]), false
}

// string reads a string that must not be null.
func (r *reader) string(what string) string {
	s, null := r.nullableString(what)
	if null {
		r.fail("null "+what+", length", -1)
	}
	return s
}

// bytes reads int32-length bytes as a sub-slice; -1 is nil.
func (r *reader) bytes(what string) []byte {
	n := r.length(what, 4)
	if r.err != nil || n == -1 {
		return nil
	}
	if n < 0 {
		r.fail("negative "+what+" length", int64(n))
		return nil
	}
	if !r.need(int(n), what) {
		return nil
	}
	r.off += int(n)
	return r.b[r.off-int(n) : r.off : r.off]
}

// count reads an int32 array count and checks that the rest of the body can
// hold that many items of at least minSize bytes, before anything is
// allocated for them.
func (r *reader) count(what string, minSize int) int {
	n := r.length(what+" count", 4)
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.fail("negative "+what+" count", int64(n))
		return 0
	}
	if int64(n)*int64(minSize) > int64(len(r.b)-r.off) {
		r.fail(what+" count larger than the body can hold", int64(n))
		return 0
	}
	return int(n)
}

// end refuses trailing bytes.
func (r *reader) end() error {
	if r.err == nil && r.off != len(r.b) {
		r.fail("trailing bytes", int64(len(r.b)-r.off))
	}
	return r.err
}

func appendInt16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func appendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func appendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

func appendString(b []byte, s string) []byte {
	b = appendInt16(b, int16(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, p []byte) []byte {
	if p == nil {
		return appendInt32(b, -1)
	}
	b = appendInt32(b, int32(len(p)))
	return append(b, p...)
}

// beginResponse starts a response: a size to be filled in by endResponse,
// and the correlation id.
func beginResponse(dst []byte, correlationID int32) ([]byte, int) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	return appendInt32(dst, correlationID), start
}

// endResponse writes the size of the response begun at start.
func endResponse(dst []byte, start int) []byte {
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// beginRequest starts a request (for clients and tests).
func beginRequest(dst []byte, h Header) ([]byte, int) {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = appendInt16(dst, h.APIKey)
	dst = appendInt16(dst, h.APIVersion)
	dst = appendInt32(dst, h.CorrelationID)
	if h.ClientIDNull {
		dst = appendInt16(dst, -1)
	} else {
		dst = appendString(dst, h.ClientID)
	}
	return dst, start
}

package protocol

import (
	"encoding/binary"
	"fmt"
)

// MultiFetchRequest (id 2) is several FETCHes in one request, which is how a
// consumer pulls all the partitions it owns on one broker at once (docs/PROTOCOL.md §6):
//
//	int16 count | count FETCH bodies
//
// The response is a header with error 0 whose payload is, per fetch in order,
// a response of its own: int32 size, int16 error, bytes. The broker writes
// each part's header with AppendResponseHeader; clients walk the payload with
// DecodeMultiFetchResponse.
type MultiFetchRequest struct {
	Fetches []FetchRequest
}

// RequestID returns RequestMultiFetch.
func (m MultiFetchRequest) RequestID() int16 { return RequestMultiFetch }

// AppendTo appends the framed request to dst.
func (m MultiFetchRequest) AppendTo(dst []byte) []byte {
	size := 2
	for i := range m.Fetches {
		size += m.Fetches[i].bodySize()
	}
	dst = appendRequestHeader(dst, RequestMultiFetch, size)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(m.Fetches)))
	for i := range m.Fetches {
		dst = m.Fetches[i].appendBody(dst)
	}
	return dst
}

// MultiFetch parses a MULTIFETCH body reusing d's memory: the returned Fetches
// slice is overwritten by d's next MultiFetch call.
func (d *Decoder) MultiFetch(body []byte) (MultiFetchRequest, error) {
	r := reader{b: body, kind: "MULTIFETCH"}
	fetches := d.readFetches(&r)
	if err := r.end(); err != nil {
		return MultiFetchRequest{}, err
	}
	return MultiFetchRequest{Fetches: fetches}, nil
}

// readFetches reads an int16 count and that many FETCH bodies, into d's
// reused slice (a nil d allocates one).
func (d *Decoder) readFetches(r *reader) []FetchRequest {
	n := r.count(fetchMinBody)
	if r.err != nil {
		return nil
	}
	var fetches []FetchRequest
	if d != nil {
		fetches = d.fetches[:0]
	} else {
		fetches = make([]FetchRequest, 0, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		fetches = append(fetches, readFetch(r, d))
	}
	if d != nil {
		d.fetches = fetches
	}
	return fetches
}

// DecodeMultiFetchResponse walks the payload of a MULTIFETCH response (what
// follows the outer error code) and calls fn for each part in order with its
// index, error code and message-set bytes (a sub-slice of payload). An error
// from fn stops the walk and is returned.
func DecodeMultiFetchResponse(payload []byte, fn func(i int, code ErrorCode, set []byte) error) error {
	for i, off := 0, 0; off < len(payload); i++ {
		if len(payload)-off < ResponseHeaderSize {
			return fmt.Errorf("%w: MULTIFETCH response part %d: header truncated at byte %d of %d",
				ErrMalformed, i, off, len(payload))
		}
		size := int64(int32(binary.BigEndian.Uint32(payload[off:])))
		if size < 2 || size-2 > int64(len(payload)-off-ResponseHeaderSize) {
			return fmt.Errorf("%w: MULTIFETCH response part %d: size field %d at byte %d of %d",
				ErrMalformed, i, size, off, len(payload))
		}
		code := ErrorCode(int16(binary.BigEndian.Uint16(payload[off+4:])))
		start := off + ResponseHeaderSize
		end := start + int(size-2)
		if err := fn(i, code, payload[start:end:end]); err != nil {
			return err
		}
		off = end
	}
	return nil
}

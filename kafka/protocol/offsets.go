package protocol

import (
	"encoding/binary"
	"fmt"
)

// Special times of an OFFSETS request.
const (
	OffsetsLatest   int64 = -1 // the flushed end of the log
	OffsetsEarliest int64 = -2 // the start of the oldest segment
)

// OffsetsRequest (id 4) asks for the offsets at which segments start, before
// a given time (§3.1 "stateless broker": a consumer may rewind to any of
// them):
//
//	topic | int32 partition | int64 time | int32 maxNumOffsets
//
// Time is OffsetsLatest, OffsetsEarliest or milliseconds since the epoch. The
// response payload is int32 count then count int64 offsets, descending.
type OffsetsRequest struct {
	Topic         string
	Partition     int32
	Time          int64
	MaxNumOffsets int32
}

const offsetsMinBody = 2 + 4 + 8 + 4

// RequestID returns RequestOffsets.
func (o OffsetsRequest) RequestID() int16 { return RequestOffsets }

// AppendTo appends the framed request to dst.
func (o OffsetsRequest) AppendTo(dst []byte) []byte {
	dst = appendRequestHeader(dst, RequestOffsets, offsetsMinBody+len(o.Topic))
	dst = appendString(dst, o.Topic)
	dst = binary.BigEndian.AppendUint32(dst, uint32(o.Partition))
	dst = binary.BigEndian.AppendUint64(dst, uint64(o.Time))
	return binary.BigEndian.AppendUint32(dst, uint32(o.MaxNumOffsets))
}

// Offsets parses an OFFSETS body, interning topic names (a nil d interns nothing).
func (d *Decoder) Offsets(body []byte) (OffsetsRequest, error) {
	r := reader{b: body, kind: "OFFSETS"}
	var o OffsetsRequest
	o.Topic = r.topic(d)
	o.Partition = r.int32("partition")
	o.Time = r.int64("time")
	o.MaxNumOffsets = r.int32("max number of offsets")
	if err := r.end(); err != nil {
		return OffsetsRequest{}, err
	}
	return o, nil
}

// AppendOffsetsResponse appends a whole OFFSETS response: header, count and
// the offsets (which the caller has sorted in descending order).
func AppendOffsetsResponse(dst []byte, code ErrorCode, offsets []int64) []byte {
	dst = AppendResponseHeader(dst, 4+8*len(offsets), code)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(offsets)))
	for _, o := range offsets {
		dst = binary.BigEndian.AppendUint64(dst, uint64(o))
	}
	return dst
}

// DecodeOffsetsResponse parses the payload of an OFFSETS response (what
// follows the error code). An error response may carry an empty payload,
// which decodes as no offsets.
func DecodeOffsetsResponse(payload []byte) ([]int64, error) {
	if len(payload) == 0 {
		return nil, nil
	}
	if len(payload) < 4 {
		return nil, fmt.Errorf("%w: OFFSETS response of %d bytes has no count", ErrMalformed, len(payload))
	}
	n := int64(int32(binary.BigEndian.Uint32(payload)))
	if n < 0 || 4+8*n != int64(len(payload)) {
		return nil, fmt.Errorf("%w: OFFSETS response count %d does not match its %d bytes", ErrMalformed, n, len(payload))
	}
	offsets := make([]int64, n)
	for i := range offsets {
		offsets[i] = int64(binary.BigEndian.Uint64(payload[4+8*i:]))
	}
	return offsets, nil
}

package protocol

import "encoding/binary"

// Values of request.required.acks (docs/PROTOCOL.md §10).
const (
	AcksNone   int16 = 0  // no answer, as 0.7's PRODUCE
	AcksLeader int16 = 1  // answered once the leader has appended the set
	AcksAll    int16 = -1 // answered once every in-sync replica has it (committed)
)

// AckedProduceRequest (id 5) is MULTIPRODUCE with an acknowledgement: the
// paper's §6 synchronous and asynchronous replication models as a producer
// chooses them per request.
//
//	int16 acks | int32 timeout ms | int16 count | count PRODUCE bodies
//
// With Acks 0 nothing is answered. Otherwise the answer is the response
// header (error 0) and
//
//	int16 count | count × (topic | int32 partition | int16 error | int64 offset)
//
// one entry per body in request order, offset being where the set's first
// message went (-1 on error). Timeout bounds how long the broker waits for
// the followers when Acks is -1 (RequestTimedOut after it).
type AckedProduceRequest struct {
	Acks      int16
	TimeoutMs int32
	Produces  []ProduceRequest
}

const ackedProduceMinBody = 2 + 4 + 2

// RequestID returns RequestAckedProduce.
func (a AckedProduceRequest) RequestID() int16 { return RequestAckedProduce }

// AppendTo appends the framed request to dst. It allocates only if dst must
// grow.
func (a AckedProduceRequest) AppendTo(dst []byte) []byte {
	size := ackedProduceMinBody
	for i := range a.Produces {
		size += a.Produces[i].bodySize()
	}
	dst = appendRequestHeader(dst, RequestAckedProduce, size)
	dst = binary.BigEndian.AppendUint16(dst, uint16(a.Acks))
	dst = binary.BigEndian.AppendUint32(dst, uint32(a.TimeoutMs))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(a.Produces)))
	for i := range a.Produces {
		dst = a.Produces[i].appendBody(dst)
	}
	return dst
}

// AckedProduce decodes an ACKED_PRODUCE body reusing d's memory (as
// MultiProduce); a nil d allocates. Message sets are sub-slices of body.
func (d *Decoder) AckedProduce(body []byte) (AckedProduceRequest, error) {
	r := reader{b: body, kind: "ACKED_PRODUCE"}
	a := AckedProduceRequest{Acks: r.int16("acks"), TimeoutMs: r.int32("timeout")}
	if r.err == nil && a.Acks != AcksNone && a.Acks != AcksLeader && a.Acks != AcksAll {
		r.fail("acks must be 0, 1 or -1, got", int64(a.Acks))
	}
	a.Produces = d.readProduces(&r)
	if err := r.end(); err != nil {
		return AckedProduceRequest{}, err
	}
	return a, nil
}

// ProduceResult is one partition's answer to an ACKED_PRODUCE.
type ProduceResult struct {
	Topic     string
	Partition int32
	Error     ErrorCode
	Offset    int64 // the first message's offset, -1 on error
}

// AppendAckedProduceResponse appends the whole answer: header and results.
func AppendAckedProduceResponse(dst []byte, results []ProduceResult) []byte {
	size := 2
	for i := range results {
		size += 2 + len(results[i].Topic) + 4 + 2 + 8
	}
	dst = AppendResponseHeader(dst, size, ErrNone)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(results)))
	for _, res := range results {
		dst = appendString(dst, res.Topic)
		dst = binary.BigEndian.AppendUint32(dst, uint32(res.Partition))
		dst = binary.BigEndian.AppendUint16(dst, uint16(res.Error))
		dst = binary.BigEndian.AppendUint64(dst, uint64(res.Offset))
	}
	return dst
}

// DecodeAckedProduceResponse parses the payload of an ACKED_PRODUCE answer,
// appending the results to dst (which may be nil) to reuse its memory.
func DecodeAckedProduceResponse(dst []ProduceResult, payload []byte) ([]ProduceResult, error) {
	r := reader{b: payload, kind: "ACKED_PRODUCE response"}
	n := r.count(2 + 4 + 2 + 8)
	for i := 0; i < n && r.err == nil; i++ {
		var res ProduceResult
		res.Topic = r.topic(nil)
		res.Partition = r.int32("partition")
		res.Error = ErrorCode(r.int16("error"))
		res.Offset = r.int64("offset")
		dst = append(dst, res)
	}
	if err := r.end(); err != nil {
		return dst, err
	}
	return dst, nil
}

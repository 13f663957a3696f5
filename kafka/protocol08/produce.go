package protocol08

import (
	"encoding/binary"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// Produce v0:
//
//	int16 acks | int32 timeout_ms | [string topic | [int32 partition | int32 set_size | message set]]
//
// acks 0 is not answered; 1 is answered once the leader has the set; -1 once
// every in-sync replica has it or timeout_ms passed. The answer:
//
//	[string topic | [int32 partition | int16 error | int64 offset]]
//
// where offset is the logical offset of the first message appended.

// ProduceRequest is a decoded Produce v0.
type ProduceRequest struct {
	Acks      int16
	TimeoutMs int32
	Parts     []ProducePart
}

// ProducePart is one partition's message set (0.8's layout, messageset.go).
type ProducePart struct {
	Topic     string
	Partition int32
	Set       []byte
}

// DecodeProduce parses a Produce v0 body; the sets are sub-slices of body.
func DecodeProduce(body []byte) (ProduceRequest, error) {
	r := reader{b: body, kind: "Produce"}
	p := ProduceRequest{Acks: r.int16("acks"), TimeoutMs: r.int32("timeout_ms")}
	nt := r.count("topic", 2+4)
	for i := 0; i < nt && r.err == nil; i++ {
		topic := r.string("topic")
		np := r.count("partition", 4+4)
		for j := 0; j < np && r.err == nil; j++ {
			part := ProducePart{Topic: topic, Partition: r.int32("partition")}
			part.Set = r.bytes("message set")
			if part.Set == nil && r.err == nil {
				r.fail("null message set, length", -1)
			}
			p.Parts = append(p.Parts, part)
		}
	}
	return p, r.end()
}

// ProduceResult is one partition's answer.
type ProduceResult struct {
	Topic     string
	Partition int32
	Error     protocol.ErrorCode
	Offset    int64
}

// AppendProduceResponse appends a Produce v0 answer; results of one topic
// must be adjacent (they are grouped under it in request order).
func AppendProduceResponse(dst []byte, correlationID int32, results []ProduceResult) []byte {
	dst, start := beginResponse(dst, correlationID)
	dst = groupByTopic(dst, len(results), func(i int) string { return results[i].Topic }, func(dst []byte, i int) []byte {
		r := results[i]
		dst = appendInt32(dst, r.Partition)
		dst = appendInt16(dst, int16(r.Error))
		return appendInt64(dst, r.Offset)
	})
	return endResponse(dst, start)
}

// groupByTopic appends [string topic | [item]] for n items in order, a new
// topic group wherever the topic changes.
func groupByTopic(dst []byte, n int, topic func(int) string, item func([]byte, int) []byte) []byte {
	countAt := len(dst)
	dst = appendInt32(dst, 0)
	topics := int32(0)
	for i := 0; i < n; {
		t := topic(i)
		dst = appendString(dst, t)
		partsAt := len(dst)
		dst = appendInt32(dst, 0)
		parts := int32(0)
		for ; i < n && topic(i) == t; i++ {
			dst = item(dst, i)
			parts++
		}
		binary.BigEndian.PutUint32(dst[partsAt:], uint32(parts))
		topics++
	}
	binary.BigEndian.PutUint32(dst[countAt:], uint32(topics))
	return dst
}

func errCode(v int16) protocol.ErrorCode { return protocol.ErrorCode(v) }

package protocol08

import "github.com/kafkarepro/kafkarepro/kafka/protocol"

// Offsets v0 (later called ListOffsets):
//
//	int32 replica_id | [string topic | [int32 partition | int64 time | int32 max_offsets]]
//
// time -1 asks for the latest offset (the next message's), -2 for the
// earliest, any other for segment starts at or before that time in ms. The
// answer:
//
//	[string topic | [int32 partition | int16 error | [int64 offset]]]

// Times with a meaning of their own.
const (
	Latest   int64 = -1
	Earliest int64 = -2
)

// OffsetsRequest is a decoded Offsets v0.
type OffsetsRequest struct {
	ReplicaID int32
	Parts     []OffsetsPart
}

// OffsetsPart is one partition asked for.
type OffsetsPart struct {
	Topic      string
	Partition  int32
	Time       int64
	MaxOffsets int32
}

// DecodeOffsets parses an Offsets v0 body.
func DecodeOffsets(body []byte) (OffsetsRequest, error) {
	r := reader{b: body, kind: "Offsets"}
	o := OffsetsRequest{ReplicaID: r.int32("replica_id")}
	nt := r.count("topic", 2+4)
	for i := 0; i < nt && r.err == nil; i++ {
		topic := r.string("topic")
		np := r.count("partition", 4+8+4)
		for j := 0; j < np && r.err == nil; j++ {
			o.Parts = append(o.Parts, OffsetsPart{Topic: topic, Partition: r.int32("partition"),
				Time: r.int64("time"), MaxOffsets: r.int32("max_offsets")})
		}
	}
	return o, r.end()
}

// OffsetsResult is one partition's answer.
type OffsetsResult struct {
	Topic     string
	Partition int32
	Error     protocol.ErrorCode
	Offsets   []int64
}

// AppendOffsetsResponse appends an Offsets v0 answer (results of one topic adjacent).
func AppendOffsetsResponse(dst []byte, correlationID int32, results []OffsetsResult) []byte {
	dst, start := beginResponse(dst, correlationID)
	dst = groupByTopic(dst, len(results), func(i int) string { return results[i].Topic }, func(dst []byte, i int) []byte {
		r := results[i]
		dst = appendInt32(dst, r.Partition)
		dst = appendInt16(dst, int16(r.Error))
		dst = appendInt32(dst, int32(len(r.Offsets)))
		for _, o := range r.Offsets {
			dst = appendInt64(dst, o)
		}
		return dst
	})
	return endResponse(dst, start)
}

package protocol08

import "github.com/kafkarepro/kafkarepro/kafka/protocol"

// Fetch v0:
//
//	int32 replica_id | int32 max_wait_ms | int32 min_bytes |
//	[string topic | [int32 partition | int64 offset | int32 max_bytes]]
//
// replica_id is -1 for a client. The broker answers once min_bytes are there
// to send, or max_wait_ms passed:
//
//	[string topic | [int32 partition | int16 error | int64 high_watermark | int32 set_size | message set]]
//
// offset and high_watermark are logical offsets.

// FetchRequest is a decoded Fetch v0.
type FetchRequest struct {
	ReplicaID int32
	MaxWaitMs int32
	MinBytes  int32
	Parts     []FetchPart
}

// FetchPart is one partition asked for.
type FetchPart struct {
	Topic     string
	Partition int32
	Offset    int64
	MaxBytes  int32
}

// DecodeFetch parses a Fetch v0 body.
func DecodeFetch(body []byte) (FetchRequest, error) {
	r := reader{b: body, kind: "Fetch"}
	f := FetchRequest{ReplicaID: r.int32("replica_id"), MaxWaitMs: r.int32("max_wait_ms"), MinBytes: r.int32("min_bytes")}
	nt := r.count("topic", 2+4)
	for i := 0; i < nt && r.err == nil; i++ {
		topic := r.string("topic")
		np := r.count("partition", 4+8+4)
		for j := 0; j < np && r.err == nil; j++ {
			f.Parts = append(f.Parts, FetchPart{Topic: topic, Partition: r.int32("partition"),
				Offset: r.int64("offset"), MaxBytes: r.int32("max_bytes")})
		}
	}
	return f, r.end()
}

// FetchResult is one partition's answer; Set is a 0.8 message set.
type FetchResult struct {
	Topic         string
	Partition     int32
	Error         protocol.ErrorCode
	HighWatermark int64
	Set           []byte
}

// AppendFetchResponse appends a Fetch v0 answer (results of one topic adjacent).
func AppendFetchResponse(dst []byte, correlationID int32, results []FetchResult) []byte {
	dst, start := beginResponse(dst, correlationID)
	dst = groupByTopic(dst, len(results), func(i int) string { return results[i].Topic }, func(dst []byte, i int) []byte {
		r := results[i]
		dst = appendInt32(dst, r.Partition)
		dst = appendInt16(dst, int16(r.Error))
		dst = appendInt64(dst, r.HighWatermark)
		dst = appendInt32(dst, int32(len(r.Set)))
		return append(dst, r.Set...)
	})
	return endResponse(dst, start)
}

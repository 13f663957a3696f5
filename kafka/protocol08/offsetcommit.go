package protocol08

import "github.com/kafkarepro/kafkarepro/kafka/protocol"

// Errors of the offset requests.
const (
	ErrOffsetMetadataTooLarge      protocol.ErrorCode = 12
	ErrConsumerCoordinatorNotAvail protocol.ErrorCode = 15
	ErrNotCoordinatorForConsumer   protocol.ErrorCode = 16
	MaxOffsetMetadata                                 = 4096 // 0.8.2's offset.metadata.max.bytes
)

// OffsetCommit v0 (0.8.1) and v1 (0.8.2):
//
//	v0: string group | [string topic | [int32 partition | int64 offset | string metadata]]
//	v1: string group | int32 generation | string consumer_id |
//	    [string topic | [int32 partition | int64 offset | int64 timestamp | string metadata]]
//
// answered with [string topic | [int32 partition | int16 error]]. OffsetFetch
// v0 and v1 (the same layout; v0 read ZooKeeper, v1 Kafka's offsets topic):
//
//	string group | [string topic | [int32 partition]]
//
// answered with [string topic | [int32 partition | int64 offset | string metadata | int16 error]],
// offset -1 when none is stored. ConsumerMetadata v0 (0.8.2; later
// FindCoordinator): string group, answered with
// int16 error | int32 node_id | string host | int32 port.

// OffsetCommitRequest is a decoded OffsetCommit v0 or v1.
type OffsetCommitRequest struct {
	Group      string
	Generation int32  // v1
	ConsumerID string // v1
	Parts      []CommitPart
}

// CommitPart is one partition's offset to store.
type CommitPart struct {
	Topic     string
	Partition int32
	Offset    int64
	Timestamp int64 // v1
	Metadata  string
}

// DecodeOffsetCommit parses an OffsetCommit body of version v (0 or 1).
func DecodeOffsetCommit(v int16, body []byte) (OffsetCommitRequest, error) {
	r := reader{b: body, kind: "OffsetCommit"}
	c := OffsetCommitRequest{Group: r.string("group")}
	if v >= 1 {
		c.Generation = r.int32("generation")
		c.ConsumerID = r.string("consumer_id")
	}
	min := 4 + 8 + 2
	if v >= 1 {
		min += 8
	}
	nt := r.count("topic", 2+4)
	for i := 0; i < nt && r.err == nil; i++ {
		topic := r.string("topic")
		np := r.count("partition", min)
		for j := 0; j < np && r.err == nil; j++ {
			p := CommitPart{Topic: topic, Partition: r.int32("partition"), Offset: r.int64("offset")}
			if v >= 1 {
				p.Timestamp = r.int64("timestamp")
			}
			p.Metadata, _ = r.nullableString("metadata")
			c.Parts = append(c.Parts, p)
		}
	}
	return c, r.end()
}

// PartitionError is one partition's answer to OffsetCommit.
type PartitionError struct {
	Topic     string
	Partition int32
	Error     protocol.ErrorCode
}

// AppendOffsetCommitResponse appends an OffsetCommit answer.
func AppendOffsetCommitResponse(dst []byte, correlationID int32, results []PartitionError) []byte {
	dst, start := beginResponse(dst, correlationID)
	dst = groupByTopic(dst, len(results), func(i int) string { return results[i].Topic }, func(dst []byte, i int) []byte {
		dst = appendInt32(dst, results[i].Partition)
		return appendInt16(dst, int16(results[i].Error))
	})
	return endResponse(dst, start)
}

// OffsetFetchRequest is a decoded OffsetFetch v0 or v1.
type OffsetFetchRequest struct {
	Group string
	Parts []TopicPartition
}

// TopicPartition names one partition.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// DecodeOffsetFetch parses an OffsetFetch body.
func DecodeOffsetFetch(body []byte) (OffsetFetchRequest, error) {
	r := reader{b: body, kind: "OffsetFetch"}
	f := OffsetFetchRequest{Group: r.string("group")}
	nt := r.count("topic", 2+4)
	for i := 0; i < nt && r.err == nil; i++ {
		topic := r.string("topic")
		np := r.count("partition", 4)
		for j := 0; j < np && r.err == nil; j++ {
			f.Parts = append(f.Parts, TopicPartition{topic, r.int32("partition")})
		}
	}
	return f, r.end()
}

// StoredOffset is one partition's answer to OffsetFetch.
type StoredOffset struct {
	Topic     string
	Partition int32
	Offset    int64 // -1: none stored
	Metadata  string
	Error     protocol.ErrorCode
}

// AppendOffsetFetchResponse appends an OffsetFetch answer.
func AppendOffsetFetchResponse(dst []byte, correlationID int32, results []StoredOffset) []byte {
	dst, start := beginResponse(dst, correlationID)
	dst = groupByTopic(dst, len(results), func(i int) string { return results[i].Topic }, func(dst []byte, i int) []byte {
		r := results[i]
		dst = appendInt32(dst, r.Partition)
		dst = appendInt64(dst, r.Offset)
		dst = appendString(dst, r.Metadata)
		return appendInt16(dst, int16(r.Error))
	})
	return endResponse(dst, start)
}

// DecodeConsumerMetadata parses a ConsumerMetadata v0 body: the group.
func DecodeConsumerMetadata(body []byte) (string, error) {
	r := reader{b: body, kind: "ConsumerMetadata"}
	g := r.string("group")
	return g, r.end()
}

// AppendConsumerMetadataResponse appends a ConsumerMetadata v0 answer.
func AppendConsumerMetadataResponse(dst []byte, correlationID int32, code protocol.ErrorCode, coordinator Broker) []byte {
	dst, start := beginResponse(dst, correlationID)
	dst = appendInt16(dst, int16(code))
	dst = appendInt32(dst, coordinator.NodeID)
	dst = appendString(dst, coordinator.Host)
	dst = appendInt32(dst, coordinator.Port)
	return endResponse(dst, start)
}

package protocol08

import "github.com/kafkarepro/kafkarepro/kafka/protocol"

// Metadata v0 asks which broker leads each partition of some topics (none:
// all):
//
//	[string topic]
//
// and is answered with the brokers and, per topic and partition, the leader,
// replicas and in-sync replicas:
//
//	[int32 node_id | string host | int32 port]
//	[int16 error | string topic | [int16 error | int32 partition | int32 leader |
//	                               [int32 replica] | [int32 isr]]]

// DecodeMetadata parses a Metadata v0 body.
func DecodeMetadata(body []byte) ([]string, error) {
	r := reader{b: body, kind: "Metadata"}
	n := r.count("topic", 2)
	var topics []string
	for i := 0; i < n && r.err == nil; i++ {
		topics = append(topics, r.string("topic"))
	}
	return topics, r.end()
}

// Broker is one broker's address.
type Broker struct {
	NodeID int32
	Host   string
	Port   int32
}

// TopicMetadata is one topic's answer.
type TopicMetadata struct {
	Error      protocol.ErrorCode
	Topic      string
	Partitions []PartitionMetadata
}

// PartitionMetadata is one partition's answer; Leader is -1 when it has none.
type PartitionMetadata struct {
	Error     protocol.ErrorCode
	Partition int32
	Leader    int32
	Replicas  []int32
	ISR       []int32
}

// AppendMetadataResponse appends a Metadata v0 answer.
func AppendMetadataResponse(dst []byte, correlationID int32, brokers []Broker, topics []TopicMetadata) []byte {
	dst, start := beginResponse(dst, correlationID)
	dst = appendInt32(dst, int32(len(brokers)))
	for _, b := range brokers {
		dst = appendInt32(dst, b.NodeID)
		dst = appendString(dst, b.Host)
		dst = appendInt32(dst, b.Port)
	}
	dst = appendInt32(dst, int32(len(topics)))
	for _, t := range topics {
		dst = appendInt16(dst, int16(t.Error))
		dst = appendString(dst, t.Topic)
		dst = appendInt32(dst, int32(len(t.Partitions)))
		for _, p := range t.Partitions {
			dst = appendInt16(dst, int16(p.Error))
			dst = appendInt32(dst, p.Partition)
			dst = appendInt32(dst, p.Leader)
			dst = appendInt32s(dst, p.Replicas)
			dst = appendInt32s(dst, p.ISR)
		}
	}
	return endResponse(dst, start)
}

func appendInt32s(dst []byte, v []int32) []byte {
	dst = appendInt32(dst, int32(len(v)))
	for _, x := range v {
		dst = appendInt32(dst, x)
	}
	return dst
}

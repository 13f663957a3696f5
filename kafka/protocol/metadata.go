package protocol

import "encoding/binary"

// MetadataRequest (id 6) asks any broker where each partition of some topics
// is led (0.8's TopicMetadataRequest); no topics means every replicated
// topic:
//
//	int16 count | count × topic
//
// The answer (MetadataResponse) lists the live brokers and, per topic, its
// partitions with leader, replicas and ISR. A topic that is not replicated
// (one of 0.7's, created on first produce) or does not exist comes back with
// ErrUnknownTopicOrPartition and no partitions: its clients route it the 0.7
// way (docs/PROTOCOL.md §7).
type MetadataRequest struct {
	Topics []string
}

// RequestID returns RequestMetadata.
func (m MetadataRequest) RequestID() int16 { return RequestMetadata }

// AppendTo appends the framed request to dst.
func (m MetadataRequest) AppendTo(dst []byte) []byte {
	size := 2
	for _, t := range m.Topics {
		size += 2 + len(t)
	}
	dst = appendRequestHeader(dst, RequestMetadata, size)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(m.Topics)))
	for _, t := range m.Topics {
		dst = appendString(dst, t)
	}
	return dst
}

// DecodeMetadata parses a METADATA body.
func DecodeMetadata(body []byte) (MetadataRequest, error) {
	r := reader{b: body, kind: "METADATA"}
	n := r.count(2)
	var m MetadataRequest
	for i := 0; i < n && r.err == nil; i++ {
		m.Topics = append(m.Topics, r.topic(nil))
	}
	if err := r.end(); err != nil {
		return MetadataRequest{}, err
	}
	return m, nil
}

// BrokerAddr is a broker's id and address, as the metadata and the
// controller's LEADER_AND_ISR give them: int32 id | host | int32 port.
type BrokerAddr struct {
	ID   int32
	Host string
	Port int32
}

// PartitionMetadata is one partition in a metadata answer.
type PartitionMetadata struct {
	Error       ErrorCode // ErrLeaderNotAvailable when Leader is -1
	Partition   int32
	Leader      int32 // broker id, -1 for none
	LeaderEpoch int32
	Replicas    []int32 // in assignment order; the first is the preferred leader
	ISR         []int32
}

// TopicMetadata is one topic in a metadata answer.
type TopicMetadata struct {
	Error      ErrorCode
	Topic      string
	Partitions []PartitionMetadata // sorted by partition
}

// MetadataResponse is the payload of a METADATA answer:
//
//	int16 brokers | brokers × (int32 id | host | int32 port)
//	int16 topics  | topics × (int16 error | topic | int16 partitions |
//	    partitions × (int16 error | int32 partition | int32 leader | int32 leader epoch |
//	                  int16 n | n × int32 replica | int16 m | m × int32 isr))
type MetadataResponse struct {
	Brokers []BrokerAddr
	Topics  []TopicMetadata
}

func appendBrokers(dst []byte, brokers []BrokerAddr) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(brokers)))
	for _, b := range brokers {
		dst = binary.BigEndian.AppendUint32(dst, uint32(b.ID))
		dst = appendString(dst, b.Host)
		dst = binary.BigEndian.AppendUint32(dst, uint32(b.Port))
	}
	return dst
}

func readBrokers(r *reader) []BrokerAddr {
	n := r.count(4 + 2 + 4)
	out := make([]BrokerAddr, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, BrokerAddr{ID: r.int32("broker id"), Host: r.str("host"), Port: r.int32("port")})
	}
	return out
}

func appendInt32s(dst []byte, v []int32) []byte {
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(v)))
	for _, x := range v {
		dst = binary.BigEndian.AppendUint32(dst, uint32(x))
	}
	return dst
}

// AppendMetadataResponse appends the whole answer (header and payload).
func AppendMetadataResponse(dst []byte, m *MetadataResponse) []byte {
	start := len(dst)
	dst = AppendResponseHeader(dst, 0, ErrNone)
	dst = appendBrokers(dst, m.Brokers)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(m.Topics)))
	for _, t := range m.Topics {
		dst = binary.BigEndian.AppendUint16(dst, uint16(t.Error))
		dst = appendString(dst, t.Topic)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(t.Partitions)))
		for _, p := range t.Partitions {
			dst = binary.BigEndian.AppendUint16(dst, uint16(p.Error))
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.Leader))
			dst = binary.BigEndian.AppendUint32(dst, uint32(p.LeaderEpoch))
			dst = appendInt32s(dst, p.Replicas)
			dst = appendInt32s(dst, p.ISR)
		}
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// DecodeMetadataResponse parses the payload of a METADATA answer.
func DecodeMetadataResponse(payload []byte) (MetadataResponse, error) {
	r := reader{b: payload, kind: "METADATA response"}
	var m MetadataResponse
	m.Brokers = readBrokers(&r)
	n := r.count(2 + 2 + 2)
	for i := 0; i < n && r.err == nil; i++ {
		t := TopicMetadata{Error: ErrorCode(r.int16("error")), Topic: r.topic(nil)}
		np := r.count(2 + 4 + 4 + 4 + 2 + 2)
		for j := 0; j < np && r.err == nil; j++ {
			p := PartitionMetadata{Error: ErrorCode(r.int16("error")), Partition: r.int32("partition"),
				Leader: r.int32("leader"), LeaderEpoch: r.int32("leader epoch")}
			p.Replicas = r.int32s("replica")
			p.ISR = r.int32s("isr")
			t.Partitions = append(t.Partitions, p)
		}
		m.Topics = append(m.Topics, t)
	}
	if err := r.end(); err != nil {
		return MetadataResponse{}, err
	}
	return m, nil
}

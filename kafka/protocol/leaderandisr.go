package protocol

import "encoding/binary"

// LeaderAndISRRequest (id 8) is the controller telling a broker which
// partitions it leads and which it follows (docs/PROTOCOL.md §10):
//
//	int32 controller id | int32 controller epoch | int64 broker epoch |
//	int16 brokers | brokers × (int32 id | host | int32 port) |
//	int16 count | count × (topic | int32 partition | int32 leader | int32 leader epoch |
//	                       int32 state version | int16 n | n × int32 isr | int16 m | m × int32 replica)
//
// The broker epoch is the recipient's, as the controller read it from the
// recipient's registration (zk.Broker.Epoch). The brokers are the live
// leaders of the partitions listed, so a follower knows where to fetch. A
// broker refuses the whole request when the controller epoch is older than
// the newest one it has seen (ErrStaleControllerEpoch in the header) or the
// broker epoch is older than its own registration's (ErrStaleBrokerEpoch: the
// request was made for this broker's previous life), and one partition whose
// leader epoch is older than the one it has, or that would have it lead an
// epoch it did not lead in this life (ErrStaleLeaderEpoch). The answer is
//
//	header (error) | int16 count | count × (topic | int32 partition | int16 error)
type LeaderAndISRRequest struct {
	ControllerID    int32
	ControllerEpoch int32
	BrokerEpoch     int64 // the recipient's broker epoch; 0: not known
	Brokers         []BrokerAddr
	Partitions      []PartitionState
}

// PartitionState is what the controller decided for one partition: the
// data of its state node in ZooKeeper plus the replica list.
type PartitionState struct {
	Topic       string
	Partition   int32
	Leader      int32 // -1: no leader (offline)
	LeaderEpoch int32
	Version     int32 // ZooKeeper version of the state node, for the leader's conditional ISR updates
	ISR         []int32
	Replicas    []int32
}

// RequestID returns RequestLeaderAndISR.
func (l LeaderAndISRRequest) RequestID() int16 { return RequestLeaderAndISR }

// AppendTo appends the framed request to dst.
func (l LeaderAndISRRequest) AppendTo(dst []byte) []byte {
	start := len(dst)
	dst = appendRequestHeader(dst, RequestLeaderAndISR, 0)
	dst = binary.BigEndian.AppendUint32(dst, uint32(l.ControllerID))
	dst = binary.BigEndian.AppendUint32(dst, uint32(l.ControllerEpoch))
	dst = binary.BigEndian.AppendUint64(dst, uint64(l.BrokerEpoch))
	dst = appendBrokers(dst, l.Brokers)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(l.Partitions)))
	for _, p := range l.Partitions {
		dst = appendString(dst, p.Topic)
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.Leader))
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.LeaderEpoch))
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.Version))
		dst = appendInt32s(dst, p.ISR)
		dst = appendInt32s(dst, p.Replicas)
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// DecodeLeaderAndISR parses a LEADER_AND_ISR body.
func DecodeLeaderAndISR(body []byte) (LeaderAndISRRequest, error) {
	r := reader{b: body, kind: "LEADER_AND_ISR"}
	l := LeaderAndISRRequest{ControllerID: r.int32("controller id"), ControllerEpoch: r.int32("controller epoch"),
		BrokerEpoch: r.int64("broker epoch")}
	l.Brokers = readBrokers(&r)
	n := r.count(2 + 4*5 + 2 + 2)
	for i := 0; i < n && r.err == nil; i++ {
		p := PartitionState{Topic: r.topic(nil), Partition: r.int32("partition"), Leader: r.int32("leader"),
			LeaderEpoch: r.int32("leader epoch"), Version: r.int32("state version")}
		p.ISR = r.int32s("isr")
		p.Replicas = r.int32s("replica")
		l.Partitions = append(l.Partitions, p)
	}
	if err := r.end(); err != nil {
		return LeaderAndISRRequest{}, err
	}
	return l, nil
}

// PartitionError is one partition's error code in an answer.
type PartitionError struct {
	Topic     string
	Partition int32
	Error     ErrorCode
}

// AppendPartitionErrors appends a whole answer made of a header with code
// and a list of per-partition errors (LEADER_AND_ISR's answer).
func AppendPartitionErrors(dst []byte, code ErrorCode, parts []PartitionError) []byte {
	start := len(dst)
	dst = AppendResponseHeader(dst, 0, code)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(parts)))
	for _, p := range parts {
		dst = appendString(dst, p.Topic)
		dst = binary.BigEndian.AppendUint32(dst, uint32(p.Partition))
		dst = binary.BigEndian.AppendUint16(dst, uint16(p.Error))
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// DecodePartitionErrors parses the payload of such an answer.
func DecodePartitionErrors(payload []byte) ([]PartitionError, error) {
	r := reader{b: payload, kind: "LEADER_AND_ISR response"}
	n := r.count(2 + 4 + 2)
	var out []PartitionError
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, PartitionError{Topic: r.topic(nil), Partition: r.int32("partition"), Error: ErrorCode(r.int16("error"))})
	}
	return out, r.end()
}

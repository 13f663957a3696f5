package protocol

import "encoding/binary"

// ControllerReplicaID is the replica id of an EPOCH_END_OFFSET the controller
// sends: answered by any replica of the partition, from its own log.
const ControllerReplicaID int32 = -2

// EpochEndOffsetRequest (id 9) is a follower asking its leader where a
// leader epoch ends in the leader's log (Kafka's KIP-101
// OffsetsForLeaderEpoch), so that it can cut off what the leader does not
// have instead of truncating to a possibly stale high watermark
// (docs/PROTOCOL.md §10):
//
//	int32 replica id | int16 count | count × (topic | int32 partition | int32 leader epoch)
//
// The answer is the response header (error 0) and
//
//	int16 count | count × (topic | int32 partition | int16 error | int32 epoch | int64 end offset)
//
// where epoch is the largest epoch of the leader's history not above the one
// asked for, and end offset where it ends: the start of the next epoch, or
// the leader's log end offset for its current one. Epoch -1 and end -1 mean
// the leader knows no such epoch.
//
// The controller asks too, with replica id ControllerReplicaID, when every
// in-sync replica of a partition has registered again and the longest log
// must lead (replication.Decide): then any replica answers from its own log,
// leader or not.
type EpochEndOffsetRequest struct {
	ReplicaID  int32
	Partitions []EpochQuery
}

// EpochQuery asks for the end of one partition's epoch.
type EpochQuery struct {
	Topic     string
	Partition int32
	Epoch     int32
}

// EpochEnd is the leader's answer for one partition.
type EpochEnd struct {
	Topic     string
	Partition int32
	Error     ErrorCode
	Epoch     int32
	EndOffset int64
}

// RequestID returns RequestEpochEndOffset.
func (e EpochEndOffsetRequest) RequestID() int16 { return RequestEpochEndOffset }

// AppendTo appends the framed request to dst.
func (e EpochEndOffsetRequest) AppendTo(dst []byte) []byte {
	size := 4 + 2
	for _, q := range e.Partitions {
		size += 2 + len(q.Topic) + 4 + 4
	}
	dst = appendRequestHeader(dst, RequestEpochEndOffset, size)
	dst = binary.BigEndian.AppendUint32(dst, uint32(e.ReplicaID))
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(e.Partitions)))
	for _, q := range e.Partitions {
		dst = appendString(dst, q.Topic)
		dst = binary.BigEndian.AppendUint32(dst, uint32(q.Partition))
		dst = binary.BigEndian.AppendUint32(dst, uint32(q.Epoch))
	}
	return dst
}

// DecodeEpochEndOffset parses an EPOCH_END_OFFSET body.
func DecodeEpochEndOffset(body []byte) (EpochEndOffsetRequest, error) {
	r := reader{b: body, kind: "EPOCH_END_OFFSET"}
	e := EpochEndOffsetRequest{ReplicaID: r.int32("replica id")}
	n := r.count(2 + 4 + 4)
	for i := 0; i < n && r.err == nil; i++ {
		e.Partitions = append(e.Partitions, EpochQuery{Topic: r.topic(nil), Partition: r.int32("partition"), Epoch: r.int32("epoch")})
	}
	if err := r.end(); err != nil {
		return EpochEndOffsetRequest{}, err
	}
	return e, nil
}

// AppendEpochEndResponse appends the whole answer.
func AppendEpochEndResponse(dst []byte, ends []EpochEnd) []byte {
	start := len(dst)
	dst = AppendResponseHeader(dst, 0, ErrNone)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(ends)))
	for _, e := range ends {
		dst = appendString(dst, e.Topic)
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.Partition))
		dst = binary.BigEndian.AppendUint16(dst, uint16(e.Error))
		dst = binary.BigEndian.AppendUint32(dst, uint32(e.Epoch))
		dst = binary.BigEndian.AppendUint64(dst, uint64(e.EndOffset))
	}
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// DecodeEpochEndResponse parses the payload of an EPOCH_END_OFFSET answer.
func DecodeEpochEndResponse(payload []byte) ([]EpochEnd, error) {
	r := reader{b: payload, kind: "EPOCH_END_OFFSET response"}
	n := r.count(2 + 4 + 2 + 4 + 8)
	var out []EpochEnd
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, EpochEnd{Topic: r.topic(nil), Partition: r.int32("partition"), Error: ErrorCode(r.int16("error")),
			Epoch: r.int32("epoch"), EndOffset: r.int64("end offset")})
	}
	return out, r.end()
}

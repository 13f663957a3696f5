package broker

import (
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// handleOffsets serves an OFFSETS (protocol/offsets.go): the offsets where
// the partition's segments start, so a consumer can rewind (§3.1: a consumer
// may deliberately go back to an old offset and re-consume).
func (cn *conn) handleOffsets(body []byte) error {
	o, err := cn.dec.Offsets(body)
	if err != nil {
		return err
	}
	var offs []int64
	var l *log.Log
	code := protocol.ErrNone
	if _, hit := cn.cached(o.Topic, o.Partition); !hit && cn.replicatedTopic(o.Topic) {
		// docs/PROTOCOL.md §10: the leader answers, "latest" being where
		// consumers' reads stop.
		if p := cn.replica(o.Topic, o.Partition); p == nil {
			code = protocol.ErrNotLeaderForPartition
		} else {
			offs, code = p.Offsets(o.Time, int(max(o.MaxNumOffsets, 0)))
		}
		cn.out = protocol.AppendOffsetsResponse(cn.out[:0], code, offs)
		return cn.send.write(cn.out, false)
	}
	l, code = cn.lookup(o.Topic, o.Partition)
	switch {
	case l != nil:
		offs = l.Offsets(o.Time, int(max(o.MaxNumOffsets, 0)))
	case code == protocol.ErrNone && o.MaxNumOffsets > 0 &&
		(o.Time == protocol.OffsetsLatest || o.Time == protocol.OffsetsEarliest):
		offs = []int64{0} // an empty partition starts and ends at 0
	}
	cn.out = protocol.AppendOffsetsResponse(cn.out[:0], code, offs)
	return cn.send.write(cn.out, false)
}

package broker

import "github.com/kafkarepro/kafkarepro/kafka/protocol"

// handleEpochEndOffset serves an EPOCH_END_OFFSET (protocol/epochendoffset.go): where a leader epoch ends in
// this leader's log, so a follower truncates there and not at a stale high watermark (docs/PROTOCOL.md §10).
func (cn *conn) handleEpochEndOffset(body []byte) error {
	req, err := protocol.DecodeEpochEndOffset(body)
	if err != nil {
		return err
	}
	var ends []protocol.EpochEnd
	if cn.b.repl == nil {
		for _, q := range req.Partitions {
			ends = append(ends, protocol.EpochEnd{Topic: q.Topic, Partition: q.Partition, Error: protocol.ErrUnknownTopicOrPartition, Epoch: -1, EndOffset: -1})
		}
	} else {
		ends = cn.b.repl.EpochEnd(&req)
	}
	cn.out = protocol.AppendEpochEndResponse(cn.out[:0], ends)
	return cn.send.write(cn.out, false)
}

package broker

import "github.com/kafkarepro/kafkarepro/kafka/protocol"

// handleLeaderAndISR serves a LEADER_AND_ISR (protocol/leaderandisr.go): the controller telling this broker
// which partitions to lead and which to follow. A request from a controller older than the newest one seen
// is refused whole with ErrStaleControllerEpoch (docs/PROTOCOL.md §10); a broker without ZooKeeper has no
// replicas and refuses every partition.
func (cn *conn) handleLeaderAndISR(body []byte) error {
	req, err := protocol.DecodeLeaderAndISR(body)
	if err != nil {
		return err
	}
	code, parts := protocol.ErrNone, []protocol.PartitionError(nil)
	if cn.b.repl == nil {
		for _, s := range req.Partitions {
			parts = append(parts, protocol.PartitionError{Topic: s.Topic, Partition: s.Partition, Error: protocol.ErrUnknownTopicOrPartition})
		}
	} else {
		code, parts = cn.b.repl.HandleLeaderAndISR(&req)
	}
	cn.out = protocol.AppendPartitionErrors(cn.out[:0], code, parts)
	return cn.send.write(cn.out, false)
}

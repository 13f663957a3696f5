package broker

import (
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

// A consumer group's offsets through the Kafka protocol: ConsumerMetadata
// names the broker that keeps them (the coordinator), OffsetCommit stores
// them there and OffsetFetch reads them back (groupoffsets.go). The
// coordinator of every group is the live broker with the lowest id (this
// broker without ZooKeeper), so every broker gives the same answer; it keeps
// offsets in its log directory, and a group whose coordinator is gone
// starts from what the new one has (0.8.2 kept them in a replicated topic;
// this does not).

// coordinator08 is the coordinator of every group.
func (cn *conn) coordinator08() (protocol08.Broker, protocol.ErrorCode) {
	self := cn.self08()
	if cn.b.repl == nil {
		return self, protocol.ErrNone
	}
	brokers, err := cn.b.repl.Brokers() // sorted by id
	if err != nil || len(brokers) == 0 {
		return protocol08.Broker{NodeID: -1}, protocol08.ErrConsumerCoordinatorNotAvail
	}
	low := brokers[0]
	if low.ID == self.NodeID {
		return self, protocol.ErrNone
	}
	return protocol08.Broker{NodeID: low.ID, Host: low.Host, Port: low.Port}, protocol.ErrNone
}

// consumerMetadata08 serves a ConsumerMetadata v0.
func (cn *conn) consumerMetadata08(h protocol08.Header, body []byte) error {
	if _, err := protocol08.DecodeConsumerMetadata(body); err != nil {
		return err
	}
	c, code := cn.coordinator08()
	cn.out = protocol08.AppendConsumerMetadataResponse(cn.out[:0], h.CorrelationID, code, c)
	return cn.send.write(cn.out, false)
}

// isCoordinator08 reports whether this broker keeps the groups' offsets,
// and the error code to answer with when it does not.
func (cn *conn) isCoordinator08() protocol.ErrorCode {
	c, code := cn.coordinator08()
	if code != protocol.ErrNone {
		return code
	}
	if c.NodeID != int32(cn.b.cfg.BrokerID) {
		return protocol08.ErrNotCoordinatorForConsumer
	}
	return protocol.ErrNone
}

// offsetCommit08 serves an OffsetCommit v0 or v1 (generation and consumer
// id, which belong to 0.9's group membership, are not checked).
func (cn *conn) offsetCommit08(h protocol08.Header, body []byte) error {
	req, err := protocol08.DecodeOffsetCommit(h.APIVersion, body)
	if err != nil {
		return err
	}
	results := make([]protocol08.PartitionError, len(req.Parts))
	store := map[groupPartition]committed{}
	here := cn.isCoordinator08()
	for i, p := range req.Parts {
		res := protocol08.PartitionError{Topic: p.Topic, Partition: p.Partition, Error: here}
		switch {
		case here != protocol.ErrNone:
		case req.Group == "" || log.ValidateTopic(p.Topic) != nil || p.Partition < 0:
			res.Error = protocol.ErrUnknownTopicOrPartition
		case len(p.Metadata) > protocol08.MaxOffsetMetadata:
			res.Error = protocol08.ErrOffsetMetadataTooLarge
		default:
			store[groupPartition{req.Group, p.Topic, p.Partition}] = committed{p.Offset, p.Metadata}
		}
		results[i] = res
	}
	if len(store) > 0 {
		if err := cn.b.groups.commit(req.Group, store); err != nil {
			cn.b.log.Warn("cannot store committed offsets", "group", req.Group, "err", err)
			for i := range results {
				if results[i].Error == protocol.ErrNone {
					results[i].Error = protocol.ErrUnknown
				}
			}
		}
	}
	cn.out = protocol08.AppendOffsetCommitResponse(cn.out[:0], h.CorrelationID, results)
	return cn.send.write(cn.out, false)
}

// offsetFetch08 serves an OffsetFetch v0 or v1: -1 where nothing was committed.
func (cn *conn) offsetFetch08(h protocol08.Header, body []byte) error {
	req, err := protocol08.DecodeOffsetFetch(body)
	if err != nil {
		return err
	}
	here := cn.isCoordinator08()
	results := make([]protocol08.StoredOffset, len(req.Parts))
	for i, p := range req.Parts {
		res := protocol08.StoredOffset{Topic: p.Topic, Partition: p.Partition, Offset: -1, Error: here}
		if here == protocol.ErrNone {
			if c, ok := cn.b.groups.get(groupPartition{req.Group, p.Topic, p.Partition}); ok {
				res.Offset, res.Metadata = c.offset, c.metadata
			}
		}
		results[i] = res
	}
	cn.out = protocol08.AppendOffsetFetchResponse(cn.out[:0], h.CorrelationID, results)
	return cn.send.write(cn.out, false)
}

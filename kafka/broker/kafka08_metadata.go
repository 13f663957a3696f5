package broker

import (
	"net"
	"slices"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

// metadata08 serves a Metadata v0. A replicated topic is answered from
// ZooKeeper (replication.Manager.Metadata: the leader, replicas and ISR of
// every partition, and every live broker); a 0.7 topic from this broker's
// logs, with this broker leading each of its partitions (0.7's partitions
// belong to the broker that holds them). A 0.7 topic not yet known is
// created with num.partitions partitions, as 0.8's auto.create.topics.enable
// (on by default) did on a metadata request. A bad name is answered with
// UNKNOWN_TOPIC_OR_PARTITION and touches nothing.
func (cn *conn) metadata08(h protocol08.Header, body []byte) error {
	asked, err := protocol08.DecodeMetadata(body)
	if err != nil {
		return err
	}
	self := cn.self08()
	brokers := []protocol08.Broker{self}
	var repl *protocol.MetadataResponse
	if cn.b.repl != nil {
		var names []string // replicated ones asked for; nil: all
		for _, t := range asked {
			if log.ValidateTopic(t) == nil && cn.replicatedTopic(t) {
				names = append(names, t)
			}
		}
		if len(asked) == 0 || len(names) > 0 {
			if repl, err = cn.b.repl.Metadata(names); err != nil {
				cn.b.log.Warn("metadata from ZooKeeper failed", "remote", cn.remote, "err", err)
				repl = nil
			}
		}
		if repl != nil {
			brokers = brokers[:0]
			for _, b := range repl.Brokers {
				brokers = append(brokers, protocol08.Broker{NodeID: b.ID, Host: b.Host, Port: b.Port})
			}
			if !slices.ContainsFunc(brokers, func(b protocol08.Broker) bool { return b.NodeID == self.NodeID }) {
				brokers = append(brokers, self)
			}
		}
	}
	topics := asked
	if len(topics) == 0 {
		topics = cn.b.logs.Topics()
		if repl != nil {
			for _, t := range repl.Topics {
				topics = append(topics, t.Topic)
			}
		}
		slices.Sort(topics)
		topics = slices.Compact(topics)
	}
	var out []protocol08.TopicMetadata
	for _, t := range topics {
		out = append(out, cn.topicMetadata08(t, repl, self.NodeID))
	}
	cn.out = protocol08.AppendMetadataResponse(cn.out[:0], h.CorrelationID, brokers, out)
	return cn.send.write(cn.out, false)
}

// topicMetadata08 is one topic's answer.
func (cn *conn) topicMetadata08(t string, repl *protocol.MetadataResponse, self int32) protocol08.TopicMetadata {
	tm := protocol08.TopicMetadata{Topic: t}
	if log.ValidateTopic(t) != nil {
		tm.Error = protocol.ErrUnknownTopicOrPartition
		return tm
	}
	if cn.replicatedTopic(t) {
		if repl == nil {
			tm.Error = protocol.ErrLeaderNotAvailable
			return tm
		}
		for _, rt := range repl.Topics {
			if rt.Topic != t {
				continue
			}
			tm.Error = rt.Error
			for _, p := range rt.Partitions {
				code := p.Error
				if p.Leader < 0 && code == protocol.ErrNone {
					code = protocol.ErrLeaderNotAvailable
				}
				tm.Partitions = append(tm.Partitions, protocol08.PartitionMetadata{Error: code, Partition: p.Partition,
					Leader: p.Leader, Replicas: p.Replicas, ISR: p.ISR})
			}
			slices.SortFunc(tm.Partitions, func(a, b protocol08.PartitionMetadata) int { return int(a.Partition - b.Partition) })
			return tm
		}
		tm.Error = protocol.ErrUnknownTopicOrPartition
		return tm
	}
	n := cn.b.logs.Partitions(t)
	for p := 0; p < n; p++ {
		if _, err := cn.b.logs.GetOrCreate(t, p); err != nil {
			cn.b.log.Warn("cannot create a partition asked for by metadata", "remote", cn.remote, "topic", t, "partition", p, "err", err)
			tm.Error = protocol.ErrUnknown
			return tm
		}
		tm.Partitions = append(tm.Partitions, protocol08.PartitionMetadata{Partition: int32(p), Leader: self,
			Replicas: []int32{self}, ISR: []int32{self}})
	}
	cn.b.noteTopic(t)
	return tm
}

// self08 is this broker's address as the client reached it.
func (cn *conn) self08() protocol08.Broker {
	a := cn.c.LocalAddr().(*net.TCPAddr)
	host := a.IP.String()
	if cn.b.cfg.Hostname != "" {
		host = cn.b.cfg.Hostname
	}
	return protocol08.Broker{NodeID: int32(cn.b.cfg.BrokerID), Host: host, Port: int32(a.Port)}
}

// offsets08 serves an Offsets v0: latest (-1) is the logical offset
// consumers can read up to, earliest (-2) the first message held, and a time
// the starts of segments last written at or before it (0.8's answer), each
// as a logical offset, newest first, at most max_offsets.
func (cn *conn) offsets08(h protocol08.Header, body []byte) error {
	req, err := protocol08.DecodeOffsets(body)
	if err != nil {
		return err
	}
	results := make([]protocol08.OffsetsResult, len(req.Parts))
	for i, op := range req.Parts {
		res := protocol08.OffsetsResult{Topic: op.Topic, Partition: op.Partition}
		pt := cn.partition08(op.Topic, op.Partition)
		switch {
		case pt.code != protocol.ErrNone:
			res.Error = pt.code
		case op.MaxOffsets < 0:
			res.Error = protocol.ErrInvalidFetchSize
		case op.MaxOffsets == 0:
		case pt.l == nil:
			res.Offsets = []int64{0}
		case op.Time == protocol08.Latest:
			res.Offsets = []int64{cn.logical(pt.l, pt.visible)}
		case op.Time == protocol08.Earliest:
			res.Offsets = []int64{pt.l.LogicalStart()}
		default:
			for _, b := range pt.l.OffsetsUpTo(op.Time, int(min(op.MaxOffsets, 1024)), pt.visible) {
				res.Offsets = append(res.Offsets, cn.logical(pt.l, b))
			}
		}
		results[i] = res
	}
	cn.out = protocol08.AppendOffsetsResponse(cn.out[:0], h.CorrelationID, results)
	return cn.send.write(cn.out, false)
}

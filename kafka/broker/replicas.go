package broker

import (
	"errors"
	"math/rand/v2"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// A connection's view of replicated partitions (docs/PROTOCOL.md §10). The 0.7 requests check the
// connection's cache of 0.7 logs first, so a topic created by a produce costs one more map lookup per
// request and nothing else; a replicated topic is served by the replica manager: its leader appends and
// answers reads up to min(high watermark, flushed end), every other broker says "not leader".

// replicatedTopic reports whether topic is replicated (never true without ZooKeeper).
func (cn *conn) replicatedTopic(topic string) bool {
	return cn.b.repl != nil && cn.b.repl.Replicated(topic)
}

// replica returns this broker's replica of a replicated partition, nil if it has none.
func (cn *conn) replica(topic string, partition int32) *replication.Partition {
	k := partKey{topic, partition}
	if p, ok := cn.parts[k]; ok {
		return p
	}
	p := cn.b.repl.Partition(topic, partition)
	if p != nil {
		if cn.parts == nil || len(cn.parts) >= maxCachedLogs {
			cn.parts = map[partKey]*replication.Partition{}
		}
		cn.parts[k] = p
	}
	return p
}

// appended says where a set went.
type appended struct {
	p        *replication.Partition
	off, end int64
}

// produceReplica appends a set to a replicated partition this broker leads. Partition -1 picks one of the
// topic's partitions it leads at random.
func (cn *conn) produceReplica(p *protocol.ProduceRequest, acks int16) (appended, protocol.ErrorCode, error) {
	part := p.Partition
	if part == protocol.RandomPartition {
		var led []int32
		for _, r := range cn.b.repl.Partitions() {
			if tp := r.TopicPartition(); tp.Topic == p.Topic && r.IsLeader() {
				led = append(led, tp.Partition)
			}
		}
		if len(led) == 0 {
			return appended{}, protocol.ErrNotLeaderForPartition, nil
		}
		part = led[rand.IntN(len(led))]
	}
	r := cn.replica(p.Topic, part)
	if r == nil {
		return appended{}, protocol.ErrNotLeaderForPartition, nil
	}
	off, end, code, err := r.Append(p.Messages, acks)
	return appended{p: r, off: off, end: end}, code, err
}

// readReplica is a consumer's fetch of a replicated partition.
func (cn *conn) readReplica(f *protocol.FetchRequest, size int) (log.Chunk, protocol.ErrorCode) {
	p := cn.replica(f.Topic, f.Partition)
	if p == nil {
		return log.Chunk{}, protocol.ErrNotLeaderForPartition
	}
	c, code, err := p.ReadForConsumer(f.Offset, size)
	if err != nil && !errors.Is(err, log.ErrOffsetOutOfRange) {
		cn.b.log.Warn("fetch of a replicated partition failed", "remote", cn.remote, "topic", f.Topic,
			"partition", f.Partition, "offset", f.Offset, "err", err)
	}
	return c, code
}

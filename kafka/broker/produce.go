package broker

import (
	"errors"
	"fmt"
	"math/rand/v2"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// handleProduce serves a PRODUCE (protocol/produce.go): one message set
// appended to one partition's log (§3.1), with no answer.
func (cn *conn) handleProduce(body []byte) error {
	p, err := cn.dec.Produce(body)
	if err != nil {
		return err
	}
	cn.produce(&p)
	cn.co.quiet = true
	return nil
}

// produce appends one message set. There is no answer (§5), so problems are
// only logged: a bad set is refused whole (the log validates every CRC
// before appending, §3.3, and unpacks every compressed wrapper: one that
// does not decode, inflates past the limit or holds bad messages is refused
// with the set), and a bad topic or partition drops the request.
func (cn *conn) produce(p *protocol.ProduceRequest) {
	if _, hit := cn.cached(p.Topic, p.Partition); !hit && cn.replicatedTopic(p.Topic) {
		// docs/PROTOCOL.md §10: a 0.7 PRODUCE to a replicated topic is an
		// acks=0 produce, appended where this broker leads the partition.
		if _, code, err := cn.produceReplica(p, protocol.AcksNone); code != protocol.ErrNone {
			cn.logRefused("produce to a replicated partition dropped", p, p.Partition, err, "code", code)
		}
		return
	}
	part := p.Partition
	if part == protocol.RandomPartition {
		part = int32(rand.IntN(cn.b.logs.Partitions(p.Topic)))
	}
	l, err := cn.logFor(p.Topic, part, p.Messages)
	if err != nil {
		cn.logRefused("produce request dropped", p, p.Partition, err)
		return
	}
	if _, err := l.Append(p.Messages); err != nil {
		cn.logRefused("message set refused", p, part, err)
	}
}

// logRefused logs, rate-limited (ratelog.go), a message set that was not
// appended, with what was wrong. A partition with a storage error refuses
// every set until it heals, and the log said so once, at ERROR, as it
// failed; those refusals have their own limiter, so they do not hide the
// other kinds.
func (cn *conn) logRefused(msg string, p *protocol.ProduceRequest, partition int32, err error, attrs ...any) {
	lim := &cn.b.lim.dropped
	if errors.Is(err, log.ErrStorage) {
		lim = &cn.b.lim.storage
	}
	if ok, held := lim.allow(); ok {
		cn.b.log.Warn(msg, append([]any{"remote", cn.remote, "topic", p.Topic, "partition", partition,
			"bytes", len(p.Messages), "err", err, "alsoRefusedSinceLastLine", held}, attrs...)...)
	}
}

// logFor returns the log of a partition, creating it on first produce (0.7
// created topics on first use). Each connection caches what it looked up,
// so the hot path is one map lookup with no allocation and no shared lock.
// Before a partition is created the set is validated, so a corrupt set does
// not leave an empty partition behind (Append validates it again; that
// happens once per partition, not per request).
func (cn *conn) logFor(topic string, partition int32, set []byte) (*log.Log, error) {
	if l, ok := cn.cached(topic, partition); ok {
		return l, nil
	}
	if _, ok := cn.b.logs.Get(topic, int(partition)); !ok {
		if _, err := message.ValidateWholeDeep(set); err != nil {
			return nil, fmt.Errorf("%w: %d-byte set refused whole: %w", log.ErrInvalidMessage, len(set), err)
		}
	}
	l, err := cn.b.logs.GetOrCreate(topic, int(partition))
	if err != nil {
		return nil, err
	}
	cn.cache(topic, partition, l)
	cn.b.noteTopic(topic)
	return l, nil
}

package broker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// handleAckedProduce serves an ACKED_PRODUCE (protocol/ackedproduce.go), the paper's §6 replication models
// as the producer picks them: every set is appended first, then with acks -1 the answer waits until each
// is committed (every in-sync replica has it) or the request's timeout passes, answered by the
// connection's answerer while the next request is read (ackedanswers.go). A 0.7 topic (created by a
// produce) is appended as PRODUCE appends it, written to the file before the answer. With acks 0 nothing
// is answered, and a set that could not be appended closes the connection (as 0.8 did), which is the only
// way to tell the producer to look the leader up again.
func (cn *conn) handleAckedProduce(body []byte) error {
	a, err := cn.dec.AckedProduce(body)
	if err != nil {
		return err
	}
	results := make([]protocol.ProduceResult, len(a.Produces))
	waits := make([]*replication.Partition, len(a.Produces))
	ends := make([]int64, len(a.Produces))
	for i := range a.Produces {
		p := &a.Produces[i]
		res := protocol.ProduceResult{Topic: p.Topic, Partition: p.Partition, Offset: -1}
		if _, hit := cn.cached(p.Topic, p.Partition); !hit && cn.replicatedTopic(p.Topic) {
			r, code, err := cn.produceReplica(p, a.Acks)
			res.Error = code
			if code == protocol.ErrNone {
				res.Offset, res.Partition = r.off, r.p.TopicPartition().Partition
				waits[i], ends[i] = r.p, r.end
			} else if err != nil {
				cn.logRefused("acked produce refused", p, p.Partition, err, "code", code)
			}
		} else {
			res.Partition, res.Offset, res.Error = cn.produceUnreplicated(p, a.Acks != protocol.AcksNone, nil)
		}
		results[i] = res
	}
	if a.Acks == protocol.AcksNone {
		for _, r := range results {
			if r.Error != protocol.ErrNone {
				return fmt.Errorf("broker: acks=0 produce to %s-%d failed (%w): closing the connection so the producer looks the leader up",
					r.Topic, r.Partition, r.Error)
			}
		}
		return nil
	}
	if a.Acks == protocol.AcksAll && slices.ContainsFunc(waits, func(p *replication.Partition) bool { return p != nil }) {
		// Answered by the connection's answerer once committed, in order; the next request is read
		// meanwhile (ackedanswers.go).
		return cn.queueAnswer(pendingAnswer{results: results, waits: waits, ends: ends,
			deadline: time.Now().Add(time.Duration(max(a.TimeoutMs, 0)) * time.Millisecond)})
	}
	if err := cn.drainAnswers(); err != nil {
		return err
	}
	cn.out = protocol.AppendAckedProduceResponse(cn.out[:0], results)
	return cn.send.write(cn.out, false)
}

// produceUnreplicated appends to a 0.7 partition (created on first produce) and says where;
// view, if not nil, adds the set to the segment's view (log.AppendView).
func (cn *conn) produceUnreplicated(p *protocol.ProduceRequest, writeOut bool, view log.ViewEncoder) (int32, int64, protocol.ErrorCode) {
	part := p.Partition
	if part == protocol.RandomPartition {
		part = int32(rand.IntN(cn.b.logs.Partitions(p.Topic)))
	}
	l, err := cn.logFor(p.Topic, part, p.Messages)
	if err != nil {
		cn.logRefused("acked produce refused", p, part, err)
		return part, -1, appendCode(err)
	}
	off, err := l.AppendView(p.Messages, view)
	if err == nil && writeOut {
		err = l.WriteOut()
	}
	if err != nil {
		cn.logRefused("acked produce refused", p, part, err)
		return part, -1, appendCode(err)
	}
	return part, off, protocol.ErrNone
}

// appendCode is the error code of a refused append to a 0.7 partition.
func appendCode(err error) protocol.ErrorCode {
	switch {
	case errors.Is(err, log.ErrInvalidMessage):
		return protocol.ErrInvalidMessage
	case errors.Is(err, log.ErrInvalidTopic), errors.Is(err, log.ErrInvalidPartition):
		return protocol.ErrUnknownTopicOrPartition
	case errors.Is(err, log.ErrStorage):
		return protocol.ErrKafkaStorage
	}
	return protocol.ErrUnknown
}

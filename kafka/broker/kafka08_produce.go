package broker

import (
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

// produce08 serves a Produce v0: each partition's 0.8 set is converted to
// the paper's messages (protocol08.Convert08To07) and appended as an
// ACKED_PRODUCE appends it, onto the replication that exists. The answer
// gives the logical offset of each set's first message. With acks 0 there
// is no answer, and a set that could not be appended closes the connection,
// as 0.8's broker did: the only way to tell such a producer.
func (cn *conn) produce08(h protocol08.Header, body []byte) error {
	req, err := protocol08.DecodeProduce(body)
	if err != nil {
		return err
	}
	if req.Acks != protocol.AcksNone && req.Acks != protocol.AcksLeader && req.Acks != protocol.AcksAll {
		return fmt.Errorf("%w: Produce acks %d (0, 1 or -1)", protocol08.ErrMalformed, req.Acks)
	}
	results := make([]protocol08.ProduceResult, len(req.Parts))
	deadline := time.Now().Add(time.Duration(max(req.TimeoutMs, 0)) * time.Millisecond)
	for i, p := range req.Parts {
		results[i] = cn.producePart08(p, req.Acks, deadline)
	}
	if req.Acks == protocol.AcksNone {
		for _, r := range results {
			if r.Error != protocol.ErrNone {
				return fmt.Errorf("broker: acks=0 Produce to %s-%d failed (%w): closing the connection so the producer looks the leader up",
					r.Topic, r.Partition, r.Error)
			}
		}
		cn.co.quiet = true
		return nil
	}
	cn.out = protocol08.AppendProduceResponse(cn.out[:0], h.CorrelationID, results)
	return cn.send.write(cn.out, false)
}

// producePart08 appends one partition's set and says where, as a logical offset.
func (cn *conn) producePart08(p protocol08.ProducePart, acks int16, deadline time.Time) protocol08.ProduceResult {
	res := protocol08.ProduceResult{Topic: p.Topic, Partition: p.Partition, Offset: -1}
	if log.ValidateTopic(p.Topic) != nil || p.Partition < 0 {
		res.Error = protocol.ErrUnknownTopicOrPartition
		return res
	}
	k := cn.k08
	set, _, err := protocol08.Convert08To07(k.conv[:0], p.Set)
	k.conv = set[:0]
	if err != nil {
		res.Error = protocol.ErrInvalidMessage // CORRUPT_MESSAGE
		cn.logRefused("Kafka protocol produce refused", &protocol.ProduceRequest{Topic: p.Topic, Partition: p.Partition, Messages: p.Set}, p.Partition, err)
		return res
	}
	pr := &protocol.ProduceRequest{Topic: p.Topic, Partition: p.Partition, Messages: set}
	if cn.replicatedTopic(p.Topic) {
		r, code, err := cn.produceReplica(pr, acks)
		res.Error = code
		if code != protocol.ErrNone {
			if err != nil {
				cn.logRefused("Kafka protocol produce refused", pr, p.Partition, err, "code", code)
			}
			return res
		}
		if acks == protocol.AcksAll {
			if res.Error = r.p.WaitCommittedOr(r.end, time.Until(deadline), cn.b.stopping); res.Error != protocol.ErrNone {
				return res
			}
		}
		if acks != protocol.AcksNone {
			res.Offset = cn.logical(r.p.Log(), r.off)
		}
		return res
	}
	if int(p.Partition) >= cn.b.logs.Partitions(p.Topic) {
		res.Error = protocol.ErrUnknownTopicOrPartition
		return res
	}
	// The 0.8 entries are kept beside the log (a view), so that a fetch of
	// them is a sendfile (kafka08_fetch.go).
	part, off, code := cn.produceUnreplicated(pr, acks != protocol.AcksNone, protocol08.AppendMessage)
	res.Error = code
	if code == protocol.ErrNone && acks != protocol.AcksNone {
		if l, ok := cn.b.logs.Get(p.Topic, int(part)); ok {
			res.Offset = cn.logical(l, off)
		}
	}
	return res
}

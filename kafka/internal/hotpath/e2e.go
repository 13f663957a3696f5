package hotpath

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// e2eMessages is how many messages one end-to-end operation moves.
const e2eMessages = 1000

// endToEnd is §5's pipeline in one operation: a SyncProducer sends
// e2eMessages messages in batches of 50 to a broker in this process, and
// once the broker has flushed them (§3.1: a message is visible only after
// the flush) a PartitionIterator reads them back, checking every CRC. The
// broker flushes every e2eMessages messages (log.flush.interval), so each
// operation ends with one fsync. Waiting for it polls the log's flushed end
// rather than fetching again and again, so that the count of instructions
// does not depend on how long the fsync took.
type endToEnd struct {
	inMemory
	lb    *loopback
	p     *producer.SyncProducer
	c     *consumer.SimpleConsumer
	it    *consumer.PartitionIterator
	batch [][]byte
	end   int64 // the offset after the last message sent
	size  int64 // bytes of one message in the log
	ctx   context.Context
}

func openEndToEnd(dir string) (Op, error) {
	cfg, err := shippedConfig(dir)
	if err != nil {
		return nil, err
	}
	cfg.FlushInterval = e2eMessages
	lb, _, err := serveBroker(cfg, 0)
	if err != nil {
		return nil, err
	}
	pc := producer.DefaultConfig()
	pc.BrokerList = "0:" + lb.addr()
	pc.Magic = message.MagicV0
	p, err := producer.NewSync(pc)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("hotpath: producer for %s: %w", pc.BrokerList, err), lb.close())
	}
	c := consumer.NewSimpleConsumer(lb.addr(), 30*time.Second)
	o := &endToEnd{lb: lb, p: p, c: c, it: consumer.NewPartitionIterator(c, topic, 0, 0, FetchSize),
		batch: make([][]byte, 50), size: wire, ctx: context.Background()}
	for i := range o.batch {
		o.batch[i] = make([]byte, PayloadSize)
	}
	return o, nil
}

func (o *endToEnd) Do() error {
	for range e2eMessages / len(o.batch) {
		if err := o.p.Send(topic, 0, o.batch...); err != nil {
			return fmt.Errorf("hotpath: e2e/produce-consume: send at %d: %w", o.end, err)
		}
	}
	o.end += e2eMessages * o.size
	if err := o.lb.waitFlushed(o.end); err != nil {
		return err
	}
	for range e2eMessages {
		if !o.it.Next(o.ctx) {
			return fmt.Errorf("hotpath: e2e/produce-consume: read at %d: %w", o.it.NextOffset(), o.it.Err())
		}
	}
	if o.it.NextOffset() != o.end {
		return fmt.Errorf("hotpath: e2e/produce-consume: read up to %d, sent up to %d", o.it.NextOffset(), o.end)
	}
	return nil
}

func (o *endToEnd) Close() error { return errors.Join(o.p.Close(), o.c.Close(), o.lb.close()) }

// waitFlushed waits until the topic's log is flushed up to offset end.
func (lb *loopback) waitFlushed(end int64) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := int64(-1)
		if l, ok := lb.b.Logs().Get(topic, 0); ok {
			got = l.FlushedEnd()
		}
		if got >= end {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hotpath: the broker's log of %s-0 is flushed up to %d after 30 s, want %d", topic, got, end)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

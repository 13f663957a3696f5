package hotpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/sink"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// producerSend is the sync producer's Send of one batch: one PRODUCE
// request, one socket write (§5). The other end, a sink process, reads and
// drops the bytes, so the time and the allocations are the client's alone.
type producerSend struct {
	inMemory
	sink  *sink.Process // nil: a sink someone else runs
	p     *producer.SyncProducer
	batch [][]byte
}

func openSend(batch int) func(dir string) (Op, error) {
	return func(string) (Op, error) {
		s, addr, err := startSink()
		if err != nil {
			return nil, err
		}
		cfg := producer.DefaultConfig()
		cfg.BrokerList = "0:" + addr
		cfg.Magic = message.MagicV0 // the paper's format, as §5 measures it
		p, err := producer.NewSync(cfg)
		if err != nil {
			return nil, errors.Join(fmt.Errorf("hotpath: producer for %s: %w", cfg.BrokerList, err), s.Stop())
		}
		o := &producerSend{sink: s, p: p, batch: make([][]byte, batch)}
		for i := range o.batch {
			o.batch[i] = make([]byte, PayloadSize)
		}
		// The first Send dials; the steady state starts after it.
		if err := o.Do(); err != nil {
			return nil, errors.Join(err, o.Close())
		}
		return o, nil
	}
}

func (o *producerSend) Do() error {
	if err := o.p.Send(topic, -1, o.batch...); err != nil {
		return fmt.Errorf("hotpath: producer/send of %d messages: %w", len(o.batch), err)
	}
	return nil
}

func (o *producerSend) Close() error { return errors.Join(o.p.Close(), o.sink.Stop()) }

func init() { sink.ServeIfAsked() }

// startSink starts the sink the producer paths write to (package sink):
// this binary again; nil and the address for one an instruction counter
// started itself and named in sink.AddrEnv.
func startSink() (*sink.Process, string, error) {
	if addr := os.Getenv(sink.AddrEnv); addr != "" {
		return nil, addr, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("hotpath: find this binary to start a sink: %w", err)
	}
	p, err := sink.Start(context.Background(), self)
	if err != nil {
		return nil, "", fmt.Errorf("hotpath: %w", err)
	}
	return p, p.Addr, nil
}

// consumerIterate is the consumer application's loop: PartitionIterator
// hands out one message at a time, CRC checked, fetching FetchSize bytes
// from a broker on loopback whenever its buffer runs out (with inFlight 1
// one fetch at a time, the next sent ahead; above 1, that many byte ranges
// in flight, as consumer-perf reads: consumer/ranges). It starts over at
// offset 0 before reaching the end, so it never waits for new messages.
type consumerIterate struct {
	inMemory
	lb  *loopback
	c   *consumer.SimpleConsumer
	it  *consumer.PartitionIterator
	end int64
	ctx context.Context
}

func openConsumerIterate(inFlight int) func(dir string) (Op, error) {
	return func(dir string) (Op, error) {
		lb, end, err := startBroker(dir, 2<<20)
		if err != nil {
			return nil, err
		}
		c := consumer.NewSimpleConsumer(lb.addr(), 30*time.Second)
		it := consumer.NewPartitionIterator(c, topic, 0, 0, FetchSize)
		it.InFlight = inFlight
		return &consumerIterate{lb: lb, c: c, it: it, end: end, ctx: context.Background()}, nil
	}
}

func (o *consumerIterate) Do() error {
	if !o.it.Next(o.ctx) {
		return fmt.Errorf("hotpath: consumer/iterate at %d: %w", o.it.NextOffset(), o.it.Err())
	}
	if o.it.NextOffset() == o.end {
		o.it.SeekTo(0)
	}
	return nil
}

func (o *consumerIterate) Close() error { return errors.Join(o.c.Close(), o.lb.close()) }

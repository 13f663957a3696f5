package hotpath

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// topic is the topic every broker path writes and reads, partition 0.
const topic = "hotpath"

// loopback is a broker serving in this process on 127.0.0.1.
type loopback struct {
	b      *broker.Broker
	cancel context.CancelFunc
	served chan error
}

// startBroker starts a broker with its logs in dir, and with filled > 0
// puts at least that many bytes of 50-message sets in the topic and flushes
// them so that fetches see them (§3.1). It returns the flushed end.
func startBroker(dir string, filled int64) (lb *loopback, end int64, err error) {
	cfg, err := shippedConfig(dir)
	if err != nil {
		return nil, 0, err
	}
	return serveBroker(cfg, filled)
}

// serveBroker is startBroker with settings of the caller's.
func serveBroker(cfg broker.Config, filled int64) (lb *loopback, end int64, err error) {
	dir := cfg.LogDir
	b, err := broker.New(cfg, broker.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, 0, fmt.Errorf("hotpath: start a broker in %s: %w", dir, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	lb = &loopback{b: b, cancel: cancel, served: make(chan error, 1)}
	go func() { lb.served <- b.Serve(ctx) }()
	if filled > 0 {
		if end, err = lb.fill(filled); err != nil {
			return nil, 0, errors.Join(err, lb.close())
		}
	}
	return lb, end, nil
}

func (lb *loopback) addr() string { return lb.b.Addr().String() }

func (lb *loopback) fill(n int64) (int64, error) {
	l, err := lb.b.Logs().GetOrCreate(topic, 0)
	if err != nil {
		return 0, fmt.Errorf("hotpath: create %s-0: %w", topic, err)
	}
	set := newSet(50)
	for l.LogEndOffset() < n {
		if _, err := l.Append(set); err != nil {
			return 0, fmt.Errorf("hotpath: fill %s-0: %w", topic, err)
		}
	}
	if err := l.Flush(); err != nil {
		return 0, fmt.Errorf("hotpath: flush %s-0: %w", topic, err)
	}
	return l.FlushedEnd(), nil
}

// waitEnd waits until the topic's log ends at offset end.
func (lb *loopback) waitEnd(end int64) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := int64(-1)
		if l, ok := lb.b.Logs().Get(topic, 0); ok {
			got = l.LogEndOffset()
		}
		if got == end {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("hotpath: the broker's log of %s-0 ends at %d after 30 s, want %d", topic, got, end)
		}
		time.Sleep(time.Millisecond)
	}
}

func (lb *loopback) close() error {
	lb.cancel()
	err := <-lb.served
	return errors.Join(err, lb.b.Close())
}

// brokerProduce sends PRODUCE requests of one set over loopback without
// waiting for an answer (0.7's producer gets none, §5), through a buffered
// writer, so the time is the broker's: read, decode, validate, append.
type brokerProduce struct {
	lb    *loopback
	conn  net.Conn
	w     *bufio.Writer // nil when each
	each  bool          // a write(2) per request, not through w
	frame []byte
	set   int64 // bytes of one request's message set
	sent  int64 // requests written
}

func openBrokerProduce(batch int) func(dir string) (Op, error) {
	return openBrokerProduceWrites(batch, 64<<10)
}

// openBrokerProduceWrites is openBrokerProduce with the client's buffer
// holding buf bytes, or with buf 0 each request in its own write(2), as a
// batch-1 producer does, so that the broker's read side (its wake-ups and
// package coalesce's marks) is in the count.
func openBrokerProduceWrites(batch, buf int) func(dir string) (Op, error) {
	return func(dir string) (Op, error) {
		lb, _, err := startBroker(dir, 0)
		if err != nil {
			return nil, err
		}
		c, err := net.Dial("tcp", lb.addr())
		if err != nil {
			return nil, errors.Join(fmt.Errorf("hotpath: dial the broker: %w", err), lb.close())
		}
		set := newSet(batch)
		o := &brokerProduce{lb: lb, conn: c, each: buf == 0, set: int64(len(set)),
			frame: protocol.ProduceRequest{Topic: topic, Partition: 0, Messages: set}.AppendTo(nil)}
		if !o.each {
			o.w = bufio.NewWriterSize(c, buf)
		}
		// The first request creates the partition; the steady state starts after it.
		if err := errors.Join(o.Do(), o.Settle()); err != nil {
			return nil, errors.Join(err, o.Close())
		}
		return o, nil
	}
}

func (o *brokerProduce) Do() error {
	var err error
	if o.each {
		_, err = o.conn.Write(o.frame)
	} else {
		_, err = o.w.Write(o.frame)
	}
	if err != nil {
		return fmt.Errorf("hotpath: broker/produce: write: %w", err)
	}
	o.sent++
	return nil
}

func (o *brokerProduce) Settle() error {
	if o.w != nil {
		if err := o.w.Flush(); err != nil {
			return fmt.Errorf("hotpath: broker/produce: write: %w", err)
		}
	}
	return o.lb.waitEnd(o.sent * o.set)
}

func (o *brokerProduce) Close() error { return errors.Join(o.conn.Close(), o.lb.close()) }

// brokerFetch is the consumer's request of §3.1 "efficient transfer": a
// FETCH of FetchSize bytes from a ~20 MB log in the page cache, which the
// broker answers with a header and sendfile(2) from the segment file. The
// client reads the answer whole and walks its messages to learn the next
// offset.
type brokerFetch struct {
	inMemory
	lb      *loopback
	conn    net.Conn
	r       *bufio.Reader
	req     protocol.FetchRequest
	out, in []byte
	it      message.Iterator
	flushed int64
}

func openBrokerFetch(dir string) (Op, error) {
	lb, end, err := startBroker(dir, 20<<20)
	if err != nil {
		return nil, err
	}
	c, err := net.Dial("tcp", lb.addr())
	if err != nil {
		return nil, errors.Join(fmt.Errorf("hotpath: dial the broker: %w", err), lb.close())
	}
	return &brokerFetch{lb: lb, conn: c, r: bufio.NewReaderSize(c, 256<<10), flushed: end,
		req: protocol.FetchRequest{Topic: topic, Partition: 0, MaxSize: FetchSize}}, nil
}

func (o *brokerFetch) Do() error {
	if o.req.Offset+FetchSize > o.flushed {
		o.req.Offset = 0
	}
	o.out = o.req.AppendTo(o.out[:0])
	if _, err := o.conn.Write(o.out); err != nil {
		return fmt.Errorf("hotpath: broker/fetch: write: %w", err)
	}
	code, set, buf, err := protocol.ReadResponse(o.r, o.in)
	o.in = buf
	if err != nil || code != protocol.ErrNone || len(set) != FetchSize {
		return fmt.Errorf("hotpath: broker/fetch at %d: code %v, %d bytes, want %d (%v)", o.req.Offset, code, len(set), FetchSize, err)
	}
	o.it.Reset(set, o.req.Offset)
	for o.it.Next() {
	}
	o.req.Offset += int64(o.it.Consumed())
	return nil
}

func (o *brokerFetch) Close() error { return errors.Join(o.conn.Close(), o.lb.close()) }

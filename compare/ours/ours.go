// Package ours is the compare.System adapter for our own rebuild of Kafka
// (package kafka/...), measured in the paper's §5 experiments beside
// ActiveMQ and RabbitMQ.
//
// The producer test uses our sync producer: one PRODUCE request per batch
// (1 or 50 messages), no acknowledgement (§5: "the Kafka producer currently
// doesn't wait for acknowledgements from the broker"). Because nothing comes
// back, the test's clock runs until the broker's OFFSETS answer for
// "latest" reaches the expected end offset, i.e. until every message is
// flushed and visible (§3.1: messages are only exposed to consumers after
// they are flushed). The consumer test uses our simple consumer: FETCH
// requests of 300 KB (0.7's fetch.size; the paper used about 200 KB),
// checking every message's CRC (§3.3) before counting it.
package ours

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/tuning"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// FetchSize is the consumer's fetch.size: 0.7's 300 KiB default.
const FetchSize = 300 * 1024

// Options configures the adapter.
type Options struct {
	// ServerProperties is the broker's server.properties, reported in
	// Settings (flush policy and the like).
	ServerProperties map[string]string
	// StallTimeout ends a producer test whose broker's end offset has not
	// moved for this long after the last send (default 60 s).
	StallTimeout time.Duration
}

// System is our Kafka, connected to one running broker.
type System struct {
	ep    compare.Endpoint
	opts  Options
	addr  string
	mu    sync.Mutex
	start map[string]int64 // offset where the last Produce of each topic began
}

// New connects the adapter to the broker at ep (it dials lazily).
func New(ep compare.Endpoint, opts Options) (*System, error) {
	if ep.Host == "" || ep.Port <= 0 {
		return nil, fmt.Errorf("ours: endpoint %+v has no host or port: %w", ep, ErrBadSpec)
	}
	if opts.StallTimeout <= 0 {
		opts.StallTimeout = 60 * time.Second
	}
	return &System{ep: ep, opts: opts, addr: net.JoinHostPort(ep.Host, strconv.Itoa(ep.Port)), start: map[string]int64{}}, nil
}

// Name implements compare.System.
func (s *System) Name() string { return compare.Ours }

// Settings implements compare.System.
func (s *System) Settings() map[string]string {
	p := s.opts.ServerProperties
	get := func(k, def string) string {
		if v, ok := p[k]; ok {
			return v
		}
		return def
	}
	named := "not reported"
	if len(p) > 0 {
		named = kafkaproc.Describe(p)
	}
	return map[string]string{
		"server_version":  s.ep.Version,
		"broker_settings": named,
		"protocol":        "Kafka 0.7 wire protocol over TCP (PRODUCE, FETCH, OFFSETS), loopback",
		"client":          "kafkarepro kafka/producer SyncProducer, kafka/consumer SimpleConsumer (Go)",
		"persistence":     "append-only segment files, log.file.size=" + get("log.file.size", "1073741824") + ", one partition",
		"flush":           "fsync every log.flush.interval=" + get("log.flush.interval", "500") + " messages or log.default.flush.interval.ms=" + get("log.default.flush.interval.ms", "3000") + " ms; consumers see flushed bytes only",
		"producer_ack":    "none: the producer does not wait for the broker (paper §5); the test ends when OFFSETS latest reaches the expected end",
		"producer_batch":  "1 and 50 messages per PRODUCE request, no compression, magic 0 (9 bytes of header, the paper's format; message.magic=0, since the producer's default is 0.7's magic 1, 10 bytes)",
		"consumer_ack":    "none: the consumer keeps its own offset (paper §3.1)",
		"prefetch":        "FETCH of fetch.size=" + strconv.Itoa(FetchSize) + " bytes per request (0.7 default; the paper's ~200 KB), " + strconv.Itoa(tuning.RangesInFlight) + " consecutive byte ranges in flight; every CRC checked",
		"socket_buffers":  "broker send " + get("socket.send.buffer", "102400") + ", receive " + get("socket.receive.buffer", "102400") + " bytes; clients kernel default",
	}
}

// Produce implements compare.System: spec.Messages messages of
// spec.MessageSize bytes in PRODUCE requests of spec.Batch messages each.
func (s *System) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	if spec.Messages <= 0 || spec.MessageSize <= 0 || spec.Batch <= 0 || spec.Sent == nil {
		return compare.Result{}, fmt.Errorf("ours: produce %+v: %w", spec, ErrBadSpec)
	}
	sc := consumer.NewSimpleConsumer(s.addr, 30*time.Second)
	defer sc.Close()
	// A topic that does not exist yet starts at 0.
	startOff, err := sc.LatestOffset(spec.Topic, 0)
	if err != nil {
		startOff = 0
	}
	s.mu.Lock()
	s.start[spec.Topic] = startOff
	s.mu.Unlock()
	want := startOff + int64(spec.Messages)*int64(message.SizeV0(spec.MessageSize))

	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + s.addr
	// §5 measures the paper's format: magic 0, 9 bytes of overhead (the
	// producer's default is 0.7's magic 1, 10 bytes).
	cfg.Magic = message.MagicV0
	p, err := producer.NewSync(cfg)
	if err != nil {
		return compare.Result{}, fmt.Errorf("ours: producer for %s: %w", s.addr, err)
	}
	defer p.Close()
	payload := compare.Payload(spec.MessageSize)
	batch := make([][]byte, spec.Batch)
	for i := range batch {
		batch[i] = payload
	}
	begin := time.Now()
	sent := 0
	for sent < spec.Messages {
		if sent%(spec.Batch*64) == 0 && ctx.Err() != nil {
			return compare.Result{Messages: int64(sent)}, fmt.Errorf("ours: produce %s after %d messages: %w", spec.Topic, sent, ctx.Err())
		}
		n := min(spec.Batch, spec.Messages-sent)
		if err := p.Send(spec.Topic, 0, batch[:n]...); err != nil {
			return compare.Result{Messages: int64(sent)}, fmt.Errorf("ours: produce %s to %s after %d messages: %w", spec.Topic, s.addr, sent, err)
		}
		sent += n
		spec.Sent.Add(int64(n))
	}
	// The producer got no acknowledgement: the test ends when the broker
	// has every message flushed and visible.
	if err := s.waitEnd(ctx, sc, spec.Topic, want); err != nil {
		return compare.Result{Messages: int64(sent)}, err
	}
	return compare.Result{Messages: int64(sent), Bytes: int64(sent) * int64(spec.MessageSize), Elapsed: time.Since(begin)}, nil
}

// waitEnd polls OFFSETS latest until it reaches want.
func (s *System) waitEnd(ctx context.Context, sc *consumer.SimpleConsumer, topic string, want int64) error {
	last, lastMove := int64(-1), time.Now()
	for {
		off, err := sc.LatestOffset(topic, 0)
		if err != nil {
			return fmt.Errorf("ours: waiting for %s to reach offset %d on %s: %w", topic, want, s.addr, err)
		}
		if off >= want {
			if off > want {
				return fmt.Errorf("ours: %s end offset %d is past the expected %d: %w", topic, off, want, ErrNotFlushed)
			}
			return nil
		}
		if off != last {
			last, lastMove = off, time.Now()
		} else if time.Since(lastMove) > s.opts.StallTimeout {
			return fmt.Errorf("ours: %s stuck at offset %d of %d for %v (messages lost?): %w", topic, off, want, s.opts.StallTimeout, ErrNotFlushed)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ours: waiting for %s to reach offset %d (at %d): %w", topic, want, off, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

// Consume implements compare.System: it reads spec.Messages messages from
// where the last Produce into spec.Topic began (or the earliest offset),
// checking every CRC.
func (s *System) Consume(ctx context.Context, spec compare.ConsumeSpec) (compare.Result, error) {
	if spec.Messages <= 0 || spec.Received == nil {
		return compare.Result{}, fmt.Errorf("ours: consume %+v: %w", spec, ErrBadSpec)
	}
	sc := consumer.NewSimpleConsumer(s.addr, 30*time.Second)
	defer sc.Close()
	s.mu.Lock()
	off, ok := s.start[spec.Topic]
	s.mu.Unlock()
	if !ok {
		var err error
		if off, err = sc.EarliestOffset(spec.Topic, 0); err != nil {
			return compare.Result{}, fmt.Errorf("ours: consume %s: %w", spec.Topic, err)
		}
	}
	begin := time.Now()
	var got int64
	var bytes int64
	idle := 0
	// Consecutive byte ranges, tuning.RangesInFlight of them in flight
	// (kafka/consumer/ranges.go): Ranges hands out what it fetched and
	// keeps what Validate found no whole message in (the part of one that
	// ends a range) for the next.
	rs := consumer.NewRanges(spec.Topic, 0, off, FetchSize, tuning.RangesInFlight)
	// The read is one goroutine, run with tuning.ReaderProcs Ps (the
	// process's other goroutines, the harness's samplers, share them).
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(tuning.ReaderProcs))
	valid := 0
	for got < int64(spec.Messages) {
		if ctx.Err() != nil {
			return compare.Result{Messages: got}, fmt.Errorf("ours: consume %s at offset %d after %d messages: %w", spec.Topic, off, got, ctx.Err())
		}
		set, base, err := rs.Next(sc, valid)
		if err != nil {
			return compare.Result{Messages: got}, fmt.Errorf("ours: consume %s after %d messages: %w", spec.Topic, got, err)
		}
		off = base
		// §3.3: every message's CRC is checked.
		var count int
		valid, count, err = message.Validate(set)
		if err != nil {
			return compare.Result{Messages: got}, fmt.Errorf("ours: consume %s at offset %d: %w", spec.Topic, off+int64(valid), err)
		}
		if count == 0 {
			idle++
			if idle > 30000 { // about a minute of 2 ms waits with nothing new
				return compare.Result{Messages: got}, fmt.Errorf("ours: consume %s: no message at offset %d after %d of %d: %w", spec.Topic, off, got, spec.Messages, ErrNotFlushed)
			}
			time.Sleep(2 * time.Millisecond)
			continue
		}
		idle = 0
		if rest := int64(spec.Messages) - got; int64(count) > rest {
			count = int(rest) // more was produced than this test reads
		}
		off += int64(valid)
		got += int64(count)
		bytes += int64(count) * int64(spec.MessageSize)
		spec.Received.Add(int64(count))
	}
	return compare.Result{Messages: got, Bytes: bytes, Elapsed: time.Since(begin)}, nil
}

// DiskBytes implements compare.System: the size of every partition
// directory under the broker's log.dir (segment files only).
func (s *System) DiskBytes() (int64, error) {
	if s.ep.DataDir == "" {
		return 0, fmt.Errorf("ours: endpoint has no data dir: %w", ErrBadSpec)
	}
	var total int64
	err := filepath.WalkDir(s.ep.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type().IsRegular() && filepath.Ext(path) == ".kafka" {
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("ours: size of %s: %w", s.ep.DataDir, err)
	}
	return total, nil
}

// Close implements compare.System (connections are per test).
func (s *System) Close() error { return nil }

var _ compare.System = (*System)(nil)

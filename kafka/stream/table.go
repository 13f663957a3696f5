package stream

// The table of the stream–table join of the paper's §6 ("joining each message with records in a secondary
// store"): a topic read as a table, the latest value per key. Every partition of the topic is read from its
// earliest offset with the consumer's PartitionIterator (paper §3.1: the consumer owns its position, so a table
// is rebuilt from the topic whenever it is opened: the topic is the table's changelog). OpenTable returns once
// each partition has been read up to the end it had when OpenTable started; after that the table follows the
// topic as it grows, a partition per goroutine, until Close. A key's values are in order only within one
// partition (§3.3), so a table topic is published keyed (the producer's key hash): every value of a key is in one
// partition and the latest one wins.
//
// A key's value is its latest message, whole. A message whose key cannot be found is counted
// (TableStats.Skipped), never applied; a message that is nothing but its key (spaces aside) deletes the key.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// ErrTable: a table that cannot be opened or followed (no partition, a broker that is not registered, a
// partition that cannot be read).
var ErrTable = errors.New("stream: table")

// TableConfig describes a table.
type TableConfig struct {
	// Topic is the table's topic.
	Topic string
	// Key finds a message's key (a message that is only its key deletes it). Required.
	Key func(payload []byte) ([]byte, error)
	// FetchSize is the fetch size per partition (0: consumer.DefaultFetchSize).
	FetchSize int32
	// Timeout bounds each request to a broker (0: 30 s).
	Timeout time.Duration
	// Logger receives the table's warnings (nil: slog.Default()).
	Logger *slog.Logger
}

// TableStats counts what a table has read.
type TableStats struct {
	Applied, Deleted, Skipped int64
	Keys                      int
	// Offsets is how far each partition ("<brokerid>-<partition>") has been read.
	Offsets map[string]int64
}

// Table is a topic read as a key → latest value map. It is safe for concurrent use: the readers of the topic
// update it while tasks look keys up.
type Table struct {
	cfg    TableConfig
	log    *slog.Logger
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.RWMutex
	m       map[string][]byte
	stats   TableStats
	changed chan struct{} // closed and replaced at every applied message
	err     error         // the first reader's failure
}

// OpenTable reads cfg.Topic's partitions as d lists them now and returns once each has been read to the end
// it had at the start; then the table keeps following them until Close (or ctx ends).
func OpenTable(ctx context.Context, d *zk.Discovery, cfg TableConfig) (*Table, error) {
	if cfg.Key == nil {
		return nil, fmt.Errorf("%w %q: no Key function", ErrTable, cfg.Topic)
	}
	if err := topic.Validate(cfg.Topic); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTable, err)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	parts, err := d.Partitions(cfg.Topic)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrTable, cfg.Topic, err)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w %q: no partition (no live broker)", ErrTable, cfg.Topic)
	}
	ctx, cancel := context.WithCancel(ctx)
	t := &Table{cfg: cfg, log: log.With("component", "stream", "table", cfg.Topic), cancel: cancel,
		m: map[string][]byte{}, changed: make(chan struct{}), stats: TableStats{Offsets: map[string]int64{}}}
	loaded := make(chan error, len(parts))
	for _, p := range parts {
		b, ok := d.Broker(p.BrokerID)
		if !ok {
			cancel()
			t.wg.Wait()
			return nil, fmt.Errorf("%w %q: partition %s on broker %d, which is not registered", ErrTable, cfg.Topic, p.Name(), p.BrokerID)
		}
		t.wg.Add(1)
		go t.follow(ctx, b.Addr(), p, loaded)
	}
	for range parts {
		if err := <-loaded; err != nil {
			t.Close()
			return nil, err
		}
	}
	return t, nil
}

// follow reads one partition from its earliest offset, reports on loaded when it has reached the end it had
// at the start, and goes on until ctx ends.
func (t *Table) follow(ctx context.Context, addr string, p zk.Partition, loaded chan<- error) {
	defer t.wg.Done()
	name := p.Name()
	c := consumer.NewSimpleConsumer(addr, t.cfg.Timeout)
	defer c.Close()
	fail := func(err error) {
		err = fmt.Errorf("%w %q partition %s at %s: %w", ErrTable, t.cfg.Topic, name, addr, err)
		if loaded != nil {
			loaded <- err
			return
		}
		t.mu.Lock()
		if t.err == nil {
			t.err = err
		}
		t.mu.Unlock()
		t.log.Warn("table stopped following a partition", "partition", name, "err", err)
	}
	start, err := c.EarliestOffset(t.cfg.Topic, int32(p.Partition))
	if err != nil {
		fail(err)
		return
	}
	end, err := c.LatestOffset(t.cfg.Topic, int32(p.Partition))
	if err != nil {
		fail(err)
		return
	}
	t.setOffset(name, start)
	it := consumer.NewPartitionIterator(c, t.cfg.Topic, int32(p.Partition), start, t.cfg.FetchSize)
	if start >= end {
		loaded <- nil
		loaded = nil
	}
	for it.Next(ctx) {
		t.apply(name, it.Payload(), it.NextOffset())
		if loaded != nil && it.NextOffset() >= end {
			loaded <- nil
			loaded = nil
		}
	}
	if ctx.Err() != nil {
		if loaded != nil {
			loaded <- fmt.Errorf("%w %q partition %s: %w", ErrTable, t.cfg.Topic, name, ctx.Err())
		}
		return
	}
	fail(it.Err())
}

func (t *Table) setOffset(name string, off int64) {
	t.mu.Lock()
	t.stats.Offsets[name] = off
	t.mu.Unlock()
}

// apply puts one message of partition name into the table.
func (t *Table) apply(name string, payload []byte, next int64) {
	key, err := t.cfg.Key(payload)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.stats.Offsets[name] = next
	switch {
	case err != nil:
		t.stats.Skipped++
		t.log.Debug("table message without a key", "partition", name, "err", err)
	default:
		if len(bytes.TrimSpace(payload)) == len(key) {
			delete(t.m, string(key))
			t.stats.Deleted++
		} else {
			t.m[string(key)] = joinClone(payload)
			t.stats.Applied++
		}
	}
	close(t.changed)
	t.changed = make(chan struct{})
}

// Get returns a copy of key's latest value.
func (t *Table) Get(key []byte) ([]byte, bool) {
	t.mu.RLock()
	v, ok := t.m[string(key)]
	t.mu.RUnlock()
	if !ok {
		return nil, false
	}
	return joinClone(v), true
}

// AppendValue appends key's latest value to dst, without allocating when dst has room.
func (t *Table) AppendValue(dst, key []byte) ([]byte, bool) {
	t.mu.RLock()
	v, ok := t.m[string(key)]
	if ok {
		dst = append(dst, v...)
	}
	t.mu.RUnlock()
	return dst, ok
}

// Rows returns a copy of the whole table, key → latest value.
func (t *Table) Rows() map[string][]byte {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string][]byte, len(t.m))
	for k, v := range t.m {
		out[k] = joinClone(v)
	}
	return out
}

// Stats returns the table's counters and offsets.
func (t *Table) Stats() TableStats {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.stats
	s.Keys = len(t.m)
	s.Offsets = make(map[string]int64, len(t.stats.Offsets))
	for k, v := range t.stats.Offsets {
		s.Offsets[k] = v
	}
	return s
}

// Err is the first failure of a partition's reader after the table was loaded (nil: all following).
func (t *Table) Err() error {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.err
}

// WaitUntil blocks until cond holds for the table's stats, ctx ends or a reader fails.
func (t *Table) WaitUntil(ctx context.Context, cond func(TableStats) bool) error {
	for {
		t.mu.RLock()
		ch, err := t.changed, t.err
		t.mu.RUnlock()
		if err != nil {
			return err
		}
		if cond(t.Stats()) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close stops following the topic.
func (t *Table) Close() error {
	t.cancel()
	t.wg.Wait()
	return nil
}

// Package mirror copies topics from one Kafka cluster to another: the paper's
// §4 "embedded consumers" with which the cluster of the offline data center
// pulls from the clusters of the live data centers, as Kafka 0.7.1's
// MirrorMaker tool runs them.
//
// A Maker is a consumer group on each source cluster (one per consumer
// config, all reading the same topics) and a pool of producers to the target.
// The topics are those of the source clusters whose names match the
// whitelist (or do not match the blacklist); the Maker watches the source's
// topic registry (docs/PROTOCOL.md §5) and takes new topics as they appear.
// On the target a topic is created by its first produce (0.7's way), so
// topics appear on the target as they appear on the source. Messages are
// re-produced in random partitions of the target, as 0.7 did: the source's
// partitioning is not kept, only each message's bytes (a compressed wrapper
// is unpacked and its messages sent again, recompressed if the producer
// config says so).
//
// Delivery is at-least-once and the Maker commits only what it has sent:
// offsets are committed by the Maker (autocommit is turned off), at the
// consumer config's autocommit.interval.ms, while every stream is between two
// batches; a stream takes its next batch only after the producer has written
// the last one. Killed at any moment, a restarted Maker resends at most what
// it had sent since its last commit: duplicates, never a gap (the audit,
// package audit, counts both). One exception belongs to the group consumer:
// a rebalance (another Maker of the group joining or leaving) commits what
// the streams have handed out, which may include one batch not yet sent; a
// Maker killed in that instant can lose that batch.
package mirror

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// ErrBadConfig is wrapped by every configuration error.
var ErrBadConfig = errors.New("mirror: bad configuration")

// Config of a Maker.
type Config struct {
	// Sources: one group consumer config per source cluster (--consumer.config).
	Sources []consumer.GroupConfig
	// Target is the producer config of the target cluster (--producer.config).
	Target producer.Config
	// Whitelist or Blacklist (exactly one) selects the topics by name (Go
	// regexp syntax, matched against the whole name).
	Whitelist, Blacklist string
	// NumStreams is the number of streams per topic (--num.streams, 1).
	NumStreams int
	// NumProducers is the number of producers to the target (--num.producers, 1).
	NumProducers int
	// BatchSize is the most messages a stream sends in one request (200).
	BatchSize int
	Logger    *slog.Logger
}

// Filter compiles the topic filter: exactly one of whitelist and blacklist,
// each a regular expression that must match the whole topic name. A comma
// means "or", as in 0.7's MirrorMaker (which replaced commas with '|'), so
// 0.7.0's comma lists of topics work unchanged.
func Filter(whitelist, blacklist string) (func(string) bool, error) {
	if (whitelist == "") == (blacklist == "") {
		return nil, fmt.Errorf("%w: give exactly one of --whitelist and --blacklist", ErrBadConfig)
	}
	expr, keep := whitelist, true
	if blacklist != "" {
		expr, keep = blacklist, false
	}
	re, err := regexp.Compile("^(?:" + strings.ReplaceAll(expr, ",", "|") + ")$")
	if err != nil {
		return nil, fmt.Errorf("%w: topic filter %q is not a valid regular expression: %v", ErrBadConfig, expr, err)
	}
	return func(topic string) bool { return re.MatchString(topic) == keep }, nil
}

// Maker runs the mirror.
type Maker struct {
	cfg       Config
	keep      func(string) bool
	log       *slog.Logger
	producers []*producer.SyncProducer
	// abandoned is set when a batch could not be sent before shutdown: its
	// offsets were already handed out, so nothing more is committed.
	abandoned atomic.Bool
	mu        sync.Mutex
	stats     map[string]int64
}

// New checks cfg and connects the producers to the target.
func New(cfg Config) (*Maker, error) {
	keep, err := Filter(cfg.Whitelist, cfg.Blacklist)
	if err != nil {
		return nil, err
	}
	if len(cfg.Sources) == 0 {
		return nil, fmt.Errorf("%w: no source consumer config", ErrBadConfig)
	}
	if cfg.NumStreams < 1 || cfg.NumProducers < 1 {
		return nil, fmt.Errorf("%w: --num.streams %d and --num.producers %d must be at least 1", ErrBadConfig, cfg.NumStreams, cfg.NumProducers)
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = 200
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	for i, s := range cfg.Sources {
		if s.GroupID == "" || s.ZkConnect == "" {
			return nil, fmt.Errorf("%w: consumer config %d needs groupid and zk.connect", ErrBadConfig, i+1)
		}
	}
	m := &Maker{cfg: cfg, keep: keep, log: cfg.Logger.With("component", "mirror"), stats: map[string]int64{}}
	for i := 0; i < cfg.NumProducers; i++ {
		p, err := producer.NewSync(cfg.Target)
		if err != nil {
			m.closeProducers()
			return nil, fmt.Errorf("mirror: producer to the target: %w", err)
		}
		m.producers = append(m.producers, p)
	}
	return m, nil
}

func (m *Maker) closeProducers() {
	for _, p := range m.producers {
		p.Close()
	}
}

// Sent returns the number of messages sent to the target so far, per topic.
func (m *Maker) Sent() map[string]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.stats))
	for k, v := range m.stats {
		out[k] = v
	}
	return out
}

// Run mirrors until ctx ends, then commits what it sent and returns nil; it
// returns early with the error of a source that cannot be read.
func (m *Maker) Run(ctx context.Context) error {
	defer m.closeProducers()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(m.cfg.Sources))
	for i := range m.cfg.Sources {
		go func(i int) { errs <- m.runSource(ctx, i) }(i)
	}
	var first error
	for range m.cfg.Sources {
		if err := <-errs; err != nil && first == nil {
			first = err
			cancel()
		}
	}
	return first
}

// runSource mirrors one source cluster: it (re)creates the group consumer
// whenever the set of matching topics changes.
func (m *Maker) runSource(ctx context.Context, idx int) error {
	gc := m.cfg.Sources[idx]
	gc.AutoCommitEnable = false // the Maker commits what it has sent
	if gc.ConsumerTimeoutMs < 0 || gc.ConsumerTimeoutMs > 100 {
		gc.ConsumerTimeoutMs = 100 // so an idle stream lets the committer in
	}
	commitEvery := m.cfg.Sources[idx].AutoCommitInterval
	if commitEvery <= 0 {
		commitEvery = 10 * time.Second
	}
	log := m.log.With("source", gc.ZkConnect, "group", gc.GroupID)
	zc, err := zk.Connect(gc.ZkConnect, gc.ZkSessionTimeout)
	if err != nil {
		return fmt.Errorf("mirror: source %s: %w", gc.ZkConnect, err)
	}
	defer zc.Close()
	var current []string
	for {
		topics, changed, err := m.matchingTopics(zc)
		if err != nil {
			return fmt.Errorf("mirror: source %s: %w", gc.ZkConnect, err)
		}
		if len(topics) == 0 {
			log.Info("mirror: no matching topic on the source yet")
			select {
			case <-ctx.Done():
				return nil
			case <-changed:
				continue
			}
		}
		if !slices.Equal(topics, current) {
			log.Info("mirror: mirroring", "topics", topics)
		}
		current = topics
		done, err := m.mirrorTopics(ctx, zc, gc, topics, changed, commitEvery, log)
		if err != nil || done {
			return err
		}
	}
}

// matchingTopics lists the source's registered topics that the filter keeps,
// with a watch that fires when the list changes.
func (m *Maker) matchingTopics(zc *zk.Client) ([]string, <-chan struct{}, error) {
	if err := zc.EnsurePath(zk.BrokerTopicsPath); err != nil {
		return nil, nil, err
	}
	names, w, err := zc.ChildrenW(zk.BrokerTopicsPath)
	if err != nil {
		return nil, nil, err
	}
	var out []string
	for _, n := range names {
		if m.keep(n) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	ch := make(chan struct{})
	go func() {
		<-w
		close(ch)
	}()
	return out, ch, nil
}

// mirrorTopics runs one group consumer over topics until ctx ends (done) or
// the source's topic list changes. It commits what was sent before it
// returns.
func (m *Maker) mirrorTopics(ctx context.Context, zc *zk.Client, gc consumer.GroupConfig, topics []string, changed <-chan struct{},
	commitEvery time.Duration, log *slog.Logger) (done bool, err error) {
	g, err := consumer.NewGroupConsumer(gc)
	if err != nil {
		return false, fmt.Errorf("mirror: consumer of %s: %w", gc.ZkConnect, err)
	}
	want := map[string]int{}
	for _, t := range topics {
		want[t] = m.cfg.NumStreams
	}
	streams, err := g.CreateMessageStreams(want)
	if err != nil {
		g.Close()
		return false, fmt.Errorf("mirror: streams of %v on %s: %w", topics, gc.ZkConnect, err)
	}
	// gate: a stream holds it (shared) from taking a batch until the
	// producer has written it; the committer takes it alone.
	var gate sync.RWMutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	n := 0
	for _, t := range topics {
		for _, s := range streams[t] {
			wg.Add(1)
			go func(s *consumer.Stream, p *producer.SyncProducer) {
				defer wg.Done()
				m.pump(ctx, s, p, &gate, stop, log)
			}(s, m.producers[n%len(m.producers)])
			n++
		}
	}
	commit := func() {
		gate.Lock()
		if m.abandoned.Load() {
			// fall through to Unlock: an unsent batch's offset must not be committed
		} else if err := g.CommitOffsets(); err != nil {
			log.Warn("mirror: commit failed; retried at the next one", "err", err)
		}
		gate.Unlock()
	}
	tick := time.NewTicker(commitEvery)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			commit()
			continue
		case <-ctx.Done():
			done = true
		case <-changed:
			// Another topic registered: start over only if the filter
			// keeps it, since a new consumer means a rebalance.
			now, again, err := m.matchingTopics(zc)
			if err == nil && slices.Equal(now, topics) {
				changed = again
				continue
			}
		}
		break
	}
	gate.Lock()
	close(stop)
	if m.abandoned.Load() {
		log.Warn("mirror: a batch could not be sent before shutdown; its offsets stay uncommitted and it will be sent again")
	} else if err := g.CommitOffsets(); err != nil {
		log.Warn("mirror: final commit failed", "err", err)
	}
	g.Close()
	gate.Unlock()
	wg.Wait()
	return done, nil
}

// pump moves one stream's messages to the target in batches.
func (m *Maker) pump(ctx context.Context, s *consumer.Stream, p *producer.SyncProducer, gate *sync.RWMutex, stop <-chan struct{}, log *slog.Logger) {
	var arena []byte
	var ends []int
	var batch [][]byte
	for {
		gate.RLock()
		select {
		case <-stop:
			gate.RUnlock()
			return
		default:
		}
		arena, ends = arena[:0], ends[:0]
		ok := s.Next()
		for ok {
			arena = append(arena, s.Message().Payload...)
			ends = append(ends, len(arena))
			if len(ends) >= m.cfg.BatchSize {
				break
			}
			ok = s.Poll()
		}
		if len(ends) > 0 {
			batch = batch[:0]
			start := 0
			for _, e := range ends {
				batch = append(batch, arena[start:e])
				start = e
			}
			m.send(ctx, p, s.Topic(), batch, log)
		}
		err := s.Err()
		gate.RUnlock()
		switch {
		case err == nil && len(ends) == 0:
			// Poll found nothing and Next ended: the consumer is closed.
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		case errors.Is(err, consumer.ErrConsumerTimeout):
		case err != nil && !errors.Is(err, consumer.ErrConsumerTimeout):
			log.Warn("mirror: stream error", "topic", s.Topic(), "err", err)
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// send writes one batch to the target, retrying until it is written or ctx
// ends: a batch is never dropped silently, since its offsets would be
// committed next (see abandoned).
func (m *Maker) send(ctx context.Context, p *producer.SyncProducer, topic string, batch [][]byte, log *slog.Logger) {
	for attempt := 0; ; attempt++ {
		err := p.Send(topic, -1, batch...)
		if err == nil {
			break
		}
		if attempt%10 == 0 {
			log.Warn("mirror: send to the target failed; retrying", "topic", topic, "messages", len(batch), "err", err)
		}
		select {
		case <-ctx.Done():
			m.abandoned.Store(true)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
	m.mu.Lock()
	m.stats[topic] += int64(len(batch))
	m.mu.Unlock()
}

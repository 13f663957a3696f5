package consumer

// The high-level consumer of paper §3.2: consumers that share a group id divide the partitions of their topics
// among themselves without any master, through ZooKeeper. This file holds its life cycle (start, streams,
// close); group_rebalance.go the rebalance of Algorithm 1 against the registries, group_watch.go what
// triggers it, fetcher.go the pulling and stream.go the iterators the application reads.

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// GroupConsumer is one member of a consumer group (0.7's ZookeeperConsumerConnector). It registers itself in
// the consumer registry, takes its share of every subscribed topic's partitions whenever brokers or consumers
// come or go, pulls them and hands their messages out through Streams, and commits how far it got to the
// offset registry.
type GroupConsumer struct {
	cfg GroupConfig
	id  string // "<group>_<host>-<ms>-<random>"
	zk  *zk.Client
	log *slog.Logger

	mu       sync.Mutex            // serialises rebalances, commits and Close
	topics   map[string]int        // subscription: topic → number of streams
	streams  map[string][]*Stream  // topic → its streams, index i has id "<id>-<i>"
	byID     map[[2]string]*Stream // (topic, stream id) → stream
	owned    []*ownedPartition     // partitions owned in the current generation
	fetchers []*fetcher
	gen      uint64
	closed   bool

	trigger  chan struct{} // a pending rebalance request (capacity 1: requests coalesce)
	changed  chan struct{} // what Owned returns has changed (capacity 1: notifications coalesce)
	relayout chan struct{} // a replicated partition's leader moved: lay the fetchers out again (replicated.go)

	relayoutMu    sync.Mutex
	lastRelayout  time.Time
	relayoutLater bool // a request is waiting for fetcher.backoff.ms to pass
	closing       chan struct{}
	wg            sync.WaitGroup
	endOnce       sync.Once
}

// NewGroupConsumer connects to ZooKeeper and returns a consumer that is not yet a member of its group:
// CreateMessageStreams makes it one.
func NewGroupConsumer(cfg GroupConfig) (*GroupConsumer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	id, err := consumerID(cfg)
	if err != nil {
		return nil, err
	}
	base := cfg.Logger
	if base == nil {
		base = slog.Default()
	}
	base = base.With("group", cfg.GroupID, "consumer", id)
	// The ZooKeeper session logs with component=zk, the group with component=consumer.
	c, err := zk.Open(cfg.ZkConnect, zk.Options{SessionTimeout: cfg.ZkSessionTimeout,
		ConnectTimeout: cfg.ZkConnectionTimeout, Logger: base})
	if err != nil {
		return nil, fmt.Errorf("consumer: group %q: %w", cfg.GroupID, err)
	}
	return &GroupConsumer{cfg: cfg, id: id, zk: c, log: base.With("component", "consumer"), trigger: make(chan struct{}, 1), relayout: make(chan struct{}, 1),
		changed: make(chan struct{}, 1),
		closing: make(chan struct{})}, nil
}

// consumerID is 0.7's "<group>_<host>-<ms timestamp>-<random>", or "<group>_<consumerid>" when configured.
func consumerID(cfg GroupConfig) (string, error) {
	if cfg.ConsumerID != "" {
		return cfg.GroupID + "_" + cfg.ConsumerID, nil
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", fmt.Errorf("consumer: random consumer id: %w", err)
	}
	return cfg.GroupID + "_" + host + "-" + strconv.FormatInt(time.Now().UnixMilli(), 10) + "-" +
		hex.EncodeToString(r[:]), nil
}

// ID is the consumer's id in the consumer registry.
func (g *GroupConsumer) ID() string { return g.id }

// Config is the consumer's configuration.
func (g *GroupConsumer) Config() GroupConfig { return g.cfg }

// CreateMessageStreams subscribes to topics, topic → number of streams, and returns the streams (paper §3:
// "to subscribe to a topic, a consumer first creates one or more message streams for the topic"). It registers
// the consumer in /consumers/<group>/ids/<consumerid> with the JSON map of its subscription, sets the watches
// and runs the first rebalance before returning; if that rebalance fails, so does the call. It can be called
// once.
func (g *GroupConsumer) CreateMessageStreams(topics map[string]int) (map[string][]*Stream, error) {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil, ErrGroupClosed
	}
	if g.topics != nil {
		g.mu.Unlock()
		return nil, fmt.Errorf("consumer: CreateMessageStreams called twice on consumer %s", g.id)
	}
	if len(topics) == 0 {
		g.mu.Unlock()
		return nil, fmt.Errorf("consumer: CreateMessageStreams on consumer %s: no topic", g.id)
	}
	g.topics = map[string]int{}
	g.streams = map[string][]*Stream{}
	g.byID = map[[2]string]*Stream{}
	out := map[string][]*Stream{}
	for t, n := range topics {
		if n < 1 || t == "" || t == "." || t == ".." || strings.ContainsAny(t, "/\x00") {
			g.topics = nil
			g.mu.Unlock()
			return nil, fmt.Errorf("consumer: CreateMessageStreams: topic %q with %d streams", t, n)
		}
		g.topics[t] = n
		for i := range n {
			s := newStream(g.id+"-"+strconv.Itoa(i), t, g.cfg.QueuedChunksMax,
				time.Duration(g.cfg.ConsumerTimeoutMs)*time.Millisecond)
			g.streams[t] = append(g.streams[t], s)
			g.byID[[2]string{t, s.id}] = s
		}
		out[t] = g.streams[t]
	}
	err := g.register()
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}

	// §3.2: "each consumer registers a Zookeeper watcher on both the broker registry and the consumer registry".
	g.startWatches()
	if err := g.syncedRebalance("start"); err != nil {
		g.fail(err)
		return nil, err
	}
	g.wg.Add(1)
	go g.rebalanceLoop()
	if g.cfg.AutoCommitEnable {
		g.wg.Add(1)
		go g.autoCommit()
	}
	return out, nil
}

// register writes the consumer's ephemeral node in the consumer registry: its data is the JSON map topic →
// number of streams (docs/PROTOCOL.md §5), which is how every other member learns this consumer's stream ids.
func (g *GroupConsumer) register() error {
	data, _ := json.Marshal(g.topics) // map keys come out sorted
	err := g.zk.CreateEphemeral(zk.ConsumerIDPath(g.cfg.GroupID, g.id), data)
	if errors.Is(err, zk.ErrNodeExists) {
		// A node left by this session (a re-registration after a lost connection); make its data ours.
		err = g.zk.Set(zk.ConsumerIDPath(g.cfg.GroupID, g.id), data)
	}
	if err != nil {
		return fmt.Errorf("consumer: register %s in group %q: %w", g.id, g.cfg.GroupID, err)
	}
	return nil
}

// autoCommit commits offsets every autocommit.interval.ms (autocommit.enable).
func (g *GroupConsumer) autoCommit() {
	defer g.wg.Done()
	t := time.NewTicker(g.cfg.AutoCommitInterval)
	defer t.Stop()
	for {
		select {
		case <-g.closing:
			return
		case <-t.C:
			if err := g.CommitOffsets(); err != nil && !errors.Is(err, ErrGroupClosed) {
				g.log.Warn("autocommit failed; will retry", "err", err)
			}
		}
	}
}

// Close leaves the group cleanly: it ends the streams, commits the offsets of what they handed out, releases
// the partitions it owns, removes its node from the consumer registry (the others then rebalance and take its
// partitions) and closes the ZooKeeper session.
func (g *GroupConsumer) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	g.closed = true
	g.mu.Unlock()
	close(g.closing)
	g.wg.Wait()

	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopFetchers()
	g.endStreams(nil)
	var errs []error
	if err := g.commitLocked(); err != nil {
		errs = append(errs, err)
	}
	if err := g.releaseLocked(); err != nil {
		errs = append(errs, err)
	}
	if g.topics != nil {
		if err := g.zk.Delete(zk.ConsumerIDPath(g.cfg.GroupID, g.id)); err != nil {
			errs = append(errs, err)
		}
	}
	g.zk.Close()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("consumer: close %s: %w", g.id, err)
	}
	return nil
}

// endStreams ends every stream with final (nil: a clean end).
func (g *GroupConsumer) endStreams(final error) {
	g.endOnce.Do(func() {
		for _, ss := range g.streams {
			for _, s := range ss {
				s.end(final)
			}
		}
	})
}

// fail gives up after a failed rebalance: the error is logged and every stream ends with it (docs/PROTOCOL.md §6: running
// out of retries is a clear error, not a silent stall). The consumer also leaves the group, releasing what it
// owns and removing its registration, so that the rest of the group can divide the partitions without it.
func (g *GroupConsumer) fail(err error) {
	g.log.Error("giving up; streams end with this error", "err", err)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopFetchers()
	g.endStreams(err)
	_ = g.commitLocked()
	_ = g.releaseLocked()
	_ = g.zk.Delete(zk.ConsumerIDPath(g.cfg.GroupID, g.id))
}

// Owned returns, per topic, the sorted names of the partitions this consumer owns now.
func (g *GroupConsumer) Owned() map[string][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string][]string{}
	for _, p := range g.owned {
		out[p.topic] = append(out[p.topic], p.name)
	}
	for _, v := range out {
		sort.Strings(v)
	}
	return out
}

// OwnershipChanges receives a value after what Owned returns has changed: after a rebalance took this
// consumer's partitions (step 2 of Algorithm 1, or giving up) and after one gave it its new share.
// Notifications coalesce (the channel holds one): on each, call Owned for the current set.
func (g *GroupConsumer) OwnershipChanges() <-chan struct{} { return g.changed }

// ownershipChanged notifies OwnershipChanges without blocking.
func (g *GroupConsumer) ownershipChanged() {
	select {
	case g.changed <- struct{}{}:
	default:
	}
}

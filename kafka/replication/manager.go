package replication

import (
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Config holds the replication settings of server.properties, with Kafka 0.8's names and defaults
// (docs/PROTOCOL.md §10); the property each field comes from is named next to it.
type Config struct {
	BrokerID                int32         // brokerid
	NumReplicaFetchers      int           // num.replica.fetchers: fetch loops per leader broker
	FetchMaxBytes           int           // replica.fetch.max.bytes: per partition and fetch
	FetchWaitMax            time.Duration // replica.fetch.wait.max.ms: how long a leader holds a fetch with nothing to send
	FetchMinBytes           int           // replica.fetch.min.bytes: what a leader waits for before answering
	LagTimeMax              time.Duration // replica.lag.time.max.ms: not caught up for this long leaves the ISR
	LagMaxMessages          int           // replica.lag.max.messages: this many messages behind leaves the ISR (0: off)
	HWCheckpointInterval    time.Duration // replica.high.watermark.checkpoint.interval.ms
	ControllerSocketTimeout time.Duration // controller.socket.timeout.ms
	AutoLeaderRebalance     bool          // auto.leader.rebalance.enable
	LeaderImbalanceInterval time.Duration // leader.imbalance.check.interval.seconds
	UncleanLeaderElection   bool          // unclean.leader.election.enable
	MinInsyncReplicas       int           // min.insync.replicas
	Logger                  *slog.Logger  // nil: slog.Default()
	// BrokerEpoch returns the epoch of this broker's current registration (zk.BrokerRegistry.Epoch); nil
	// or 0: not known, and LEADER_AND_ISR's broker epoch is not checked.
	BrokerEpoch func() int64
}

// DefaultConfig returns 0.8's defaults, and unclean.leader.election.enable=false as Kafka has had since 0.11.
func DefaultConfig() Config {
	return Config{
		NumReplicaFetchers:      1,
		FetchMaxBytes:           1 << 20,
		FetchWaitMax:            500 * time.Millisecond,
		FetchMinBytes:           1,
		LagTimeMax:              10 * time.Second,
		LagMaxMessages:          4000,
		HWCheckpointInterval:    5 * time.Second,
		ControllerSocketTimeout: 30 * time.Second,
		LeaderImbalanceInterval: 300 * time.Second,
		MinInsyncReplicas:       1,
	}
}

// Manager is a broker's replication: its replicas of replicated partitions, the fetchers that feed its
// followers, the ISR check of the partitions it leads, and its candidacy for controller. It shares the
// broker's ZooKeeper session, so the broker's death ends its controllership too.
type Manager struct {
	cfg  Config
	zk   Store
	logs *log.Manager
	lg   *slog.Logger

	mu        sync.RWMutex
	parts     map[TopicPartition]*Partition
	kinds     map[string]bool // topics known to be replicated (true) or to be 0.7's here (false)
	ctrlEpoch int32           // the newest controller epoch seen
	fetchers  map[fetcherKey]*fetcher
	closed    bool

	stop chan struct{}
	wg   sync.WaitGroup
}

type fetcherKey struct {
	leader int32
	index  int
}

// New loads this broker's replicas (the partition directories holding a leader-epoch-checkpoint), starts
// the ISR check and the high-watermark checkpoint, and enters the controller election. Each replica waits
// for the controller's LEADER_AND_ISR before it leads or follows.
func New(cfg Config, c Store, logs *log.Manager) (*Manager, error) {
	d := DefaultConfig()
	if cfg.NumReplicaFetchers < 1 {
		cfg.NumReplicaFetchers = d.NumReplicaFetchers
	}
	if cfg.FetchMaxBytes <= 0 {
		cfg.FetchMaxBytes = d.FetchMaxBytes
	}
	if cfg.LagTimeMax <= 0 {
		cfg.LagTimeMax = d.LagTimeMax
	}
	if cfg.HWCheckpointInterval <= 0 {
		cfg.HWCheckpointInterval = d.HWCheckpointInterval
	}
	if cfg.ControllerSocketTimeout <= 0 {
		cfg.ControllerSocketTimeout = d.ControllerSocketTimeout
	}
	if cfg.MinInsyncReplicas < 1 {
		cfg.MinInsyncReplicas = 1
	}
	lg := cfg.Logger
	if lg == nil {
		lg = slog.Default()
	}
	m := &Manager{cfg: cfg, zk: c, logs: logs, lg: lg.With("component", "replication", "broker", cfg.BrokerID),
		parts: map[TopicPartition]*Partition{}, kinds: map[string]bool{}, fetchers: map[fetcherKey]*fetcher{},
		stop: make(chan struct{})}
	hws, err := readHWCheckpoint(logs.Dir())
	if err != nil {
		m.lg.Warn("replication: ignoring the high-watermark checkpoint", "err", err)
		hws = map[TopicPartition]int64{}
	}
	for _, r := range logs.All() {
		ec, err := loadEpochs(r.Log.Dir(), false)
		if err != nil {
			continue // a 0.7 partition (or a damaged checkpoint, logged by loadEpochs' caller below)
		}
		tp := TopicPartition{Topic: r.Topic, Partition: int32(r.Partition)}
		m.parts[tp] = newPartition(m, tp, r.Log, ec, hws[tp])
		m.kinds[r.Topic] = true
	}
	if len(m.parts) > 0 {
		m.lg.Info("replication: loaded replicas", "partitions", len(m.parts))
	}
	m.wg.Add(3)
	go m.isrLoop()
	go m.checkpointLoop()
	go m.electionLoop()
	return m, nil
}

// NewOnRegistrar is New on the ZooKeeper session of a broker's registrar, if it has one (zk.BrokerRegistry
// does: its Client method); otherwise it returns nil, and the broker has no replicas. The broker calls this
// so that it does not depend on package zk itself.
func NewOnRegistrar(reg any, cfg Config, logs *log.Manager) (*Manager, error) {
	zc, ok := reg.(interface{ Client() *zk.Client })
	if !ok {
		return nil, nil
	}
	if e, ok := reg.(interface{ Epoch() int64 }); ok && cfg.BrokerEpoch == nil {
		cfg.BrokerEpoch = e.Epoch
	}
	return New(cfg, zc.Client(), logs)
}

// Config is the manager's configuration.
func (m *Manager) Config() Config { return m.cfg }

// Partition returns this broker's replica of a partition, nil if it has none.
func (m *Manager) Partition(topic string, partition int32) *Partition {
	m.mu.RLock()
	p := m.parts[TopicPartition{Topic: topic, Partition: partition}]
	m.mu.RUnlock()
	return p
}

// Partitions lists this broker's replicas.
func (m *Manager) Partitions() []*Partition {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return slices.Collect(maps.Values(m.parts))
}

// Replicated reports whether topic is a replicated topic: it is known here, or ZooKeeper holds its replica
// assignment. The broker asks before it creates a partition on a first produce (a replicated topic never
// gets a 0.7 partition) and before it serves a topic it has no log of. Only a yes is remembered: a topic
// may be created later.
func (m *Manager) Replicated(topic string) bool {
	m.mu.RLock()
	kind, known := m.kinds[topic]
	m.mu.RUnlock()
	if known {
		return kind
	}
	// A 0.7 partition of the topic here (no leader-epoch-checkpoint) settles it without ZooKeeper, for good:
	// a name in use by a 0.7 topic cannot become replicated, and the produce path asks for every request
	// that names partition -1.
	for p := range m.logs.Partitions(topic) {
		if l, ok := m.logs.Get(topic, p); ok {
			if _, err := loadEpochs(l.Dir(), false); err != nil {
				m.mu.Lock()
				m.kinds[topic] = false
				m.mu.Unlock()
				return false
			}
		}
	}
	_, err := ReadAssignment(m.zk, topic)
	switch {
	case err == nil:
		m.mu.Lock()
		m.kinds[topic] = true
		m.mu.Unlock()
		return true
	case !errors.Is(err, ErrNotReplicated):
		m.lg.Warn("replication: cannot tell whether a topic is replicated; treating it as not", "topic", topic, "err", err)
	}
	return false
}

// brokerEpoch is this broker's current broker epoch, 0 when not known.
func (m *Manager) brokerEpoch() int64 {
	if m.cfg.BrokerEpoch == nil {
		return 0
	}
	return m.cfg.BrokerEpoch()
}

// HandleLeaderAndISR applies the controller's decisions for the partitions this broker replicates. A request
// from a controller older than the newest one seen is refused whole; a partition whose leader epoch is older
// than the one this broker has is refused alone.
func (m *Manager) HandleLeaderAndISR(req *protocol.LeaderAndISRRequest) (protocol.ErrorCode, []protocol.PartitionError) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return protocol.ErrBrokerNotAvailable, nil
	}
	if req.ControllerEpoch < m.ctrlEpoch {
		cur := m.ctrlEpoch
		m.mu.Unlock()
		m.lg.Warn("replication: refused LEADER_AND_ISR from a stale controller", "controller", req.ControllerID,
			"epoch", req.ControllerEpoch, "current", cur)
		return protocol.ErrStaleControllerEpoch, nil
	}
	m.ctrlEpoch = req.ControllerEpoch
	m.mu.Unlock()
	if own := m.brokerEpoch(); req.BrokerEpoch != 0 && own != 0 && req.BrokerEpoch < own {
		m.lg.Warn("replication: refused LEADER_AND_ISR made for an earlier registration of this broker",
			"controller", req.ControllerID, "brokerEpoch", req.BrokerEpoch, "current", own)
		return protocol.ErrStaleBrokerEpoch, nil
	}
	addrs := map[int32]protocol.BrokerAddr{}
	for _, b := range req.Brokers {
		addrs[b.ID] = b
	}
	out := make([]protocol.PartitionError, 0, len(req.Partitions))
	for _, s := range req.Partitions {
		code := m.apply(s, req.ControllerEpoch, addrs)
		out = append(out, protocol.PartitionError{Topic: s.Topic, Partition: s.Partition, Error: code})
	}
	return protocol.ErrNone, out
}

func (m *Manager) apply(s protocol.PartitionState, ctrlEpoch int32, addrs map[int32]protocol.BrokerAddr) protocol.ErrorCode {
	tp := TopicPartition{Topic: s.Topic, Partition: s.Partition}
	if !slices.Contains(s.Replicas, m.cfg.BrokerID) {
		m.lg.Warn("replication: LEADER_AND_ISR for a partition this broker does not replicate", "partition", tp.String(), "replicas", s.Replicas)
		return protocol.ErrUnknownTopicOrPartition
	}
	p, err := m.replica(tp)
	if err != nil {
		m.lg.Error("replication: cannot open replica", "partition", tp.String(), "err", err)
		return protocol.ErrUnknown
	}
	p.mu.Lock()
	curEpoch, curLeader, known := p.leaderEpoch, p.leader, p.leader >= 0 || p.isLeader.Load()
	p.mu.Unlock()
	if known && s.LeaderEpoch < curEpoch {
		m.lg.Warn("replication: refused a stale leader epoch", "partition", tp.String(), "epoch", s.LeaderEpoch, "current", curEpoch)
		return protocol.ErrStaleLeaderEpoch
	}
	if s.Leader == m.cfg.BrokerID {
		m.unfollow(tp)
		if err := p.becomeLeader(s, ctrlEpoch); errors.Is(err, ErrStaleEpoch) {
			m.lg.Warn("replication: refused to lead", "partition", tp.String(), "err", err)
			return protocol.ErrStaleLeaderEpoch
		} else if err != nil {
			m.lg.Error("replication: cannot become leader", "partition", tp.String(), "err", err)
			return protocol.ErrUnknown
		}
		m.lg.Info("replication: leading", "partition", tp.String(), "epoch", s.LeaderEpoch, "isr", s.ISR)
		return protocol.ErrNone
	}
	same := known && curLeader == s.Leader && curEpoch == s.LeaderEpoch && !p.isLeader.Load()
	p.becomeFollower(s, ctrlEpoch)
	if s.Leader < 0 {
		m.unfollow(tp)
		m.lg.Info("replication: partition has no leader", "partition", tp.String())
		return protocol.ErrNone
	}
	addr, ok := addrs[s.Leader]
	if !ok {
		m.lg.Warn("replication: LEADER_AND_ISR without the leader's address", "partition", tp.String(), "leader", s.Leader)
		return protocol.ErrBrokerNotAvailable
	}
	if !same || !m.following(tp, addr) {
		m.follow(p, addr)
		m.lg.Info("replication: following", "partition", tp.String(), "leader", s.Leader, "epoch", s.LeaderEpoch)
	}
	return protocol.ErrNone
}

// replica returns this broker's replica of tp, creating its log and epoch checkpoint on first use.
func (m *Manager) replica(tp TopicPartition) (*Partition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p := m.parts[tp]; p != nil {
		return p, nil
	}
	l, err := m.logs.GetOrCreateReplica(tp.Topic, int(tp.Partition))
	if err != nil {
		return nil, err
	}
	ec, err := loadEpochs(l.Dir(), true)
	if err != nil {
		return nil, err
	}
	p := newPartition(m, tp, l, ec, 0)
	m.parts[tp] = p
	m.kinds[tp.Topic] = true
	return p, nil
}

// follow hands tp to the fetcher for its leader (one of num.replica.fetchers, by the partition's hash); the
// fetcher first truncates it by leader epoch, then fetches.
func (m *Manager) follow(p *Partition, leader protocol.BrokerAddr) {
	m.unfollow(p.tp)
	h := fnv.New32a()
	h.Write([]byte(p.tp.String()))
	key := fetcherKey{leader: leader.ID, index: int(h.Sum32() % uint32(m.cfg.NumReplicaFetchers))}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	f := m.fetchers[key]
	if f != nil && f.leader != leader {
		f.close()
		f = nil
	}
	if f == nil {
		f = newFetcher(m, leader)
		m.fetchers[key] = f
	}
	f.add(p)
}

// unfollow takes tp away from whatever fetcher has it.
func (m *Manager) unfollow(tp TopicPartition) {
	m.mu.RLock()
	fs := make([]*fetcher, 0, len(m.fetchers))
	for _, f := range m.fetchers {
		fs = append(fs, f)
	}
	m.mu.RUnlock()
	for _, f := range fs {
		f.remove(tp)
	}
}

// following reports whether a fetcher for leader has tp.
func (m *Manager) following(tp TopicPartition, leader protocol.BrokerAddr) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	for k, f := range m.fetchers {
		if k.leader == leader.ID && f.leader == leader && f.has(tp) {
			return true
		}
	}
	return false
}

// EpochEnd answers an EPOCH_END_OFFSET request.
func (m *Manager) EpochEnd(req *protocol.EpochEndOffsetRequest) []protocol.EpochEnd {
	out := make([]protocol.EpochEnd, 0, len(req.Partitions))
	for _, q := range req.Partitions {
		e := protocol.EpochEnd{Topic: q.Topic, Partition: q.Partition, Epoch: -1, EndOffset: -1}
		switch p := m.Partition(q.Topic, q.Partition); {
		case p == nil:
			e.Error = protocol.ErrNotLeaderForPartition
		case req.ReplicaID == protocol.ControllerReplicaID:
			e.Epoch, e.EndOffset = p.OwnEpochEnd(q.Epoch)
		default:
			e.Epoch, e.EndOffset, e.Error = p.EpochEnd(q.Epoch)
		}
		out = append(out, e)
	}
	return out
}

// Brokers lists the live brokers by id, as Metadata names them.
func (m *Manager) Brokers() ([]protocol.BrokerAddr, error) {
	live, err := LiveBrokers(m.zk)
	if err != nil {
		return nil, err
	}
	return brokerAddrs(live), nil
}

func brokerAddrs(live map[int32]zk.Broker) []protocol.BrokerAddr {
	var out []protocol.BrokerAddr
	for _, id := range slices.Sorted(maps.Keys(live)) {
		b := live[id]
		out = append(out, protocol.BrokerAddr{ID: id, Host: b.Host, Port: int32(b.Port)})
	}
	return out
}

// Metadata answers a METADATA request from ZooKeeper, which holds the truth (0.8 answered from a cache the
// controller kept, which could lag it): the live brokers and, per topic asked (every replicated topic if
// none), its partitions' leaders, replicas and ISRs.
func (m *Manager) Metadata(topics []string) (*protocol.MetadataResponse, error) {
	live, err := LiveBrokers(m.zk)
	if err != nil {
		return nil, err
	}
	resp := &protocol.MetadataResponse{Brokers: brokerAddrs(live)}
	if len(topics) == 0 {
		if _, topics, err = ReplicatedTopics(m.zk); err != nil {
			return nil, err
		}
	}
	for _, t := range topics {
		tm := protocol.TopicMetadata{Topic: t}
		a, err := ReadAssignment(m.zk, t)
		if err != nil {
			if !errors.Is(err, ErrNotReplicated) && !errors.Is(err, ErrBadState) {
				return nil, err
			}
			tm.Error = protocol.ErrUnknownTopicOrPartition
			resp.Topics = append(resp.Topics, tm)
			continue
		}
		for p, rs := range a {
			pm := protocol.PartitionMetadata{Partition: int32(p), Leader: -1, Replicas: rs}
			if s, err := ReadState(m.zk, t, p); err == nil {
				pm.Leader, pm.LeaderEpoch, pm.ISR = s.Leader, s.LeaderEpoch, s.ISR
				if _, ok := live[s.Leader]; !ok {
					pm.Leader = -1
				}
			} else if !errors.Is(err, zk.ErrNoNode) {
				return nil, err
			}
			if pm.Leader < 0 {
				pm.Error = protocol.ErrLeaderNotAvailable
			}
			tm.Partitions = append(tm.Partitions, pm)
		}
		resp.Topics = append(resp.Topics, tm)
	}
	return resp, nil
}

// isrLoop shrinks the ISR of the partitions this broker leads (every half replica.lag.time.max.ms).
func (m *Manager) isrLoop() {
	defer m.wg.Done()
	t := time.NewTicker(max(m.cfg.LagTimeMax/2, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case now := <-t.C:
			for _, p := range m.Partitions() {
				out := p.laggards(now, m.cfg.LagTimeMax, m.cfg.LagMaxMessages)
				if len(out) == 0 {
					continue
				}
				m.changeISR(p, func(cur []int32) []int32 {
					var isr []int32
					for _, r := range cur {
						if !slices.Contains(out, r) {
							isr = append(isr, r)
						}
					}
					if slices.Equal(isr, cur) {
						return nil
					}
					return isr
				}, fmt.Sprintf("brokers %v fell behind (replica.lag.time.max.ms=%d, replica.lag.max.messages=%d)",
					out, m.cfg.LagTimeMax.Milliseconds(), m.cfg.LagMaxMessages))
			}
		}
	}
}

// checkpointLoop writes replication-offset-checkpoint every replica.high.watermark.checkpoint.interval.ms.
func (m *Manager) checkpointLoop() {
	defer m.wg.Done()
	t := time.NewTicker(m.cfg.HWCheckpointInterval)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
			m.checkpoint()
		}
	}
}

func (m *Manager) checkpoint() {
	hws := map[TopicPartition]int64{}
	for _, p := range m.Partitions() {
		hws[p.tp] = p.HighWatermark()
	}
	if len(hws) == 0 {
		return
	}
	if err := writeHWCheckpoint(m.logs.Dir(), hws); err != nil {
		m.lg.Warn("replication: high-watermark checkpoint failed", "err", err)
	}
}

// Close stops the fetchers, the controller and the loops, and checkpoints the high watermarks. The broker
// calls it before closing its logs.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	fs := m.fetchers
	m.fetchers = map[fetcherKey]*fetcher{}
	m.mu.Unlock()
	close(m.stop)
	for _, f := range fs {
		f.close()
	}
	m.wg.Wait()
	for _, p := range m.Partitions() {
		p.mu.Lock()
		if p.isLeader.Swap(false) {
			p.broadcastLocked()
		}
		p.mu.Unlock()
		p.notify()
	}
	m.checkpoint()
	return nil
}

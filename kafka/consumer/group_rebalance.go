package consumer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// registryView is what one rebalance attempt reads from ZooKeeper: the live brokers, each subscribed topic's
// partitions (P_T) and the stream ids of the group's consumers subscribed to it (C_T).
type registryView struct {
	brokers    map[int]zk.Broker
	partitions map[string][]string // topic → "<brokerid>-<partition>", or "<partition>" for a replicated topic
	streams    map[string][]string // topic → stream ids
	replicated map[string]bool     // topics with a replica assignment (docs/PROTOCOL.md §10)
}

// readRegistry reads the broker and consumer registries (§3.2: "By reading the broker and the consumer
// registry from Zookeeper, the consumer first computes the set (P_T) of partitions available for each
// subscribed topic T and the set (C_T) of consumers subscribing to T").
func (g *GroupConsumer) readRegistry() (*registryView, error) {
	v := &registryView{brokers: map[int]zk.Broker{}, partitions: map[string][]string{},
		streams: map[string][]string{}, replicated: map[string]bool{}}

	if err := g.readBrokers(v); err != nil {
		return nil, err
	}

	for topic := range g.topics {
		// docs/PROTOCOL.md §10: a replicated topic's partitions are its assignment's, named by number, whether
		// or not their leaders are alive (a leaderless partition is owned and waits for one).
		if data, err := g.zk.Get(zk.BrokerTopicPath(topic)); err == nil {
			if a, ok, err := zk.ParseReplicaAssignment(topic, data); err != nil {
				g.log.Warn("ignoring a bad replica assignment", "topic", topic, "err", err)
			} else if ok {
				v.replicated[topic] = true
				for p := range a {
					v.partitions[topic] = append(v.partitions[topic], strconv.Itoa(p))
				}
				continue
			}
		} else if !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		regs, err := zk.TopicRegistrations(g.zk, topic, g.log)
		if err != nil {
			return nil, err
		}
		for _, id := range slices.Sorted(maps.Keys(regs)) {
			if _, live := v.brokers[id]; !live {
				continue
			}
			for p := range regs[id] {
				v.partitions[topic] = append(v.partitions[topic], zk.PartitionName(id, p))
			}
		}
	}

	members, err := g.zk.Children(zk.ConsumerIDsPath(g.cfg.GroupID))
	if err != nil {
		return nil, err
	}
	for _, m := range members {
		data, err := g.zk.Get(zk.ConsumerIDPath(g.cfg.GroupID, m))
		if errors.Is(err, zk.ErrNoNode) {
			continue // the consumer left while we read
		} else if err != nil {
			return nil, err
		}
		var sub map[string]int
		if err := json.Unmarshal(data, &sub); err != nil {
			g.log.Warn("ignoring a consumer registration", "consumer", m, "data", string(data), "err", err)
			continue
		}
		for topic, n := range sub {
			if _, ours := g.topics[topic]; !ours {
				continue
			}
			for i := range n {
				v.streams[topic] = append(v.streams[topic], m+"-"+strconv.Itoa(i))
			}
		}
	}
	return v, nil
}

// readBrokers reads the broker registry into v.brokers.
func (g *GroupConsumer) readBrokers(v *registryView) error {
	brokers, err := zk.LiveBrokers(g.zk, g.log)
	if err != nil {
		return err
	}
	v.brokers = brokers
	return nil
}

// claim is one partition this consumer takes in an attempt, with the stream that will read it.
type claim struct {
	plannedClaim
	stream *Stream
}

// plannedClaim is one partition a rebalance gives one of this consumer's streams: its registry name, and the
// broker (-1: the leader of a replicated partition, looked up by the fetchers) and partition number it
// stands for.
type plannedClaim struct {
	topic, part, stream string
	brokerID            int
	partition           int32
	replicated          bool
}

// planRebalance is what a consumer decides in a rebalance (Algorithm 1, docs/PROTOCOL.md §6 step 3), a
// function of the registry as read (v) and of its subscription: for each subscribed topic, the range
// assignment of P_T over C_T that every member of the group computes alike (AssignRange), and of it the
// partitions of this consumer's streams (mine), in claim order, each with the broker and partition its name
// stands for. A topic whose C_T lacks this consumer's streams (its registration is missing: a new session
// before it registered again) gives it nothing. A partition name that does not parse is an error.
func planRebalance(v *registryView, topics map[string]int, mine func(topic, stream string) bool) ([]plannedClaim, error) {
	names := make([]string, 0, len(topics))
	for topic := range topics {
		names = append(names, topic)
	}
	sort.Strings(names)
	var out []plannedClaim
	for _, topic := range names {
		if len(v.streams[topic]) == 0 {
			continue
		}
		for _, a := range AssignRange(v.partitions[topic], v.streams[topic]) {
			if !mine(topic, a.Stream) {
				continue // another consumer's stream
			}
			for _, part := range a.Partitions {
				pc := plannedClaim{topic: topic, part: part, stream: a.Stream, replicated: v.replicated[topic], brokerID: -1}
				var p int
				var err error
				if pc.replicated {
					p, err = strconv.Atoi(part)
				} else {
					pc.brokerID, p, err = zk.ParsePartitionName(part)
				}
				if err != nil {
					return nil, fmt.Errorf("consumer: partition %q of topic %q: %w", part, topic, err)
				}
				pc.partition = int32(p)
				out = append(out, pc)
			}
		}
	}
	return out, nil
}

// rebalanceOnce is one attempt of Algorithm 1 (docs/PROTOCOL.md §6). conflict is true (and err says which partition) when a
// partition it should take is still owned by another consumer: the attempt then released everything and the
// caller waits and retries.
func (g *GroupConsumer) rebalanceOnce(reason string) (conflict bool, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false, ErrGroupClosed
	}
	// Step 2: stop fetching, commit offsets, delete every owner node this consumer holds.
	g.stopFetchers()
	g.gen++
	for _, ss := range g.streams {
		for _, s := range ss {
			s.reset(g.gen)
		}
	}
	if err := g.commitLocked(); err != nil {
		g.log.Warn("commit before rebalance failed", "err", err)
	}
	if err := g.releaseLocked(); err != nil {
		return false, err
	}

	// Step 1: P_T and C_T, read after the release so that they are as fresh as possible.
	view, err := g.readRegistry()
	if err != nil {
		return false, err
	}

	// Step 3: the range assignment; every member computes the same one.
	plan, err := planRebalance(view, g.topics, func(topic, stream string) bool { return g.byID[[2]string{topic, stream}] != nil })
	if err != nil {
		return false, err
	}
	claims := make([]claim, len(plan))
	for i, pc := range plan {
		claims[i] = claim{plannedClaim: pc, stream: g.byID[[2]string{pc.topic, pc.stream}]}
	}

	// Step 4: claim each partition with an ephemeral owner node holding the stream id.
	var taken []claim
	for _, c := range claims {
		err := g.zk.CreateEphemeral(zk.OwnerPath(g.cfg.GroupID, c.topic, c.part), []byte(c.stream.id))
		if err == nil {
			taken = append(taken, c)
			continue
		}
		g.releaseClaims(taken)
		if errors.Is(err, zk.ErrNodeExists) {
			owner, _ := g.zk.Get(zk.OwnerPath(g.cfg.GroupID, c.topic, c.part))
			g.log.Info("partition still owned by another stream; releasing and retrying",
				"topic", c.topic, "partition", c.part, "owner", string(owner), "reason", reason)
			return true, fmt.Errorf("partition %s/%s is still owned by %q", c.topic, c.part, owner)
		}
		return false, err
	}

	// Step 5: start offsets from the offset registry; none yet means "ask the broker" (fetchOffset -1).
	owned := make([]*ownedPartition, 0, len(taken))
	for _, c := range taken {
		off, err := readOffset(g.zk, g.cfg.GroupID, c.topic, c.part)
		if err != nil {
			g.releaseClaims(taken)
			return false, err
		}
		op := &ownedPartition{topic: c.topic, name: c.part, brokerID: c.brokerID, partition: c.partition, stream: c.stream,
			fetchOffset: off, committed: off, replicated: c.replicated}
		op.consumed.Store(off)
		owned = append(owned, op)
	}
	g.owned = owned
	g.ownershipChanged()

	// Step 6: one fetcher per broker (per leader, for replicated partitions), unless the caller reads the
	// partitions itself.
	if !g.cfg.OwnershipOnly {
		g.startFetchersLocked(view.brokers)
	}
	g.log.Info("rebalanced", "reason", reason, "generation", g.gen, "owned", ownedNames(owned))
	return false, nil
}

func ownedNames(ps []*ownedPartition) string {
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.topic + "/" + p.name + "→" + p.stream.id[strings.LastIndexByte(p.stream.id, '-')+1:]
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// releaseClaims deletes the owner nodes taken in a failed attempt.
func (g *GroupConsumer) releaseClaims(cs []claim) {
	for _, c := range cs {
		if err := g.zk.Delete(zk.OwnerPath(g.cfg.GroupID, c.topic, c.part)); err != nil {
			g.log.Warn("releasing a claim failed", "topic", c.topic, "partition", c.part, "err", err)
		}
	}
}

// releaseLocked deletes every owner node of the current generation (§3.2, Algorithm 1: "remove partitions owned by
// C_i from the ownership registry"). Called with g.mu held.
func (g *GroupConsumer) releaseLocked() error {
	var errs []error
	for _, p := range g.owned {
		if err := g.zk.Delete(zk.OwnerPath(g.cfg.GroupID, p.topic, p.name)); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == 0 {
		if len(g.owned) > 0 {
			g.ownershipChanged()
		}
		g.owned = nil
	}
	return errors.Join(errs...)
}

// fetcherStopWait bounds how long stopFetchers waits for a fetcher stuck in a request to an unresponsive
// broker (socket.timeout.ms may be 30 s). Not waiting longer is safe: whatever such a fetcher still queues
// belongs to an older generation and is dropped by the stream.
const fetcherStopWait = 2 * time.Second

// stopFetchers stops every fetcher and waits for them, at most fetcherStopWait. Called with g.mu held.
func (g *GroupConsumer) stopFetchers() {
	for _, f := range g.fetchers {
		close(f.stop)
	}
	t := time.NewTimer(fetcherStopWait)
	defer t.Stop()
	for _, f := range g.fetchers {
		select {
		case <-f.done:
		case <-t.C:
			g.log.Warn("a fetcher is still in a request; going on without it", "broker", f.broker.ID)
			g.fetchers = nil
			return
		}
	}
	g.fetchers = nil
}

// syncedRebalance runs attempts until one succeeds. Conflicts and registry errors count against
// rebalance.retries.max, with rebalance.backoff.ms between attempts; an unreachable ZooKeeper does not (the
// consumer waits for it, fetching what it already owns is not possible meanwhile but nothing is lost).
func (g *GroupConsumer) syncedRebalance(reason string) error {
	backoff := g.cfg.rebalanceBackoff()
	var last error
	for attempt := 1; attempt <= g.cfg.RebalanceRetriesMax; {
		start := time.Now()
		conflict, err := g.rebalanceOnce(reason)
		switch {
		case errors.Is(err, ErrGroupClosed):
			return err
		case err == nil:
			g.log.Debug("rebalance took", "elapsed", time.Since(start), "attempt", attempt)
			return nil
		case conflict:
			last = err
			attempt++
		case isConnectionError(err):
			g.log.Warn("ZooKeeper unreachable during rebalance; waiting", "err", err)
		default:
			last = err
			attempt++
			g.log.Warn("rebalance attempt failed", "attempt", attempt-1, "err", err)
		}
		// A request that arrived meanwhile is served by the next attempt, which reads everything again.
		select {
		case <-g.trigger:
		default:
		}
		t := time.NewTimer(backoff)
		select {
		case <-g.closing:
			t.Stop()
			return ErrGroupClosed
		case <-t.C:
		}
	}
	return fmt.Errorf("%w: consumer %s of group %q found no stable assignment in %d attempts %v apart "+
		"(rebalance.retries.max, rebalance.backoff.ms): %v", ErrRebalanceFailed, g.id, g.cfg.GroupID,
		g.cfg.RebalanceRetriesMax, backoff, last)
}

// isConnectionError reports ZooKeeper errors that mean "not reachable now" rather than a bad registry.
func isConnectionError(err error) bool {
	return errors.Is(err, gozk.ErrConnectionClosed) || errors.Is(err, gozk.ErrNoServer) ||
		errors.Is(err, gozk.ErrSessionExpired) || errors.Is(err, gozk.ErrSessionMoved) ||
		errors.Is(err, gozk.ErrClosing)
}

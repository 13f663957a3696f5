package consumer

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// The consumers' side of replication (docs/PROTOCOL.md §10). A replicated partition is fetched from its
// leader, which a METADATA request names. When the leader moves, its old broker answers "not leader" (or
// cannot be reached); the group then stops its fetchers, puts every owned partition back at the offset after
// the last message it handed out, looks the leaders up again and starts the fetchers anew, without a
// rebalance: ownership does not change, and no offset is lost or skipped, because a message has the same
// offset on every replica.

// Metadata asks the broker for the leaders of topics (every replicated topic when none).
func (c *SimpleConsumer) Metadata(topics ...string) (protocol.MetadataResponse, error) {
	c.wbuf = protocol.MetadataRequest{Topics: topics}.AppendTo(c.wbuf[:0])
	code, payload, err := c.roundTrip()
	if err != nil {
		return protocol.MetadataResponse{}, fmt.Errorf("consumer: metadata from %s: %w", c.addr, err)
	}
	if code != protocol.ErrNone {
		return protocol.MetadataResponse{}, fmt.Errorf("consumer: metadata from %s: %w", c.addr, code)
	}
	m, err := protocol.DecodeMetadataResponse(payload)
	if err != nil {
		return m, fmt.Errorf("consumer: metadata from %s: %w: %w", c.addr, ErrBadResponse, err)
	}
	return m, nil
}

// Leaders asks one of addrs (tried in random order) for the topics' leaders: per topic, the leader of each
// partition (-1: none), and the leaders' addresses. A topic that is not replicated is absent.
func Leaders(addrs []string, timeout time.Duration, topics ...string) (map[string][]int32, map[int32]string, error) {
	var last error
	for _, i := range rand.Perm(len(addrs)) {
		sc := NewSimpleConsumer(addrs[i], timeout)
		m, err := sc.Metadata(topics...)
		sc.Close()
		if err != nil {
			last = err
			continue
		}
		leaders := map[string][]int32{}
		for _, t := range m.Topics {
			if t.Error == protocol.ErrUnknownTopicOrPartition {
				continue
			}
			ls := make([]int32, len(t.Partitions))
			for j, p := range t.Partitions {
				ls[j] = p.Leader
			}
			leaders[t.Topic] = ls
		}
		hosts := map[int32]string{}
		for _, b := range m.Brokers {
			hosts[b.ID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
		return leaders, hosts, nil
	}
	if last == nil {
		last = fmt.Errorf("no broker to ask")
	}
	return nil, nil, fmt.Errorf("consumer: leaders of %v: %w", topics, last)
}

// requestRelayout asks the rebalance loop to lay the fetchers out again; requests coalesce, and come at
// most once per fetcher.backoff.ms (a leader that keeps refusing is not asked in a tight loop).
func (g *GroupConsumer) requestRelayout() {
	g.relayoutMu.Lock()
	wait := time.Until(g.lastRelayout.Add(g.cfg.FetcherBackoff))
	if wait > 0 {
		if !g.relayoutLater {
			g.relayoutLater = true
			go func() {
				select {
				case <-g.closing:
				case <-time.After(wait):
				}
				g.relayoutMu.Lock()
				g.relayoutLater = false
				g.relayoutMu.Unlock()
				g.requestRelayout()
			}()
		}
		g.relayoutMu.Unlock()
		return
	}
	g.relayoutMu.Unlock()
	select {
	case g.relayout <- struct{}{}:
	default:
	}
}

// startFetchersLocked starts one fetcher per broker for the owned 0.7 partitions and one per leader for the
// replicated ones. A replicated partition whose leader is unknown is left out, and a relayout is asked for
// after fetcher.backoff.ms. Called with g.mu held and the fetchers stopped.
func (g *GroupConsumer) startFetchersLocked(brokers map[int]zk.Broker) {
	byBroker := map[int][]*ownedPartition{}
	var topics []string
	seen := map[string]bool{}
	for _, p := range g.owned {
		if !p.replicated {
			byBroker[p.brokerID] = append(byBroker[p.brokerID], p)
		} else if !seen[p.topic] {
			seen[p.topic] = true
			topics = append(topics, p.topic)
		}
	}
	waiting := 0
	if len(topics) > 0 {
		var addrs []string
		for _, b := range brokers {
			addrs = append(addrs, b.Addr())
		}
		leaders, _, err := Leaders(addrs, g.cfg.SocketTimeout, topics...)
		if err != nil {
			g.log.Warn("cannot look the leaders up; retrying", "topics", topics, "err", err)
		}
		for _, p := range g.owned {
			if !p.replicated {
				continue
			}
			ls := leaders[p.topic]
			if int(p.partition) >= len(ls) || ls[p.partition] < 0 {
				waiting++
				continue
			}
			if _, live := brokers[int(ls[p.partition])]; !live {
				waiting++
				continue
			}
			byBroker[int(ls[p.partition])] = append(byBroker[int(ls[p.partition])], p)
		}
	}
	for b, parts := range byBroker {
		f := newFetcher(brokers[b], parts, g.gen, g.cfg, g.log)
		f.onLeaderLost = g.requestRelayout
		g.fetchers = append(g.fetchers, f)
		go f.run()
	}
	if waiting > 0 {
		g.log.Info("partitions without a live leader; looking again", "partitions", waiting, "in", g.cfg.FetcherBackoff)
		go func() {
			select {
			case <-g.closing:
			case <-time.After(g.cfg.FetcherBackoff):
				g.requestRelayout()
			}
		}()
	}
}

// relayoutFetchers is what a leader change costs the group: fetchers stopped, every owned partition put back
// at the offset after the last message handed out (or its committed offset, or "ask the broker"), and
// fetchers started again by the new leaders.
func (g *GroupConsumer) relayoutFetchers() {
	g.relayoutMu.Lock()
	g.lastRelayout = time.Now()
	g.relayoutMu.Unlock()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed || g.cfg.OwnershipOnly {
		return
	}
	g.stopFetchers()
	g.gen++
	for _, ss := range g.streams {
		for _, s := range ss {
			s.reset(g.gen)
		}
	}
	for _, p := range g.owned {
		if c := p.consumed.Load(); c >= 0 {
			p.fetchOffset = c
		} else {
			p.fetchOffset = p.committed
		}
	}
	view := &registryView{brokers: map[int]zk.Broker{}}
	if err := g.readBrokers(view); err != nil {
		g.log.Warn("cannot read the broker registry; retrying", "err", err)
		go func() {
			select {
			case <-g.closing:
			case <-time.After(g.cfg.FetcherBackoff):
				g.requestRelayout()
			}
		}()
		return
	}
	g.startFetchersLocked(view.brokers)
	g.log.Info("fetchers laid out again by leader", "generation", g.gen)
}

// hasReplicated reports whether the fetcher holds a replicated partition.
func (f *fetcher) hasReplicated() bool {
	for _, p := range f.parts {
		if p.replicated {
			return true
		}
	}
	return false
}

package consumer

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// fetcher pulls every partition this consumer owns on one broker, the paper's "thread to pull data from each
// owned partition" (§3.2) done as one goroutine per broker, as 0.7 did: each round is one MULTIFETCH asking
// fetch.size bytes of every partition, and the whole messages of each answer go, in order, to the queue of
// the stream that owns the partition. A round that brings nothing is followed by a pause of
// fetcher.backoff.ms; a full stream queue blocks the fetcher, which is the back-pressure of a pull system.
type fetcher struct {
	broker  zk.Broker
	parts   []*ownedPartition
	gen     uint64
	cfg     GroupConfig
	log     *slog.Logger
	stop    chan struct{}
	done    chan struct{}
	reqs    []protocol.FetchRequest
	active  []*ownedPartition
	stalled map[*ownedPartition]bool // partitions that cannot progress; their error went to the stream
	// onLeaderLost is called when a replicated partition's leader is not this broker any more, or this
	// broker cannot be reached while it holds replicated partitions (replicated.go); nil for none.
	onLeaderLost func()
}

func newFetcher(b zk.Broker, parts []*ownedPartition, gen uint64, cfg GroupConfig, lg *slog.Logger) *fetcher {
	return &fetcher{broker: b, parts: parts, gen: gen, cfg: cfg, log: lg.With("broker", b.ID, "addr", b.Addr()),
		stop: make(chan struct{}), done: make(chan struct{}), stalled: map[*ownedPartition]bool{}}
}

// sleep waits d or until the fetcher is stopped; it reports false when stopped.
func (f *fetcher) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-f.stop:
		return false
	case <-t.C:
		return true
	}
}

func (f *fetcher) run() {
	defer close(f.done)
	sc := NewSimpleConsumer(f.broker.Addr(), f.cfg.SocketTimeout)
	defer sc.Close()
	failures := 0
	for {
		select {
		case <-f.stop:
			return
		default:
		}
		got, err := f.round(sc)
		if err != nil && f.onLeaderLost != nil && f.hasReplicated() {
			f.onLeaderLost() // a dead leader: its partitions are looked up again
		}
		if err != nil {
			// Log the first failure and then every tenth: a dead broker is soon removed by a rebalance.
			if failures%10 == 0 {
				f.log.Warn("fetch round failed; backing off", "err", err, "backoff", f.cfg.FetcherBackoff)
			}
			failures++
		} else {
			failures = 0
		}
		if got == 0 && !f.sleep(f.cfg.FetcherBackoff) {
			return
		}
	}
}

// round sends one MULTIFETCH and queues what it brings; got is the number of bytes queued.
func (f *fetcher) round(sc *SimpleConsumer) (got int, err error) {
	f.reqs, f.active = f.reqs[:0], f.active[:0]
	for _, p := range f.parts {
		if f.stalled[p] {
			continue
		}
		if p.fetchOffset < 0 {
			if err := f.resolveStart(sc, p); err != nil {
				return 0, err
			}
		}
		f.reqs = append(f.reqs, protocol.FetchRequest{Topic: p.topic, Partition: p.partition,
			Offset: p.fetchOffset, MaxSize: int32(f.cfg.FetchSize)})
		f.active = append(f.active, p)
	}
	if len(f.reqs) == 0 {
		return 0, nil
	}
	results, err := sc.MultiFetch(f.reqs)
	if err != nil {
		return 0, err
	}
	for i, r := range results {
		p := f.active[i]
		if r.Err != nil {
			f.partitionError(p, r.Err)
			continue
		}
		valid, serr := wholePrefix(r.Set)
		if valid == 0 {
			if serr != nil {
				f.report(p, fmt.Errorf("consumer: %s/%s at offset %d on broker %d: %w",
					p.topic, p.name, p.fetchOffset, f.broker.ID, serr))
			}
			continue
		}
		// The response buffer is reused by the next round; the chunk outlives it, so it gets its own copy
		// (one allocation per chunk of up to fetch.size bytes, none per message).
		set := make([]byte, valid)
		copy(set, r.Set)
		c := &chunk{part: p, set: set, base: p.fetchOffset, gen: f.gen}
		select {
		case p.stream.queue <- c:
		case <-f.stop:
			return got, nil
		}
		p.fetchOffset += int64(valid)
		got += valid
	}
	return got, nil
}

// wholePrefix is the length of the whole messages at the start of set; a partial tail is normal (a fetch may
// end in the middle of a message), a structurally impossible message is an error.
func wholePrefix(set []byte) (int, error) {
	it := message.NewIterator(set, 0)
	for it.Next() {
	}
	return it.Consumed(), it.Err()
}

// partitionError handles a per-partition error of a MULTIFETCH answer.
func (f *fetcher) partitionError(p *ownedPartition, err error) {
	switch {
	case p.replicated && (errors.Is(err, protocol.ErrNotLeaderForPartition) || errors.Is(err, protocol.ErrLeaderNotAvailable) ||
		errors.Is(err, protocol.ErrUnknownTopicOrPartition)):
		// docs/PROTOCOL.md §10: the leader moved; the group lays its fetchers out again from the metadata.
		f.log.Info("leader moved; looking it up again", "topic", p.topic, "partition", p.name, "broker", f.broker.ID, "err", err)
		f.stalled[p] = true
		if f.onLeaderLost != nil {
			f.onLeaderLost()
		}
	case errors.Is(err, protocol.ErrOffsetOutOfRange):
		// The offset is gone (retention) or beyond the log: start again where autooffset.reset says.
		f.log.Warn("offset out of range; resetting", "topic", p.topic, "partition", p.name,
			"offset", p.fetchOffset, "autooffset.reset", f.cfg.AutoOffsetReset)
		p.fetchOffset = -1
	case errors.Is(err, ErrNotMessageStart):
		// Fetching again from the same offset cannot help: say so, as for a message too large.
		f.report(p, fmt.Errorf("%w; the group's committed offset is not a message boundary", err))
	case errors.Is(err, ErrMessageTooLarge):
		// docs/PROTOCOL.md §4: 0.7 stalled silently here; we say so, to the log and to the application.
		f.report(p, fmt.Errorf("%w (fetch.size %d); raise fetch.size to read on", err, f.cfg.FetchSize))
	default:
		f.log.Warn("fetch of a partition failed", "topic", p.topic, "partition", p.name,
			"offset", p.fetchOffset, "err", err)
	}
}

// report stops fetching p and hands err to its stream, so the application learns why the partition stopped.
func (f *fetcher) report(p *ownedPartition, err error) {
	f.log.Error("partition cannot make progress", "topic", p.topic, "partition", p.name, "err", err)
	f.stalled[p] = true
	select {
	case p.stream.queue <- &chunk{part: p, gen: f.gen, err: err}:
	case <-f.stop:
	}
}

// resolveStart asks the broker where a partition without a committed offset starts (docs/PROTOCOL.md §6 step 5): OFFSETS
// with time -2 (earliest) for autooffset.reset=smallest, -1 (latest) for largest. The answer is marked
// consumed but not committed, so the next commit records it and a successor starts at the same place.
func (f *fetcher) resolveStart(sc *SimpleConsumer, p *ownedPartition) error {
	var off int64
	var err error
	if f.cfg.AutoOffsetReset == OffsetResetLargest {
		off, err = sc.LatestOffset(p.topic, p.partition)
	} else {
		off, err = sc.EarliestOffset(p.topic, p.partition)
	}
	if err != nil {
		return err
	}
	f.log.Info("starting partition from the broker's offset", "topic", p.topic, "partition", p.name,
		"autooffset.reset", f.cfg.AutoOffsetReset, "offset", off)
	p.fetchOffset = off
	p.consumed.Store(off)
	return nil
}

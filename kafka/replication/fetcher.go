package replication

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// fetcher is one follower loop towards one leader broker (0.8's ReplicaFetcherThread): it truncates each
// new partition by leader epoch, then sends REPLICA_FETCH for all of its partitions at their log end
// offsets, appends what comes back verbatim (every CRC checked once, in the pass that writes the bytes to
// the file), records the leader's epochs for those bytes, and takes the leader's high watermark. Its
// buffers are reused: appending a fetched set allocates nothing per message (BenchmarkFollowerAppend).
type fetcher struct {
	m      *Manager
	leader protocol.BrokerAddr
	lg     *slog.Logger

	mu    sync.Mutex // guards parts; held while a response is applied, so remove waits for it
	parts map[TopicPartition]*fetchPart

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
	once sync.Once

	// Owned by the loop.
	conn    net.Conn
	r       *bufio.Reader
	wbuf    []byte
	rbuf    []byte
	reqs    []protocol.FetchRequest
	active  []*fetchPart
	part    protocol.ReplicaFetchPart // decoding scratch
	apply   func(int, *protocol.ReplicaFetchPart) error
	refused bool // the last answer refused a partition: pause before the next round
}

type fetchPart struct {
	p        *Partition
	truncate bool // not fetched yet since it was added: truncate by leader epoch first
	expected int64
}

func newFetcher(m *Manager, leader protocol.BrokerAddr) *fetcher {
	f := &fetcher{m: m, leader: leader, lg: m.lg.With("leader", leader.ID), parts: map[TopicPartition]*fetchPart{},
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	f.apply = f.applyPart
	m.wg.Add(1)
	go f.run()
	return f
}

func (f *fetcher) add(p *Partition) {
	f.mu.Lock()
	f.parts[p.tp] = &fetchPart{p: p, truncate: true}
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

func (f *fetcher) remove(tp TopicPartition) {
	f.mu.Lock()
	delete(f.parts, tp)
	f.mu.Unlock()
}

func (f *fetcher) has(tp TopicPartition) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.parts[tp] != nil
}

func (f *fetcher) close() {
	f.once.Do(func() { close(f.stop) })
	<-f.done
}

func (f *fetcher) stopped() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

func (f *fetcher) run() {
	defer f.m.wg.Done()
	defer close(f.done)
	defer f.disconnect()
	failures := 0
	for !f.stopped() {
		f.mu.Lock()
		var trunc []*fetchPart
		n := 0
		for _, fp := range f.parts {
			if fp.truncate {
				trunc = append(trunc, fp)
			}
			n++
		}
		f.mu.Unlock()
		if n == 0 {
			select {
			case <-f.stop:
				return
			case <-f.wake:
			}
			continue
		}
		var err error
		if len(trunc) > 0 {
			err = f.truncate(trunc)
		} else {
			err = f.fetch()
		}
		if err == nil {
			failures = 0
			continue
		}
		f.disconnect()
		if failures%20 == 0 {
			f.lg.Warn("replication: fetch from leader failed; retrying", "addr", f.addr(), "err", err)
		}
		failures++
		select {
		case <-f.stop:
			return
		case <-time.After(min(f.m.cfg.FetchWaitMax+100*time.Millisecond, time.Second)):
		}
	}
}

func (f *fetcher) addr() string {
	return net.JoinHostPort(f.leader.Host, strconv.Itoa(int(f.leader.Port)))
}

func (f *fetcher) disconnect() {
	if f.conn != nil {
		f.conn.Close()
		f.conn = nil
	}
}

// roundTrip sends f.wbuf and reads one answer into f.rbuf.
func (f *fetcher) roundTrip(wait time.Duration) ([]byte, error) {
	if f.conn == nil {
		c, err := net.DialTimeout("tcp", f.addr(), f.m.cfg.ControllerSocketTimeout)
		if err != nil {
			return nil, err
		}
		f.conn, f.r = c, bufio.NewReaderSize(c, 64<<10)
	}
	f.conn.SetDeadline(time.Now().Add(wait + f.m.cfg.ControllerSocketTimeout))
	if _, err := f.conn.Write(f.wbuf); err != nil {
		return nil, err
	}
	code, payload, buf, err := protocol.ReadResponse(f.r, f.rbuf)
	f.rbuf = buf
	if err != nil {
		return nil, err
	}
	if code != protocol.ErrNone {
		return nil, fmt.Errorf("replication: leader %d answered %w", f.leader.ID, code)
	}
	return payload, nil
}

// truncate cuts each partition's log where its latest epoch ends in the leader's log (leader epochs,
// KIP-101), never past its own end. A replica with no epoch yet falls back to its high watermark, as 0.8 did
// for every replica.
func (f *fetcher) truncate(parts []*fetchPart) error {
	req := protocol.EpochEndOffsetRequest{ReplicaID: f.m.cfg.BrokerID}
	for _, fp := range parts {
		fp.p.mu.Lock()
		e := fp.p.epoch.latest()
		fp.p.mu.Unlock()
		req.Partitions = append(req.Partitions, protocol.EpochQuery{Topic: fp.p.tp.Topic, Partition: fp.p.tp.Partition, Epoch: e})
	}
	f.wbuf = req.AppendTo(f.wbuf[:0])
	payload, err := f.roundTrip(0)
	if err != nil {
		return err
	}
	ends, err := protocol.DecodeEpochEndResponse(payload)
	if err != nil {
		return err
	}
	if len(ends) != len(parts) {
		return fmt.Errorf("replication: leader %d answered %d epoch ends for %d partitions", f.leader.ID, len(ends), len(parts))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var retry error
	for i, fp := range parts {
		if f.parts[fp.p.tp] != fp {
			continue // removed meanwhile
		}
		e := ends[i]
		if e.Error != protocol.ErrNone {
			retry = fmt.Errorf("replication: epoch end of %s from leader %d: %w", fp.p.tp, f.leader.ID, e.Error)
			continue
		}
		if err := fp.p.truncateTo(req.Partitions[i].Epoch, e.Epoch, e.EndOffset); err != nil {
			return err
		}
		fp.truncate = false
	}
	return retry
}

// truncateTo applies the leader's answer for our latest epoch mine: (epoch, end) is the largest epoch of the
// leader's history not above mine and where it ends there.
func (p *Partition) truncateTo(mine, epoch int32, end int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	leo := p.log.LogEndOffset()
	target := leo
	switch {
	case mine < 0 || epoch < 0:
		target = min(p.hw.Load(), leo) // no epochs to compare: 0.8's rule
	case epoch == mine:
		target = min(end, leo)
	default: // the leader never had our latest epoch: keep what we wrote in its epoch, up to where it ends there
		_, ours := p.epoch.endOffset(epoch, leo)
		target = min(end, ours, leo)
	}
	if target < leo {
		if err := p.log.TruncateTo(target); err != nil {
			return err
		}
		p.m.lg.Info("replication: truncated by leader epoch", "partition", p.tp.String(), "from", leo, "to", target,
			"epoch", mine, "leaderEpoch", epoch, "leaderEnd", end)
	}
	if err := p.epoch.truncateTo(target); err != nil {
		return err
	}
	if p.hw.Load() > target {
		p.hw.Store(target)
	}
	return nil
}

// fetch sends one REPLICA_FETCH for every partition at its log end offset and applies the answer.
func (f *fetcher) fetch() error {
	f.mu.Lock()
	f.reqs, f.active = f.reqs[:0], f.active[:0]
	for _, fp := range f.parts {
		fp.expected = fp.p.log.LogEndOffset()
		f.reqs = append(f.reqs, protocol.FetchRequest{Topic: fp.p.tp.Topic, Partition: fp.p.tp.Partition,
			Offset: fp.expected, MaxSize: int32(f.m.cfg.FetchMaxBytes)})
		f.active = append(f.active, fp)
	}
	f.mu.Unlock()
	req := protocol.ReplicaFetchRequest{ReplicaID: f.m.cfg.BrokerID, MaxWaitMs: int32(f.m.cfg.FetchWaitMax.Milliseconds()),
		MinBytes: int32(f.m.cfg.FetchMinBytes), Fetches: f.reqs}
	f.wbuf = req.AppendTo(f.wbuf[:0])
	payload, err := f.roundTrip(f.m.cfg.FetchWaitMax)
	if err != nil {
		return err
	}
	f.refused = false
	if err := f.applyResponse(payload); err != nil {
		return err
	}
	if f.refused {
		return errRefused
	}
	return nil
}

// applyResponse applies a REPLICA_FETCH answer to the partitions of f.active (the request's order).
func (f *fetcher) applyResponse(payload []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return protocol.DecodeReplicaFetchResponse(payload, &f.part, f.apply)
}

// applyPart is one partition of the answer. f.mu is held.
func (f *fetcher) applyPart(i int, part *protocol.ReplicaFetchPart) error {
	if i >= len(f.active) {
		return fmt.Errorf("replication: leader %d answered more partitions than asked", f.leader.ID)
	}
	fp := f.active[i]
	p := fp.p
	if string(part.Topic) != p.tp.Topic || part.Partition != p.tp.Partition {
		return fmt.Errorf("replication: leader %d answered %s-%d for %s", f.leader.ID, part.Topic, part.Partition, p.tp)
	}
	if f.parts[p.tp] != fp {
		return nil // removed (or re-added) while the fetch was in flight
	}
	switch part.Error {
	case protocol.ErrNone:
	case protocol.ErrOffsetOutOfRange: // we are ahead of the leader: truncate by epoch again
		fp.truncate = true
		return nil
	default:
		// Not (yet, or any more) the leader: try again after a pause, truncating first, until the controller
		// names another leader (its LEADER_AND_ISR may reach the leader after this follower).
		f.lg.Info("replication: leader refused a partition; retrying", "partition", p.tp.String(), "err", part.Error)
		fp.truncate = true
		f.refused = true
		return nil
	}
	return p.appendAsFollower(part.Set, fp.expected, part.Epochs, part.HighWatermark)
}

// appendAsFollower appends the leader's bytes verbatim at expected (the offset they have on the leader:
// docs/PROTOCOL.md §10, the same byte offset on every replica), records the leader's epochs for them and
// takes the leader's HW. The follower checks what it appends: the framing and the CRC of every message
// (§3.3), not the inside of compressed wrappers, which its leader's Append checked and which it must not
// refuse. The check, the append and the write to the file (before the next fetch reports the new LEO) are
// one pass over the fetched bytes, straight from the fetcher's buffer (log.AppendReplicaPrefix). A partial
// message at the end waits for the next fetch; a corrupt one is logged and not appended, nor anything
// after it.
func (p *Partition) appendAsFollower(set []byte, expected int64, epochs []protocol.EpochEntry, hw int64) error {
	if len(set) > 0 {
		off, valid, err := p.log.AppendReplicaPrefix(set)
		switch {
		case errors.Is(err, log.ErrInvalidMessage):
			p.m.lg.Error("replication: the leader sent a corrupt message; not appending it", "partition", p.tp.String(),
				"offset", expected+int64(valid), "err", err)
		case err != nil:
			return fmt.Errorf("replication: follower append to %s: %w", p.tp, err)
		case valid == 0 && len(set) >= p.m.cfg.FetchMaxBytes:
			p.m.lg.Error("replication: a message is larger than replica.fetch.max.bytes; raise it to go on",
				"partition", p.tp.String(), "offset", expected, "replica.fetch.max.bytes", p.m.cfg.FetchMaxBytes)
		}
		if valid > 0 && off != expected {
			return fmt.Errorf("replication: %s: the leader's bytes for offset %d went to offset %d", p.tp, expected, off)
		}
	}
	leo := p.log.LogEndOffset()
	if len(epochs) > 0 {
		p.mu.Lock()
		for _, e := range epochs {
			if e.Start <= leo && e.Epoch > p.epoch.latest() {
				if err := p.epoch.assign(e.Epoch, e.Start); err != nil {
					p.mu.Unlock()
					return err
				}
			}
		}
		p.mu.Unlock()
	}
	p.hw.Store(min(hw, leo))
	return nil
}

// errRefused makes the loop pause after an answer that refused a partition.
var errRefused = errors.New("replication: the leader refused a partition")

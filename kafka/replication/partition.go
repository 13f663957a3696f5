package replication

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Partition is one replica of a replicated partition on this broker: its log, its leader-epoch history, and
// what the controller last said of it. As leader it keeps each follower's progress, the ISR and the high
// watermark; as follower it is fed by a fetcher (fetcher.go).
type Partition struct {
	m     *Manager
	tp    TopicPartition
	log   *log.Log
	epoch *epochCache // guarded by mu

	mu              sync.Mutex
	leader          int32 // -1: none known
	leaderEpoch     int32
	ledEpoch        int32 // the newest epoch this process has led, -1 for none
	zkVersion       int32 // of the state node, for the leader's conditional ISR updates
	controllerEpoch int32
	replicas        []int32
	isr             []int32
	followers       map[int32]*follower // as leader: every other replica
	hwCh            chan struct{}       // closed and replaced when the HW moves or leadership ends
	waiters         []waiter            // replica fetches waiting for bytes
	isrMu           sync.Mutex          // one ISR change in ZooKeeper at a time

	isLeader atomic.Bool
	hw       atomic.Int64

	watchers  atomic.Pointer[[]*watcher] // replaced on Watch and unwatch, never modified
	watchMu   sync.Mutex                 // one Watch or unwatch at a time
	notifyDue atomic.Bool                // the HW, the ISR or leadership changed: run the watchers (notify)
}

// watcher is a function Watch registered.
type watcher struct{ fn func() }

// waiter is a REPLICA_FETCH held for replica.fetch.min.bytes: its channel (one slot) is signalled once the
// log end offset reaches need, not at every append before that.
type waiter struct {
	ch   chan struct{}
	need int64
}

// follower is the leader's record of one follower (0.8's per-replica LEO and last-caught-up time).
type follower struct {
	leo          int64     // its last fetch offset; -1 before its first fetch
	lastFetchLEO int64     // the leader's LEO when it answered that follower's previous fetch
	lastFetch    time.Time // when
	caughtUp     time.Time // the last time it had everything the leader had at its previous fetch
}

// fetchedAt is the leader's record of a follower after it fetched at offset (its log end offset) at now, the
// leader's log ending at leo and its high watermark at hw, and whether the follower rejoins the ISR (the
// package doc's rule): a follower at the leader's end is caught up now; one that reached the end the leader
// had at its previous fetch was caught up then (so a follower of a busy leader can rejoin); a follower out
// of the ISR comes back once it is caught up and has everything committed (offset >= hw). answering says
// the leader answers this fetch now, with its log up to leo: the next fetch then shows whether the follower
// kept up with that.
func (f follower) fetchedAt(now time.Time, offset, leo, hw int64, inISR, answering bool) (follower, bool) {
	caughtUp := offset >= leo || f.lastFetchLEO >= 0 && offset >= f.lastFetchLEO
	if offset >= leo {
		f.caughtUp = now
	} else if caughtUp {
		f.caughtUp = f.lastFetch
	}
	f.leo = offset
	if answering {
		f.lastFetchLEO, f.lastFetch = leo, now
	}
	return f, !inISR && caughtUp && offset >= hw
}

func newPartition(m *Manager, tp TopicPartition, l *log.Log, ec *epochCache, hw int64) *Partition {
	p := &Partition{m: m, tp: tp, log: l, epoch: ec, leader: -1, ledEpoch: -1, hwCh: make(chan struct{})}
	p.hw.Store(min(hw, l.LogEndOffset()))
	return p
}

// TopicPartition names the partition.
func (p *Partition) TopicPartition() TopicPartition { return p.tp }

// Log is the partition's log.
func (p *Partition) Log() *log.Log { return p.log }

// IsLeader reports whether this broker leads the partition now.
func (p *Partition) IsLeader() bool { return p.isLeader.Load() }

// HighWatermark is the partition's high watermark as this replica knows it.
func (p *Partition) HighWatermark() int64 { return p.hw.Load() }

// Snapshot describes the partition as this broker sees it, for tools and tests.
type Snapshot struct {
	Leader, LeaderEpoch int32
	ISR, Replicas       []int32
	HighWatermark, LEO  int64
	Epochs              []protocol.EpochEntry
}

// Snapshot returns the partition's state now.
func (p *Partition) Snapshot() Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Snapshot{Leader: p.leader, LeaderEpoch: p.leaderEpoch, ISR: slices.Clone(p.isr), Replicas: slices.Clone(p.replicas),
		HighWatermark: p.hw.Load(), LEO: p.log.LogEndOffset(), Epochs: slices.Clone(p.epoch.entries)}
}

// visibleEnd is where a consumer's read stops: committed and flushed (the package doc's sentence).
func (p *Partition) visibleEnd() int64 { return min(p.hw.Load(), p.log.FlushedEnd()) }

// becomeLeader applies a LEADER_AND_ISR that makes this broker the leader. A new epoch is recorded at the
// log end offset: the first message this leader writes belongs to it.
func (p *Partition) becomeLeader(s protocol.PartitionState, controllerEpoch int32) error {
	defer p.notify()
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.isLeader.Load() && p.leaderEpoch == s.LeaderEpoch
	// A leader never continues an epoch across a restart: an epoch this replica's history already holds was
	// led by someone, and if by this broker then by an earlier process of it, whose unflushed end may be lost
	// (docs/PROTOCOL.md §10, "broker epochs"). Only the process that took the epoch may be told it again.
	if latest := p.epoch.latest(); s.LeaderEpoch <= latest && s.LeaderEpoch != p.ledEpoch {
		return fmt.Errorf("%w: %s: asked to lead epoch %d, but this replica's history already reaches epoch %d, not taken by this process",
			ErrStaleEpoch, p.tp, s.LeaderEpoch, latest)
	}
	p.ledEpoch = s.LeaderEpoch
	p.applyLocked(s, controllerEpoch)
	if err := p.epoch.assign(s.LeaderEpoch, p.log.LogEndOffset()); err != nil {
		return err
	}
	if !was {
		now := time.Now()
		p.followers = map[int32]*follower{}
		for _, r := range s.Replicas {
			if r != p.m.cfg.BrokerID {
				p.followers[r] = &follower{leo: -1, lastFetchLEO: -1, caughtUp: now, lastFetch: now}
			}
		}
	}
	p.isLeader.Store(true)
	p.maybeRaiseHWLocked()
	return nil
}

// becomeFollower applies a LEADER_AND_ISR naming another leader (or none). Waiting producers are woken: they
// answer NotLeaderForPartition.
func (p *Partition) becomeFollower(s protocol.PartitionState, controllerEpoch int32) {
	defer p.notify()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applyLocked(s, controllerEpoch)
	if p.isLeader.Swap(false) {
		p.followers = nil
		p.broadcastLocked()
		for _, w := range p.waiters { // held replica fetches answer "not leader" now
			w.signal()
		}
	}
}

func (p *Partition) applyLocked(s protocol.PartitionState, controllerEpoch int32) {
	p.leader, p.leaderEpoch, p.zkVersion, p.controllerEpoch = s.Leader, s.LeaderEpoch, s.Version, controllerEpoch
	p.replicas, p.isr = slices.Clone(s.Replicas), slices.Clone(s.ISR)
}

// broadcastLocked wakes everyone waiting on the HW, and has the watchers run once the lock is released
// (notify).
func (p *Partition) broadcastLocked() {
	close(p.hwCh)
	p.hwCh = make(chan struct{})
	p.notifyDue.Store(true)
}

// Watch registers fn to run after every change that may settle a wait for a commit (WaitCommitted): the
// HW moving, the ISR changing, this broker ceasing to lead. fn runs on the goroutine that made the change,
// once it has released the partition's lock, so it may call the partition's methods, and it must not
// block: a leader's connection answers its acks=-1 produces from there (kafka/broker/ackedanswers.go),
// without waking a goroutine of its own for each commit. The returned func unregisters fn.
func (p *Partition) Watch(fn func()) (unwatch func()) {
	w := &watcher{fn: fn}
	p.watchMu.Lock()
	var next []*watcher
	if cur := p.watchers.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, w)
	p.watchers.Store(&next)
	p.watchMu.Unlock()
	return func() {
		p.watchMu.Lock()
		defer p.watchMu.Unlock()
		cur := p.watchers.Load()
		if cur == nil {
			return
		}
		next := slices.DeleteFunc(slices.Clone(*cur), func(x *watcher) bool { return x == w })
		p.watchers.Store(&next)
	}
}

// notify runs the watchers if the HW, the ISR or leadership changed since they last ran. It is called
// after p.mu is released by whoever may have changed them; whoever finds the change due runs them, after
// every change made before it looked.
func (p *Partition) notify() {
	if !p.notifyDue.Load() || !p.notifyDue.Swap(false) {
		return
	}
	if ws := p.watchers.Load(); ws != nil {
		for _, w := range *ws {
			w.fn()
		}
	}
}

// maybeRaiseHWLocked moves the HW to the smallest LEO over the ISR, never back. A follower that has not
// fetched since this broker became leader holds it where it is.
func (p *Partition) maybeRaiseHWLocked() {
	hw := p.log.LogEndOffset()
	for _, r := range p.isr {
		if f := p.followers[r]; f != nil {
			hw = min(hw, f.leo)
		}
	}
	if hw > p.hw.Load() {
		p.hw.Store(hw)
		p.broadcastLocked()
	}
}

// Append is a produce on the leader. acks is request.required.acks; with -1 and an ISR smaller than
// min.insync.replicas nothing is appended (NotEnoughReplicas). For acks 1 and -1 the bytes are written to
// the file before the answer, so the leader's process dying afterwards does not lose them. It returns the
// set's offset and the offset after it, which WaitCommitted waits for.
func (p *Partition) Append(set []byte, acks int16) (offset, end int64, code protocol.ErrorCode, err error) {
	if !p.isLeader.Load() {
		return -1, -1, protocol.ErrNotLeaderForPartition, nil
	}
	isr := 1
	if acks == protocol.AcksAll {
		p.mu.Lock()
		isr = len(p.isr)
		p.mu.Unlock()
		if isr < p.m.cfg.MinInsyncReplicas {
			return -1, -1, protocol.ErrNotEnoughReplicas, nil
		}
	}
	offset, err = p.log.Append(set)
	if err != nil {
		switch {
		case errors.Is(err, log.ErrInvalidMessage):
			return -1, -1, protocol.ErrInvalidMessage, err
		case errors.Is(err, log.ErrStorage):
			return -1, -1, protocol.ErrKafkaStorage, err
		}
		return -1, -1, protocol.ErrUnknown, err
	}
	end = offset + int64(len(set))
	// acks=-1 with followers: the first follower fetch that reads the set writes it out (Log.ReadUpTo), for
	// every set appended since in one write, and WaitCommittedOr makes sure before the answer.
	if acks == protocol.AcksLeader || acks == protocol.AcksAll && isr <= 1 {
		if err := p.log.WriteOut(); err != nil {
			if errors.Is(err, log.ErrStorage) {
				return -1, -1, protocol.ErrKafkaStorage, err
			}
			return -1, -1, protocol.ErrUnknown, err
		}
	}
	p.mu.Lock()
	if p.isLeader.Load() {
		p.maybeRaiseHWLocked() // an ISR of one: committed at once
		leo := p.log.LogEndOffset()
		for _, w := range p.waiters {
			if leo >= w.need {
				w.signal()
			}
		}
	}
	p.mu.Unlock()
	p.notify()
	return offset, end, protocol.ErrNone, nil
}

// WaitCommitted waits until the HW passes end (acks=-1), for at most timeout.
func (p *Partition) WaitCommitted(end int64, timeout time.Duration) protocol.ErrorCode {
	return p.WaitCommittedOr(end, timeout, nil)
}

// WaitCommittedOr is WaitCommitted that also gives up, with ErrRequestTimedOut, when abort is closed (the
// producer's connection went away: nobody is left to answer).
func (p *Partition) WaitCommittedOr(end int64, timeout time.Duration, abort <-chan struct{}) protocol.ErrorCode {
	var timer *time.Timer
	for {
		code, done, ch := p.committed(end)
		if done {
			return code
		}
		if timer == nil {
			timer = time.NewTimer(timeout)
			defer timer.Stop()
		}
		select {
		case <-ch:
		case <-timer.C:
			return protocol.ErrRequestTimedOut
		case <-abort:
			return protocol.ErrRequestTimedOut
		}
	}
}

// Committed is WaitCommitted without the wait: done reports whether the set ending at end is settled
// (committed, or never to be: this broker no longer leads), and code is its answer then. A caller that
// waits for done learns of the changes that settle it through Watch.
func (p *Partition) Committed(end int64) (code protocol.ErrorCode, done bool) {
	if p.isLeader.Load() && p.hw.Load() < end {
		return protocol.ErrNone, false // the common case, without the lock
	}
	code, done, _ = p.committed(end)
	return code, done
}

// committed is Committed, with the channel that is closed at the next change of the HW or the ISR.
func (p *Partition) committed(end int64) (protocol.ErrorCode, bool, <-chan struct{}) {
	p.mu.Lock()
	leader, hw, n, ch := p.isLeader.Load(), p.hw.Load(), len(p.isr), p.hwCh
	p.mu.Unlock()
	switch {
	case !leader:
		return protocol.ErrNotLeaderForPartition, true, ch
	case hw >= end && n < p.m.cfg.MinInsyncReplicas:
		return protocol.ErrNotEnoughReplicasAfterAppend, true, ch
	case hw >= end:
		// In the file before the answer (Append's doc); the follower fetches that committed it have
		// written it out as a rule (Log.ReadUpTo), and what was appended after it stays buffered.
		if err := p.log.WriteOutTo(end); err != nil {
			if errors.Is(err, log.ErrStorage) {
				return protocol.ErrKafkaStorage, true, ch
			}
			return protocol.ErrUnknown, true, ch
		}
		return protocol.ErrNone, true, ch
	}
	return protocol.ErrNone, false, ch
}

// ReadForConsumer is a FETCH on the leader: bytes up to min(HW, flushed end).
func (p *Partition) ReadForConsumer(offset int64, maxSize int) (log.Chunk, protocol.ErrorCode, error) {
	if !p.isLeader.Load() {
		return log.Chunk{}, protocol.ErrNotLeaderForPartition, nil
	}
	c, err := p.log.ReadUpTo(offset, maxSize, p.visibleEnd())
	return c, codeOf(err), err
}

// Offsets is an OFFSETS request on the leader; "latest" is where consumers' reads stop.
func (p *Partition) Offsets(t int64, max int) ([]int64, protocol.ErrorCode) {
	if !p.isLeader.Load() {
		return nil, protocol.ErrNotLeaderForPartition
	}
	return p.log.OffsetsUpTo(t, max, p.visibleEnd()), protocol.ErrNone
}

func codeOf(err error) protocol.ErrorCode {
	switch {
	case err == nil:
		return protocol.ErrNone
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return protocol.ErrOffsetOutOfRange
	case errors.Is(err, log.ErrInvalidFetchSize):
		return protocol.ErrInvalidFetchSize
	}
	return protocol.ErrUnknown
}

// FollowerArrived records, as its REPLICA_FETCH arrives and before the leader holds it for
// replica.fetch.wait.max.ms, that follower id fetches at offset (its LEO): a follower waiting at the
// leader's end is caught up now, and rejoins the ISR now. Recorded only after the wait, that is once new
// bytes have come, it would always be seen behind, and never rejoin while a producer writes more often
// than the wait: with an ISR of the leader alone the HW is the leader's log end.
func (p *Partition) FollowerArrived(id int32, offset int64) {
	if p.isLeader.Load() {
		p.followerAt(id, offset, false, nil)
	}
}

// FollowerFetch is one partition of a REPLICA_FETCH from follower id at offset (its LEO): it records the
// follower's progress, moves the HW, takes the follower back into the ISR once it has caught up, and
// returns the bytes from offset (up to the leader's LEO), the HW and the epochs the follower needs.
func (p *Partition) FollowerFetch(id int32, offset int64, maxSize int, epochs []protocol.EpochEntry) (c log.Chunk, hw int64, _ []protocol.EpochEntry, code protocol.ErrorCode, err error) {
	if !p.isLeader.Load() {
		return log.Chunk{}, -1, epochs, protocol.ErrNotLeaderForPartition, nil
	}
	leo, hw, epochs, code, err := p.followerAt(id, offset, true, epochs)
	if code != protocol.ErrNone {
		return log.Chunk{}, hw, epochs, code, err
	}
	c, err = p.log.ReadUpTo(offset, maxSize, leo)
	return c, hw, epochs, codeOf(err), err
}

// followerAt records follower id at offset: caught up or not, its LEO, the HW, its return to the ISR.
// answering says the leader answers the fetch now, with its log up to leo: the follower's next fetch
// will then show whether it kept up with that (lastFetchLEO); with it the epochs the follower needs for
// [offset, leo) are appended to epochs.
func (p *Partition) followerAt(id int32, offset int64, answering bool, epochs []protocol.EpochEntry) (leo, hw int64, _ []protocol.EpochEntry, code protocol.ErrorCode, err error) {
	now := time.Now()
	leo = p.log.LogEndOffset()
	p.mu.Lock()
	f := p.followers[id]
	if f == nil {
		p.mu.Unlock()
		return leo, -1, epochs, protocol.ErrReplicaNotAvailable,
			fmt.Errorf("replication: broker %d fetched %s but is not one of its replicas %v", id, p.tp, p.replicas)
	}
	if offset > leo {
		p.mu.Unlock()
		return leo, p.hw.Load(), epochs, protocol.ErrOffsetOutOfRange, nil
	}
	var expand bool
	*f, expand = f.fetchedAt(now, offset, leo, p.hw.Load(), slices.Contains(p.isr, id), answering)
	if answering {
		epochs = p.epoch.covering(epochs, offset, leo)
	}
	p.maybeRaiseHWLocked()
	hw = p.hw.Load()
	p.mu.Unlock()
	p.notify()
	if expand {
		p.m.changeISR(p, func(cur []int32) []int32 {
			if slices.Contains(cur, id) {
				return nil
			}
			return append(slices.Clone(cur), id)
		}, fmt.Sprintf("broker %d caught up", id))
	}
	return leo, hw, epochs, protocol.ErrNone, nil
}

// orderedLocked sorts an ISR in assignment order.
func (p *Partition) orderedLocked(isr []int32) []int32 {
	out := make([]int32, 0, len(isr))
	for _, r := range p.replicas {
		if slices.Contains(isr, r) {
			out = append(out, r)
		}
	}
	return out
}

// Available is how many bytes a follower at offset could fetch now.
func (p *Partition) Available(offset int64) int64 { return p.log.LogEndOffset() - offset }

// AddWaiter and RemoveWaiter register a REPLICA_FETCH waiting for new bytes: ch (one slot) is signalled
// once an append brings the log end offset to need (the fetch offset plus the bytes it waits for), or
// this broker stops leading. Appends before that wake nobody: a follower fetch held for
// replica.fetch.min.bytes costs the leader no wake-up per produce.
func (p *Partition) AddWaiter(ch chan struct{}, need int64) {
	p.mu.Lock()
	p.waiters = append(p.waiters, waiter{ch: ch, need: need})
	p.mu.Unlock()
}

func (p *Partition) RemoveWaiter(ch chan struct{}) {
	p.mu.Lock()
	if i := slices.IndexFunc(p.waiters, func(w waiter) bool { return w.ch == ch }); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
	}
	p.mu.Unlock()
}

func (w waiter) signal() {
	select {
	case w.ch <- struct{}{}:
	default:
	}
}

// EpochEnd answers a follower's EPOCH_END_OFFSET for this partition (only its leader answers).
func (p *Partition) EpochEnd(epoch int32) (int32, int64, protocol.ErrorCode) {
	if !p.isLeader.Load() {
		return -1, -1, protocol.ErrNotLeaderForPartition
	}
	e, end := p.OwnEpochEnd(epoch)
	return e, end, protocol.ErrNone
}

// OwnEpochEnd is where epoch ends in this replica's log, leader or not: the controller's question when
// the longest log must lead (Decide).
func (p *Partition) OwnEpochEnd(epoch int32) (int32, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.epoch.endOffset(epoch, p.log.LogEndOffset())
}

// laggards returns the ISR members that have fallen out of sync (outOfSync), counting messages in this
// leader's log where the rule needs a count.
func (p *Partition) laggards(now time.Time, lagTime time.Duration, lagMessages int) []int32 {
	if !p.isLeader.Load() {
		return nil
	}
	leo := p.log.LogEndOffset()
	p.mu.Lock()
	fs := make([]followerLag, 0, len(p.isr))
	for _, r := range p.isr {
		if f := p.followers[r]; f != nil {
			fs = append(fs, followerLag{id: r, caughtUp: f.caughtUp, leo: f.leo})
		}
	}
	p.mu.Unlock()
	return outOfSync(now, leo, fs, lagTime, lagMessages, func(from int64) int {
		return countMessages(p.log, from, leo, lagMessages+1)
	})
}

// followerLag is what the ISR check knows of one in-sync follower: when it last caught up and its log end
// offset (-1 before its first fetch).
type followerLag struct {
	id       int32
	caughtUp time.Time
	leo      int64
}

// outOfSync is the ISR check of the package doc, a function of what the leader knows: a follower leaves the
// ISR when it has not caught up for more than lagTime, or (lagMessages > 0) is more than lagMessages
// messages behind the leader's log end offset leo. behind(from) counts the messages in [from, leo), up to
// lagMessages+1; it is asked only of followers that are in time and behind in bytes.
func outOfSync(now time.Time, leo int64, fs []followerLag, lagTime time.Duration, lagMessages int, behind func(from int64) int) (out []int32) {
	for _, f := range fs {
		switch {
		case now.Sub(f.caughtUp) > lagTime:
			out = append(out, f.id)
		case lagMessages > 0 && f.leo >= 0 && f.leo < leo && behind(f.leo) > lagMessages:
			out = append(out, f.id)
		}
	}
	return out
}

// countMessages counts the messages in [from, to), stopping at limit (offsets are bytes: a lag in messages
// has to be counted).
func countMessages(l *log.Log, from, to int64, limit int) int {
	buf := make([]byte, 64<<10)
	n := 0
	for from < to && n < limit {
		c, err := l.ReadUpTo(from, len(buf), to)
		if err != nil || c.Len == 0 {
			return n
		}
		k, _ := c.ReadAt(buf[:c.Len])
		c.Release()
		it := message.NewIterator(buf[:k], from)
		for it.Next() && n < limit {
			n++
		}
		if it.Consumed() == 0 {
			return n // a message larger than the buffer: at least one
		}
		from += int64(it.Consumed())
	}
	return n
}

// applyISR installs an ISR this leader has written to ZooKeeper (with the node's new version).
func (p *Partition) applyISR(epoch int32, isr []int32, version int32) bool {
	defer p.notify()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.isLeader.Load() || p.leaderEpoch != epoch {
		return false
	}
	p.isr, p.zkVersion = isr, version
	p.maybeRaiseHWLocked()
	p.broadcastLocked() // a waiting acks=-1 produce re-checks min.insync.replicas
	return true
}

// changeISR writes a new ISR, edit(current ISR), for a partition this broker leads (a conditional set on the
// state node), and installs it if the write won; edit returning nil means no change. It reads the node
// first: if the controller changed nothing but the ISR and version (it may have removed a dead broker), the
// edit applies to what it wrote. The node records each member's broker epoch (State.BrokerEpochs): kept for
// those already in it, this broker's own, and for a follower taken back the one of its registration now.
func (m *Manager) changeISR(p *Partition, edit func(cur []int32) []int32, why string) {
	p.isrMu.Lock()
	defer p.isrMu.Unlock()
	for attempt := 0; attempt < 2; attempt++ {
		cur, err := ReadState(m.zk, p.tp.Topic, int(p.tp.Partition))
		if err != nil {
			m.lg.Warn("replication: ISR change not made: cannot read the partition state", "partition", p.tp.String(), "err", err)
			return
		}
		p.mu.Lock()
		if !p.isLeader.Load() || cur.Leader != m.cfg.BrokerID || cur.LeaderEpoch != p.leaderEpoch {
			p.mu.Unlock()
			return // the controller moved the partition: its LEADER_AND_ISR will say so
		}
		p.zkVersion, p.isr = cur.ZKVersion, p.orderedLocked(cur.ISR)
		isr := edit(p.isr)
		if isr != nil {
			isr = p.orderedLocked(isr)
		}
		st := State{ControllerEpoch: p.controllerEpoch, Leader: m.cfg.BrokerID, LeaderEpoch: p.leaderEpoch, ISR: isr,
			ZKVersion: p.zkVersion}
		p.mu.Unlock()
		if len(isr) == 0 {
			return
		}
		st.BrokerEpochs, st.ISR = m.isrEpochs(cur, isr)
		written, err := WriteState(m.zk, p.tp.Topic, int(p.tp.Partition), st)
		if err == nil {
			if p.applyISR(st.LeaderEpoch, st.ISR, written.ZKVersion) {
				m.lg.Info("replication: ISR changed", "partition", p.tp.String(), "isr", st.ISR, "why", why)
			}
			return
		}
		if !errors.Is(err, zk.ErrBadVersion) {
			m.lg.Warn("replication: ISR change not written", "partition", p.tp.String(), "isr", isr, "err", err)
			return
		}
	}
}

// isrEpochs is the broker epochs to record for a new ISR written over the state cur, and the ISR itself
// without a follower that is not registered now.
func (m *Manager) isrEpochs(cur State, isr []int32) (map[int32]int64, []int32) {
	epochs := map[int32]int64{}
	out := isr[:0:0]
	for _, r := range isr {
		e, known := cur.BrokerEpochs[r]
		switch {
		case r == m.cfg.BrokerID:
			e, known = m.brokerEpoch(), true
		case !known || !slices.Contains(cur.ISR, r):
			_, created, err := m.zk.GetCreated(zk.BrokerIDPath(int(r)))
			if err != nil {
				m.lg.Warn("replication: not taking a follower into the ISR: its registration cannot be read", "broker", r, "err", err)
				continue
			}
			e, known = created, true
		}
		if known && e != 0 {
			epochs[r] = e
		}
		out = append(out, r)
	}
	if len(epochs) == 0 {
		epochs = nil
	}
	return epochs, out
}

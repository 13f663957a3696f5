package replication

// Replication's claims that can be checked on one partition without a cluster, one sentence each (the
// package doc). The cluster-wide ones are in kafka/replication_claims_test.go.

import (
	"log/slog"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// replica makes a partition of broker id with an empty log that flushes only when told to.
func replica(t testing.TB, id int32, minISR int) *Partition {
	t.Helper()
	cfg := log.DefaultConfig()
	cfg.FlushInterval, cfg.FlushIntervalMs = 0, 0
	l, err := log.Open(t.TempDir(), cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	ec, err := loadEpochs(l.Dir(), true)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.BrokerID, c.MinInsyncReplicas = id, minISR
	m := &Manager{cfg: c, lg: slog.Default()}
	return newPartition(m, TopicPartition{"t", 0}, l, ec, 0)
}

func state(leader, epoch int32, isr ...int32) protocol.PartitionState {
	return protocol.PartitionState{Topic: "t", Leader: leader, LeaderEpoch: epoch, ISR: isr, Replicas: []int32{0, 1, 2}}
}

func set(payloads ...string) []byte {
	var b []byte
	for _, p := range payloads {
		b = message.AppendV0(b, []byte(p))
	}
	return b
}

func consumerSees(t *testing.T, p *Partition) int64 {
	t.Helper()
	c, code, err := p.ReadForConsumer(0, 1<<20)
	if err != nil || code != protocol.ErrNone {
		t.Fatalf("consumer read: %v, %v", code, err)
	}
	c.Release()
	return c.Len
}

// "A message is committed when every replica in the ISR has appended it; a consumer is served a message only
// once it is committed AND the leader has flushed it (paper §3.1): min(HW, the leader's flushed end)."
func TestClaim_ConsumersSeeCommittedAndFlushedBytesOnly(t *testing.T) {
	p := replica(t, 0, 1)
	if err := p.becomeLeader(state(0, 0, 0, 1, 2), 1); err != nil {
		t.Fatal(err)
	}
	m := set("committed?")
	_, end, code, err := p.Append(m, protocol.AcksLeader)
	if code != protocol.ErrNone || err != nil {
		t.Fatal(code, err)
	}
	if err := p.log.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := consumerSees(t, p); n != 0 {
		t.Fatalf("flushed but not committed (no follower has it): a consumer sees %d bytes, want 0", n)
	}
	// Follower 1 has it; follower 2, also in the ISR, does not yet.
	for _, f := range []int32{1, 2} {
		c, _, _, _, _ := p.FollowerFetch(f, 0, 1<<20, nil)
		c.Release()
	}
	c, _, _, _, _ := p.FollowerFetch(1, end, 1<<20, nil)
	c.Release()
	if n := consumerSees(t, p); n != 0 || p.HighWatermark() != 0 {
		t.Fatalf("one of two followers has it: HW %d, a consumer sees %d bytes; want 0 and 0", p.HighWatermark(), n)
	}
	c, _, _, _, _ = p.FollowerFetch(2, end, 1<<20, nil)
	c.Release()
	if p.HighWatermark() != end {
		t.Fatalf("every ISR member has it: HW %d, want %d", p.HighWatermark(), end)
	}
	if n := consumerSees(t, p); n != end {
		t.Fatalf("committed and flushed: a consumer sees %d bytes, want %d", n, end)
	}
	// The other way round: committed at once (acks=-1 on a one-member ISR) but not flushed.
	q := replica(t, 0, 1)
	if err := q.becomeLeader(state(0, 0, 0), 1); err != nil {
		t.Fatal(err)
	}
	if _, end, code, _ := q.Append(m, protocol.AcksAll); code != protocol.ErrNone || q.WaitCommitted(end, time.Second) != protocol.ErrNone {
		t.Fatalf("acks=-1 on an ISR of one: %v", code)
	}
	if n := consumerSees(t, q); n != 0 {
		t.Fatalf("committed but not flushed: a consumer sees %d bytes, want 0 (§3.1)", n)
	}
	q.log.Flush()
	if n := consumerSees(t, q); n != int64(len(m)) {
		t.Fatalf("committed and flushed: %d bytes, want %d", n, len(m))
	}
}

// "Here the follower asks the leader where the follower's latest epoch ends in the leader's log and truncates
// there": a follower whose checkpointed HW is stale keeps the committed messages past it, which 0.8's
// truncation to the HW would have thrown away; and it still cuts off an old leader's uncommitted tail.
func TestClaim_EpochTruncationKeepsWhatAStaleHWWouldLose(t *testing.T) {
	// The follower has m1 and m2 of epoch 0; the leader acknowledged both (acks=-1), but the follower's HW
	// (learned one fetch late, checkpointed every few seconds) still says m1's end.
	f := replica(t, 1, 1)
	m1, m2 := set("m1"), set("m2")
	if err := f.appendAsFollower(m1, 0, []protocol.EpochEntry{{Epoch: 0, Start: 0}}, 0); err != nil {
		t.Fatal(err)
	}
	if err := f.appendAsFollower(m2, int64(len(m1)), nil, int64(len(m1))); err != nil {
		t.Fatal(err)
	}
	leo := f.log.LogEndOffset()
	staleHW := f.HighWatermark()
	if staleHW != int64(len(m1)) {
		t.Fatalf("stale HW %d, want %d", staleHW, len(m1))
	}
	// The leader (same epoch 0, it wrote both) says epoch 0 ends at its log end, m2's end.
	if err := f.truncateTo(0, 0, leo); err != nil {
		t.Fatal(err)
	}
	if got := f.log.LogEndOffset(); got != leo {
		t.Fatalf("after truncation by epoch the log ends at %d, want %d (m2 kept); 0.8 would have cut to its HW %d", got, leo, staleHW)
	}
	// Divergence: the follower had led epoch 1 and written m3, which nobody else got; the new leader's
	// history is (0, 0), (2, leo): asked for epoch 1 it answers epoch 0, ending at leo. m3 must go.
	if err := f.becomeLeader(state(1, 1, 1), 2); err != nil {
		t.Fatal(err)
	}
	if _, _, code, err := f.Append(set("m3"), protocol.AcksLeader); code != protocol.ErrNone || err != nil {
		t.Fatal(code, err)
	}
	f.becomeFollower(state(0, 2, 0, 1), 3)
	if err := f.truncateTo(1, 0, leo); err != nil {
		t.Fatal(err)
	}
	if got := f.log.LogEndOffset(); got != leo {
		t.Fatalf("the old leader's uncommitted m3: log ends at %d, want %d", got, leo)
	}
	if f.epoch.latest() != 0 {
		t.Fatalf("epoch 1 started past the truncation point and should be forgotten: latest %d", f.epoch.latest())
	}
}

// "With fewer than min.insync.replicas replicas in the ISR the set is refused before it is appended
// (NotEnoughReplicas)."
func TestClaim_MinInsyncReplicasRefusesBeforeAppending(t *testing.T) {
	p := replica(t, 0, 2)
	if err := p.becomeLeader(state(0, 0, 0), 1); err != nil {
		t.Fatal(err)
	}
	if _, _, code, _ := p.Append(set("x"), protocol.AcksAll); code != protocol.ErrNotEnoughReplicas {
		t.Fatalf("acks=-1 with ISR [0] and min.insync.replicas=2: %v, want NotEnoughReplicas", code)
	}
	if p.log.LogEndOffset() != 0 {
		t.Fatalf("refused set was appended: log end %d", p.log.LogEndOffset())
	}
	if _, _, code, _ := p.Append(set("x"), protocol.AcksLeader); code != protocol.ErrNone {
		t.Fatalf("acks=1 is not bound by min.insync.replicas: %v", code)
	}
}

// "A follower leaves the ISR when it has not caught up with the leader for replica.lag.time.max.ms or is more
// than replica.lag.max.messages messages behind."
func TestClaim_LaggingFollowersLeaveTheISR(t *testing.T) {
	p := replica(t, 0, 1)
	if err := p.becomeLeader(state(0, 0, 0, 1, 2), 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		p.Append(set("a"), protocol.AcksLeader)
	}
	leo := p.log.LogEndOffset()
	c, _, _, _, _ := p.FollowerFetch(1, leo, 1<<20, nil) // caught up
	c.Release()
	c, _, _, _, _ = p.FollowerFetch(2, 0, 1<<20, nil) // 10 messages behind
	c.Release()
	now := time.Now()
	if out := p.laggards(now, time.Minute, 5); len(out) != 1 || out[0] != 2 {
		t.Fatalf("replica.lag.max.messages=5: laggards %v, want [2]", out)
	}
	if out := p.laggards(now.Add(2*time.Minute), time.Minute, 0); len(out) != 2 {
		t.Fatalf("nobody caught up for two minutes with replica.lag.time.max.ms=1m: laggards %v, want [1 2]", out)
	}
}

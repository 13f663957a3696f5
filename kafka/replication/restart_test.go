package replication

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// "A leader never continues an epoch across a restart" (docs/PROTOCOL.md §10, broker epochs): a process
// that reopens a replica whose history already holds epoch E refuses to lead E, even if it led E before it
// died (its unflushed end may be gone, and its followers hold more of E); it leads a newer epoch. The
// process that took an epoch may be told it again (a controller resending what it decided).
func TestLeaderNeverContinuesAnEpochAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	open := func() (*Partition, func()) {
		cfg := log.DefaultConfig()
		cfg.FlushInterval, cfg.FlushIntervalMs = 0, 0
		l, err := log.Open(dir, cfg, false)
		if err != nil {
			t.Fatal(err)
		}
		ec, err := loadEpochs(l.Dir(), true)
		if err != nil {
			t.Fatal(err)
		}
		c := DefaultConfig()
		c.BrokerID = 0
		return newPartition(&Manager{cfg: c, lg: slog.Default()}, TopicPartition{"t", 0}, l, ec, 0), func() { l.Close() }
	}
	p, closeLog := open()
	if err := p.becomeLeader(state(0, 0, 0, 1, 2), 1); err != nil {
		t.Fatalf("first leadership of epoch 0: %v", err)
	}
	if _, _, code, err := p.Append(set("a", "b"), 0); err != nil || code != protocol.ErrNone {
		t.Fatal(code, err)
	}
	if err := p.becomeLeader(state(0, 0, 0, 1, 2), 1); err != nil {
		t.Fatalf("the same process told epoch 0 again: %v", err)
	}
	closeLog()

	p, closeLog = open() // the broker restarted
	defer closeLog()
	err := p.becomeLeader(state(0, 0, 0, 1, 2), 2)
	if !errors.Is(err, ErrStaleEpoch) || p.IsLeader() {
		t.Fatalf("a restarted replica told to lead epoch 0 again: err %v, leading %v; want ErrStaleEpoch and not leading", err, p.IsLeader())
	}
	if err := p.becomeLeader(state(0, 1, 0), 2); err != nil || !p.IsLeader() {
		t.Fatalf("a restarted replica told to lead epoch 1: %v, leading %v", err, p.IsLeader())
	}
	if got := p.Snapshot().Epochs; len(got) != 2 || got[1].Epoch != 1 || got[1].Start != p.log.LogEndOffset() {
		t.Errorf("epoch history %v: want epoch 1 starting at the log end %d", got, p.log.LogEndOffset())
	}
}

// "A broker refuses requests for an older epoch of its own": a LEADER_AND_ISR the controller made for this
// broker's previous registration is refused whole (ErrStaleBrokerEpoch) before any partition is touched;
// one for the current registration, or from a controller that does not know the epoch (0), is applied.
func TestLeaderAndISRForAnEarlierRegistrationIsRefused(t *testing.T) {
	c := DefaultConfig()
	c.BrokerID = 1
	c.BrokerEpoch = func() int64 { return 4294967352 }
	m := &Manager{cfg: c, lg: slog.Default(), parts: map[TopicPartition]*Partition{}, kinds: map[string]bool{}, fetchers: map[fetcherKey]*fetcher{}}
	p := replica(t, 1, 1)
	p.m = m
	m.parts[p.tp] = p
	req := protocol.LeaderAndISRRequest{ControllerID: 0, ControllerEpoch: 3, BrokerEpoch: 4294967339,
		Partitions: []protocol.PartitionState{{Topic: "t", Partition: 0, Leader: 1, LeaderEpoch: 2, ISR: []int32{1}, Replicas: []int32{1}}}}
	code, parts := m.HandleLeaderAndISR(&req)
	if code != protocol.ErrStaleBrokerEpoch || len(parts) != 0 || p.IsLeader() {
		t.Fatalf("LEADER_AND_ISR for broker epoch %d (current %d): %v %+v, leading %v; want %v, no partition, not leading",
			req.BrokerEpoch, c.BrokerEpoch(), code, parts, p.IsLeader(), protocol.ErrStaleBrokerEpoch)
	}
	if m.ctrlEpoch != 3 {
		t.Errorf("controller epoch %d after a request of epoch 3", m.ctrlEpoch)
	}
	// The current registration's epoch, or none known (0): applied.
	for i, e := range []int64{4294967352, 0} {
		req.BrokerEpoch = e
		req.Partitions[0].LeaderEpoch = int32(2 + i)
		code, parts := m.HandleLeaderAndISR(&req)
		if code != protocol.ErrNone || len(parts) != 1 || parts[0].Error != protocol.ErrNone || !p.IsLeader() {
			t.Errorf("LEADER_AND_ISR for broker epoch %d (current %d): %v %+v, leading %v; want it applied", e, c.BrokerEpoch(), code, parts, p.IsLeader())
		}
	}
}

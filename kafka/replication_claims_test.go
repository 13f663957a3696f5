package kafka_test

// Replication's claims (docs/PROTOCOL.md §10, the package doc of kafka/replication), one sentence each, in
// the manner of paper_claims_test.go. They run brokers in process against a real ZooKeeper.

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// "Followers fetch from the leader like consumers and append the leader's bytes verbatim, so a message has
// the same byte offset (§3.1) on every replica."
func TestIntegration_ClaimSameByteOffsetsOnEveryReplica(t *testing.T) {
	rc := startReplCluster(t, 3, nil)
	rc.create("same", replication.Assignment{{0, 2, 1}}) // broker 0 leads: its state is all zeros (leader 0, epoch 0, version 0)
	leader := rc.leaderBroker("same", 0)
	cl := dialRaw(t, leader.HostPort())
	var offsets []int64
	for i := range 20 {
		res := cl.produce("same", 0, protocol.AcksAll, 5*time.Second, "message "+string(rune('a'+i)), "and another")
		if res.Error != protocol.ErrNone {
			t.Fatalf("produce %d: %v", i, res.Error)
		}
		offsets = append(offsets, res.Offset)
	}
	end := rc.brokers[1].Replication().Partition("same", 0).Log().LogEndOffset()
	var logs [][]byte
	for _, b := range rc.brokers {
		l := b.Replication().Partition("same", 0).Log()
		rc.waitFor("every replica at the leader's end", func() bool { return l.LogEndOffset() == end })
		c, err := l.ReadUpTo(0, 1<<20, end)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, c.Len)
		c.ReadAt(buf)
		c.Release()
		logs = append(logs, buf)
	}
	for i := 1; i < len(logs); i++ {
		if !bytes.Equal(logs[0], logs[i]) {
			t.Fatalf("broker %d's log differs from broker %d's", rc.brokers[i].ID, rc.brokers[0].ID)
		}
	}
	t.Logf("20 sets at offsets %v...; %d identical bytes on brokers 0, 1 and 2", offsets[:3], len(logs[0]))
}

// "-1: answered once the message is committed (synchronous replication)": every set acknowledged with acks=-1
// is read back, at the same offset, from the new leader after the old one is stopped.
func TestIntegration_ClaimAcksAllSurvivesTheLeader(t *testing.T) {
	rc := startReplCluster(t, 3, map[string]string{"log.flush.interval": "1"})
	rc.create("safe", replication.Assignment{{1, 2, 0}})
	old := rc.leaderBroker("safe", 0)
	cl := dialRaw(t, old.HostPort())
	acked := map[int64]string{}
	for i := range 50 {
		m := "acknowledged " + string(rune('A'+i%26)) + string(rune('a'+i/26))
		res := cl.produce("safe", 0, protocol.AcksAll, 5*time.Second, m)
		if res.Error != protocol.ErrNone {
			t.Fatalf("produce %d: %v", i, res.Error)
		}
		acked[res.Offset] = m
	}
	if err := old.Stop(); err != nil {
		t.Fatal(err)
	}
	rc.waitFor("a new leader", func() bool { b := rc.leaderBroker("safe", 0); return b != nil && b != old })
	nl := rc.leaderBroker("safe", 0)
	rc.waitFor("the new leader's HW over everything acknowledged", func() bool {
		return nl.Replication().Partition("safe", 0).HighWatermark() >= nl.Replication().Partition("safe", 0).Log().LogEndOffset()
	})
	nl.Flush("safe", 0)
	code, set := dialRaw(t, nl.HostPort()).fetch("safe", 0, 0)
	if code != protocol.ErrNone {
		t.Fatalf("fetch from the new leader %d: %v", nl.ID, code)
	}
	got := map[int64]string{}
	it := message.NewIterator(set, 0)
	for it.Next() {
		got[it.Offset()] = string(it.Message().Payload())
	}
	for off, m := range acked {
		if got[off] != m {
			t.Errorf("acknowledged %q at offset %d; the new leader has %q there", m, off, got[off])
		}
	}
	t.Logf("acknowledged %d, read back %d from broker %d after broker %d stopped; lost %d", len(acked), len(got), nl.ID, old.ID, len(acked)-len(got))
}

// "A follower leaves the ISR when ... and comes back when its fetch offset reaches the leader's LEO": a
// stopped follower leaves (the controller takes a dead broker out), the ISR of one still commits acks=-1,
// and the follower is back once it has fetched what it missed.
func TestIntegration_ClaimISRShrinksAndExpands(t *testing.T) {
	rc := startReplCluster(t, 3, nil)
	rc.create("isr", replication.Assignment{{0, 1, 2}})
	cl := dialRaw(t, rc.brokers[0].HostPort())
	if res := cl.produce("isr", 0, protocol.AcksAll, 5*time.Second, "before"); res.Error != protocol.ErrNone {
		t.Fatal(res.Error)
	}
	rc.brokers[2].Stop()
	rc.waitISR("isr", 0, 0, 1)
	for i := range 20 {
		if res := cl.produce("isr", 0, protocol.AcksAll, 5*time.Second, "while 2 is away "+string(rune('a'+i))); res.Error != protocol.ErrNone {
			t.Fatalf("acks=-1 with ISR [0 1]: %v", res.Error)
		}
	}
	rc.brokers[2].Restart()
	rc.waitISR("isr", 0, 0, 1, 2)
	leader := rc.brokers[0].Replication().Partition("isr", 0).Log().LogEndOffset()
	if got := rc.brokers[2].Replication().Partition("isr", 0).Log().LogEndOffset(); got != leader {
		t.Fatalf("broker 2 back in the ISR at log end %d, the leader's is %d", got, leader)
	}
}

// "A broker refuses a request with an epoch older than the newest it has seen (StaleControllerEpoch)": a
// LEADER_AND_ISR from a deposed controller changes nothing.
func TestIntegration_ClaimStaleControllerEpochIsRefused(t *testing.T) {
	rc := startReplCluster(t, 3, nil)
	rc.create("epochs", replication.Assignment{{0, 1, 2}})
	st := rc.state("epochs", 0)
	b := rc.brokers[1]
	stale := protocol.LeaderAndISRRequest{ControllerID: 2, ControllerEpoch: st.ControllerEpoch - 1,
		Brokers: []protocol.BrokerAddr{{ID: 1, Host: "127.0.0.1", Port: 1}},
		Partitions: []protocol.PartitionState{{Topic: "epochs", Partition: 0, Leader: 1, LeaderEpoch: st.LeaderEpoch + 5,
			ISR: []int32{1}, Replicas: []int32{0, 1, 2}}}}
	code, _, err := dialRaw(t, b.HostPort()).call(stale)
	if err != nil || code != protocol.ErrStaleControllerEpoch {
		t.Fatalf("LEADER_AND_ISR with controller epoch %d (current %d): %v, %v; want StaleControllerEpoch", stale.ControllerEpoch, st.ControllerEpoch, code, err)
	}
	if b.Replication().Partition("epochs", 0).IsLeader() {
		t.Fatal("broker 1 took the leadership a stale controller offered")
	}
	// Nor can it change the partition's state in ZooKeeper: its writes are fenced by /controller_epoch's
	// version, which the newer election moved.
	data, ev, err := rc.zk.GetVersion(zk.ControllerEpochPath) // the version the current controller's writes are fenced by
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rc.zk.SetVersion(zk.ControllerEpochPath, data, ev); err != nil { // as a newer election does
		t.Fatal(err)
	}
	forged := st
	forged.Leader = 1
	_, err = rc.zk.SetVersionFenced(zk.PartitionStatePath("epochs", 0), forged.Marshal(), st.ZKVersion, false, zk.ControllerEpochPath, ev)
	if !errors.Is(err, zk.ErrFenced) {
		t.Fatalf("a state write fenced by an old controller epoch: %v, want zk.ErrFenced", err)
	}
	if now := rc.state("epochs", 0); now.Leader != st.Leader || now.ZKVersion != st.ZKVersion {
		t.Fatalf("state changed by a fenced write: %+v, was %+v", now, st)
	}
}

// "If no ISR member is alive the partition stays offline (leader -1) unless unclean.leader.election.enable is
// true, in which case any live replica becomes leader and committed messages can be lost."
func TestIntegration_ClaimUncleanLeaderElection(t *testing.T) {
	for _, unclean := range []bool{false, true} {
		t.Run(map[bool]string{false: "disabled", true: "enabled"}[unclean], func(t *testing.T) {
			rc := startReplCluster(t, 3, map[string]string{"unclean.leader.election.enable": map[bool]string{false: "false", true: "true"}[unclean]})
			rc.create("u", replication.Assignment{{1, 2}})
			rc.brokers[2].Stop() // the follower: ISR [1]
			rc.waitISR("u", 0, 1)
			if res := dialRaw(t, rc.brokers[1].HostPort()).produce("u", 0, protocol.AcksAll, 5*time.Second, "only on 1"); res.Error != protocol.ErrNone {
				t.Fatal(res.Error)
			}
			rc.brokers[1].Stop() // the last ISR member
			rc.waitFor("partition offline", func() bool { return rc.state("u", 0).Leader == -1 })
			rc.brokers[2].Restart() // alive, but not in the ISR
			if !unclean {
				time.Sleep(2 * time.Second)
				if s := rc.state("u", 0); s.Leader != -1 {
					t.Fatalf("unclean election disabled: broker %d leads a partition whose only in-sync replica is dead", s.Leader)
				}
				rc.brokers[1].Restart()
				rc.waitFor("broker 1, the in-sync one, leading again", func() bool { return rc.state("u", 0).Leader == 1 })
				return
			}
			rc.waitFor("broker 2 elected uncleanly", func() bool { return rc.state("u", 0).Leader == 2 })
			if n := rc.brokers[2].Replication().Partition("u", 0).Log().LogEndOffset(); n != 0 {
				t.Fatalf("broker 2's log end %d; it never had the message", n)
			}
			t.Logf("the committed message acknowledged by broker 1 is not on the new leader: the price of unclean.leader.election.enable")
		})
	}
}

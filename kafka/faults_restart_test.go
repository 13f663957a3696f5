package kafka_test

// A broker that restarts after losing its unflushed end must never go on leading as if nothing happened
// (docs/PROTOCOL.md §10, "broker epochs"; replication.Decide). Two ways it did, each found from outside
// with kill -9 and cut segment files standing in for a power loss, and each losing acknowledged acks=-1
// messages before broker epochs: the leader restarts and registers again while the controller is paused
// (so the controller never sees it gone), and the whole cluster loses power with only one machine keeping
// everything. Each prints acknowledged / read back / lost / duplicated.

import (
	"strconv"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/internal/faults"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// The leader's machine loses power, and the broker is back and registered again before the controller has
// seen it gone (the controller is paused with SIGSTOP, under its own session timeout, while the leader's old
// session expires and it registers anew). The controller must treat the new registration as a broker that
// died and came back: another ISR member leads in a new leader epoch, and the restarted broker follows.
func TestIntegration_FaultLeaderRestartUnseenByTheController(t *testing.T) {
	if testing.Short() {
		t.Skip("broker processes and ZooKeeper (skipped with -short)")
	}
	for round := range faultScale(1, 3) {
		t.Run("round "+strconv.Itoa(round+1), func(t *testing.T) { leaderRestartUnseen(t) })
	}
}

func leaderRestartUnseen(t *testing.T) {
	// The controller's session outlasts its pause; replica.lag.time.max.ms keeps the ISR whole through it.
	c := faults.Start(t, faults.Options{Brokers: 3, Props: map[string]string{
		"zk.sessiontimeout.ms": "8000", "replica.lag.time.max.ms": "10000", "min.insync.replicas": "2"}})
	// The first replicated topic starts the controller election; the topic under test is then led by
	// another broker, whose own session is short so that it expires while the controller is paused.
	c.CreateTopic("first", replication.Assignment{{0, 1, 2}})
	ctl := waitController(t, c)
	l := (ctl + 1) % 3
	leader, controller := c.Brokers[l], c.Brokers[ctl]
	leader.Set("zk.sessiontimeout.ms", "2000")
	leader.Stop()
	leader.Restart()
	c.WaitInISR("first", 0, l, time.Minute)
	const topic = "jt"
	c.CreateTopic(topic, replication.Assignment{{int32(l), int32((l + 1) % 3), int32((l + 2) % 3)}})
	if got := c.Leader(topic, 0); got != leader || c.Controller() != ctl {
		t.Fatalf("%s-0 led by %d with controller %d; want %d and %d", topic, got.ID, c.Controller(), l, ctl)
	}
	run := startAcksAll(t, c, topic)
	time.Sleep(2 * time.Second)

	before := c.State(topic, 0)
	oldEpoch := c.BrokerEpoch(l)
	leader.Kill()
	cut := leader.CutTail(topic, 0, 8<<10)
	controller.Pause()
	paused := time.Now()
	leader.Restart()
	newEpoch := c.WaitRegisteredAgain(l, oldEpoch, 6*time.Second)
	controller.Resume()
	t.Logf("faults: leader %d killed, %d bytes cut off its last segment, restarted; registered again (broker epoch %d → %d) while controller %d was paused for %v",
		l, cut, oldEpoch, newEpoch, ctl, time.Since(paused).Round(time.Millisecond))

	// The rule itself: the restarted broker does not lead the epoch it led before.
	var after replication.State
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if after = c.State(topic, 0); after.Leader >= 0 && (after.Leader != before.Leader || after.LeaderEpoch != before.LeaderEpoch) {
			break
		}
	}
	t.Logf("faults: state before %+v, after the controller resumed %+v", before, after)
	if after.Leader == int32(l) && after.LeaderEpoch == before.LeaderEpoch || after.Leader < 0 {
		t.Errorf("after the unseen restart of leader %d: leader %d in epoch %d (was %d in %d); want another ISR member in a newer epoch",
			l, after.Leader, after.LeaderEpoch, before.Leader, before.LeaderEpoch)
	}

	time.Sleep(8 * time.Second)
	leader.Kill()
	time.Sleep(2 * time.Second)
	leader.Restart()
	checkNothingAckedLost(t, c, run, topic, "a leader restart the controller did not see")
}

// The whole cluster loses power: every broker is killed, the leader's machine loses 8 KiB of its log and
// the next one's 12 KiB, the third nothing. They come back in that order, the third 3 s after the others,
// and 5 s later the first two are killed again. No ISR member is known to hold every committed message, so
// the partition waits for all of them and the longest log (the third's) leads: nothing acknowledged is lost.
func TestIntegration_FaultWholeClusterPowerLoss(t *testing.T) {
	if testing.Short() {
		t.Skip("broker processes and ZooKeeper (skipped with -short)")
	}
	for round := range faultScale(1, 3) {
		t.Run("round "+strconv.Itoa(round+1), func(t *testing.T) { wholeClusterPowerLoss(t) })
	}
}

func wholeClusterPowerLoss(t *testing.T) {
	c := faults.Start(t, faults.Options{Brokers: 3, Props: map[string]string{"min.insync.replicas": "2"}})
	const topic = "wc"
	c.CreateTopic(topic, replication.Assignment{{0, 1, 2}})
	run := startAcksAll(t, c, topic)
	time.Sleep(2 * time.Second)
	before := c.State(topic, 0)
	first, second, third := c.Brokers[before.Leader], c.Brokers[(before.Leader+1)%3], c.Brokers[(before.Leader+2)%3]
	for _, b := range c.Brokers {
		b.Kill()
	}
	cut1, cut2 := first.CutTail(topic, 0, 8<<10), second.CutTail(topic, 0, 12<<10)
	t.Logf("faults: all three killed (state %+v); %d bytes cut off broker %d's log, %d off broker %d's, none off broker %d's",
		before, cut1, first.ID, cut2, second.ID, third.ID)
	first.Restart()
	second.Restart()
	time.Sleep(3 * time.Second)
	third.Restart()
	time.Sleep(5 * time.Second)
	first.Kill()
	second.Kill()
	t.Logf("faults: brokers %d and %d killed again 5 s after broker %d came back", first.ID, second.ID, third.ID)

	_, s := c.WaitLeaderMoved(topic, 0, -1, time.Minute)
	if s.Leader != int32(third.ID) || s.LeaderEpoch <= before.LeaderEpoch {
		t.Errorf("after the power loss: leader %d in epoch %d; want broker %d (the longest log) in an epoch after %d",
			s.Leader, s.LeaderEpoch, third.ID, before.LeaderEpoch)
	}
	first.Restart()
	second.Restart()
	checkNothingAckedLost(t, c, run, topic, "a power loss of the whole cluster")
}

// startAcksAll starts an acks=-1 producer of sets of 10 on the topic's one partition and waits for its
// first acknowledgement, before any fault.
func startAcksAll(t *testing.T, c *faults.Cluster, topic string) *faults.Run {
	t.Helper()
	run := faults.Workload{Topic: topic, Partitions: 1, SetSize: 10, MessageSize: 100, Acks: protocol.AcksAll,
		Pause: 2 * time.Millisecond}.Start(t, c)
	if _, ok := run.AckedAfter(0, time.Now(), 30*time.Second); !ok {
		t.Fatal("the producer was not acknowledged before any fault")
	}
	return run
}

// checkNothingAckedLost waits until all three replicas of the topic's one partition are in sync again,
// stops the workload, reads the partition back and checks that every acknowledged message is there and
// that the replicas hold the same bytes.
func checkNothingAckedLost(t *testing.T, c *faults.Cluster, run *faults.Run, topic, across string) {
	t.Helper()
	c.WaitISR(topic, 0, 3, time.Minute)
	time.Sleep(time.Second)
	run.Stop()
	res := faults.Check(faults.ReadBack(t, c, topic, 1, 2*time.Second), nil, run)
	t.Logf("faults: %s", res)
	if res.Acked == 0 || res.Lost > 0 || !res.OK() {
		t.Errorf("acks=-1 across %s: %s", across, res)
	}
	checkReplicasIdentical(t, c, topic, 1)
}

// waitController waits until ZooKeeper names a controller and returns its id.
func waitController(t *testing.T, c *faults.Cluster) int {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if id := c.Controller(); id >= 0 {
			return id
		}
	}
	t.Fatal("no controller within a minute")
	return -1
}

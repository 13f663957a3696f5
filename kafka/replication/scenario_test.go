package replication

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Scenarios of the package doc, run by a testCluster (managers on an in-memory store, no servers): each
// step a script, each wait a condition.

// controllerID waits for a controller and returns its id.
func (c *testCluster) controllerID() int32 {
	c.t.Helper()
	var id int32 = -1
	c.waitFor("a controller", 10*time.Second, func() bool {
		var err error
		id, err = ReadController(c.store)
		return err == nil && id >= 0
	})
	return id
}

// leading reports whether broker id runs and leads the partition.
func (c *testCluster) leading(id int32, topic string, p int32) bool {
	b := c.brokers[id]
	if b.m == nil {
		return false
	}
	rp := b.m.Partition(topic, p)
	return rp != nil && rp.IsLeader()
}

// createTopic creates a replicated topic and waits until every partition has a leader and a full ISR.
func (c *testCluster) createTopic(topic string, a Assignment) {
	c.t.Helper()
	if err := CreateTopic(c.store, topic, a); err != nil {
		c.t.Fatal(err)
	}
	for p, rs := range a {
		c.waitFor("the ISR of "+topic+"-"+strconv.Itoa(p), 10*time.Second, func() bool {
			s := c.state(topic, p)
			return s.Leader >= 0 && len(s.ISR) == len(rs) && c.leading(s.Leader, topic, int32(p))
		})
	}
}

// waitSame waits until the brokers' logs of the partition have the same end, at least min.
func (c *testCluster) waitSame(topic string, p int32, min int64, ids ...int32) {
	c.t.Helper()
	c.waitFor("the replicas of "+topic+" at one end", 10*time.Second, func() bool {
		end := c.leo(ids[0], topic, p)
		for _, id := range ids[1:] {
			if c.leo(id, topic, p) != end {
				return false
			}
		}
		return end >= min
	})
}

// The controller creates a new topic's partition states (the first replica leads, every live replica in
// sync, their broker epochs recorded), the brokers lead and follow as told, the followers copy the leader's
// bytes and the high watermark moves; the broker answers METADATA from the store.
func TestScenario_NewTopicIsLedAndReplicated(t *testing.T) {
	c := startTestCluster(t, 3)
	c.createTopic("r", Assignment{{0, 1, 2}, {1, 2, 0}})
	for p, leader := range []int32{0, 1} {
		s := c.state("r", p)
		if s.Leader != leader || s.LeaderEpoch != 0 || len(s.BrokerEpochs) != 3 {
			t.Errorf("r-%d: %+v, want leader %d in epoch 0 with 3 broker epochs", p, s, leader)
		}
		for _, id := range s.ISR {
			if s.BrokerEpochs[id] != c.brokers[id].m.brokerEpoch() {
				t.Errorf("r-%d: broker %d recorded with epoch %d, registered with %d", p, id, s.BrokerEpochs[id], c.brokers[id].m.brokerEpoch())
			}
		}
	}
	var end int64
	for i := range 20 {
		end = c.produce("r", 0, "m"+strconv.Itoa(i))
	}
	c.waitSame("r", 0, end, 0, 1, 2)
	leader := c.brokers[0].m.Partition("r", 0)
	c.waitFor("the high watermark at the end", 5*time.Second, func() bool { return leader.HighWatermark() == end })
	if !bytes.Equal(c.logBytes(1, "r", 0), c.logBytes(0, "r", 0)) {
		t.Error("a follower's bytes differ from the leader's")
	}
	md, err := c.brokers[2].m.Metadata([]string{"r", "nope"})
	if err != nil || len(md.Brokers) != 3 || len(md.Topics) != 2 || md.Topics[0].Partitions[1].Leader != 1 ||
		md.Topics[1].Error != protocol.ErrUnknownTopicOrPartition {
		t.Errorf("METADATA: %+v, %v", md, err)
	}
	if !c.brokers[2].m.Replicated("r") || c.brokers[2].m.Replicated("nope") {
		t.Error("Replicated is wrong about r or nope")
	}
}

// The leader's machine loses its unflushed end and the broker registers again before the controller saw it
// gone (the store replaces the registration in one step). The controller treats it as a broker that came
// back: another ISR member leads in a new epoch, the restarted broker follows and catches up, and nothing
// the ISR had is lost (kafka/faults_restart_test.go runs the same against processes).
func TestScenario_LeaderRegisteredAgainIsANewBroker(t *testing.T) {
	c := startTestCluster(t, 3)
	c.createTopic("first", Assignment{{0, 1, 2}})
	ctl := c.controllerID()
	l := (ctl + 1) % 3
	c.createTopic("jt", Assignment{{l, (l + 1) % 3, (l + 2) % 3}})
	var end int64
	for i := range 30 {
		end = c.produce("jt", 0, "acked "+strconv.Itoa(i))
	}
	c.waitSame("jt", 0, end, 0, 1, 2)
	before := c.state("jt", 0)

	// The restart: the process ends, its last segment loses its tail, a new process registers again.
	b := c.brokers[l]
	c.halt(b)
	seg := lastSegment(t, b.dir, "jt-0")
	st, _ := os.Stat(seg)
	if err := os.Truncate(seg, st.Size()-40); err != nil {
		t.Fatal(err)
	}
	c.restartRegisteredAgain(b)

	c.waitFor("a new leader in a new epoch, leading", 10*time.Second, func() bool {
		s := c.state("jt", 0)
		return s.Leader >= 0 && s.Leader != l && s.LeaderEpoch > before.LeaderEpoch && c.leading(s.Leader, "jt", 0)
	})
	after := c.state("jt", 0)
	for i := range 5 {
		end = c.produce("jt", 0, "after "+strconv.Itoa(i))
	}
	c.waitSame("jt", 0, end, 0, 1, 2)
	c.waitFor("the restarted broker back in the ISR", 10*time.Second, func() bool { return slices.Contains(c.state("jt", 0).ISR, l) })
	want := c.logBytes(after.Leader, "jt", 0)
	for id := range int32(3) {
		if got := c.logBytes(id, "jt", 0); !bytes.Equal(got, want) {
			t.Errorf("broker %d's log (%d bytes) differs from the new leader's (%d bytes)", id, len(got), len(want))
		}
	}
	if s := c.state("jt", 0); s.BrokerEpochs[l] != c.brokers[l].m.brokerEpoch() {
		t.Errorf("the restarted broker is in the ISR with epoch %d, registered with %d", s.BrokerEpochs[l], c.brokers[l].m.brokerEpoch())
	}
	t.Logf("leader %d registered again: state %+v → %+v", l, before, after)
}

// restartRegisteredAgain starts a stopped broker's manager again on the same directory, its registration
// replaced in one step (as a controller that did not see the old session end finds it).
func (c *testCluster) restartRegisteredAgain(b *testBroker) {
	c.t.Helper()
	c.start(b) // the registration is still there: start replaces it, with a new epoch
}

// Every ISR member registers again (the whole cluster lost power; two machines lost their unflushed ends):
// no member is known to hold every committed message, so the partition waits for all of them, the
// controller asks each where its log ends, and the longest log leads with an ISR of itself.
func TestScenario_EveryISRMemberRegisteredAgain(t *testing.T) {
	c := startTestCluster(t, 3)
	c.createTopic("wc", Assignment{{0, 1, 2}})
	var end int64
	for i := range 30 {
		end = c.produce("wc", 0, "acked "+strconv.Itoa(i))
	}
	c.waitSame("wc", 0, end, 0, 1, 2)
	for _, b := range c.brokers { // at once: no controller sees one go before the others
		c.halt(b)
	}
	for _, b := range c.brokers {
		c.store.Delete(zk.BrokerIDPath(int(b.id)))
	}
	c.store.Delete(zk.ControllerPath)
	for id, cut := range []int64{80, 120, 0} {
		if cut > 0 {
			seg := lastSegment(t, c.brokers[id].dir, "wc-0")
			st, _ := os.Stat(seg)
			os.Truncate(seg, st.Size()-cut)
		}
	}
	c.start(c.brokers[0])
	c.start(c.brokers[1])
	c.waitFor("offline while broker 2 is away", 10*time.Second, func() bool { return c.state("wc", 0).Leader == -1 })
	time.Sleep(100 * time.Millisecond)
	if s := c.state("wc", 0); s.Leader != -1 {
		t.Fatalf("with broker 2 away, %+v: a shorter log leads", s)
	}
	c.start(c.brokers[2])
	c.waitFor("broker 2, the longest log, leading", 10*time.Second, func() bool {
		s := c.state("wc", 0)
		return s.Leader == 2 && s.LeaderEpoch == 1 && c.leading(2, "wc", 0)
	})
	c.waitSame("wc", 0, end, 0, 1, 2)
	for id := range int32(2) {
		if !bytes.Equal(c.logBytes(id, "wc", 0), c.logBytes(2, "wc", 0)) {
			t.Errorf("broker %d's log differs from the longest one's", id)
		}
	}
}

// A controller deposed without knowing it (another one raised /controller_epoch) writes nothing: its
// write is fenced, it resigns, and a new election gives a newer epoch that decides.
func TestScenario_DeposedControllerWritesNothing(t *testing.T) {
	c := startTestCluster(t, 3)
	c.createTopic("d", Assignment{{0, 1, 2}})
	e, v, err := ReadControllerEpoch(c.store)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.store.SetVersion(zk.ControllerEpochPath, []byte(strconv.Itoa(int(e)+1)), v); err != nil {
		t.Fatal(err)
	}
	before := c.state("d", 0)
	c.stop(c.brokers[2]) // a change the deposed controller tries to write
	c.waitFor("a controller of a newer epoch deciding", 10*time.Second, func() bool {
		s := c.state("d", 0)
		return s.ControllerEpoch > e+1 && !slices.Contains(s.ISR, 2)
	})
	t.Logf("state %+v → %+v", before, c.state("d", 0))
}

// /admin/preferred_replica_election moves leadership back to the preferred replica once it is in sync, and
// the controller removes the request when done.
func TestScenario_PreferredReplicaElection(t *testing.T) {
	c := startTestCluster(t, 3)
	c.createTopic("pre", Assignment{{0, 1, 2}})
	c.stop(c.brokers[0])
	c.waitFor("another leader", 10*time.Second, func() bool { s := c.state("pre", 0); return s.Leader > 0 })
	c.start(c.brokers[0])
	c.waitFor("broker 0 back in the ISR", 10*time.Second, func() bool { return slices.Contains(c.state("pre", 0).ISR, 0) })
	if err := c.store.EnsurePath("/admin"); err != nil {
		t.Fatal(err)
	}
	if err := c.store.CreatePersistent(zk.PreferredReplicaElectionPath, MarshalElection([]TopicPartition{{"pre", 0}})); err != nil {
		t.Fatal(err)
	}
	c.waitFor("broker 0 leading again, the request removed", 10*time.Second, func() bool {
		_, err := c.store.Get(zk.PreferredReplicaElectionPath)
		return c.state("pre", 0).Leader == 0 && err != nil
	})
}

// A follower that stops fetching leaves the ISR after replica.lag.time.max.ms (the leader writes the smaller
// ISR with the remaining members' broker epochs), and rejoins with its new registration's epoch once it has
// caught up.
func TestScenario_FollowerLeavesAndRejoinsTheISR(t *testing.T) {
	c := startTestCluster(t, 3)
	c.createTopic("lag", Assignment{{0, 1, 2}})
	b := c.brokers[2]
	c.halt(b) // its registration stays: only the leader can notice

	for i := range 10 {
		c.produce("lag", 0, "while away "+strconv.Itoa(i))
	}
	c.waitFor("broker 2 out of the ISR", 10*time.Second, func() bool { return !slices.Contains(c.state("lag", 0).ISR, 2) })
	if s := c.state("lag", 0); s.Leader != 0 || len(s.BrokerEpochs) != 2 {
		t.Errorf("after the shrink: %+v, want leader 0 and two broker epochs", s)
	}
	c.restartRegisteredAgain(b)
	c.waitFor("broker 2 back in the ISR", 10*time.Second, func() bool { return slices.Contains(c.state("lag", 0).ISR, 2) })
	if s := c.state("lag", 0); s.BrokerEpochs[2] != b.m.brokerEpoch() {
		t.Errorf("broker 2 back with epoch %d, registered with %d", s.BrokerEpochs[2], b.m.brokerEpoch())
	}
	// The high watermark checkpoint is written.
	c.waitFor("a high-watermark checkpoint", 5*time.Second, func() bool {
		hws, err := readHWCheckpoint(c.brokers[0].dir)
		return err == nil && hws[TopicPartition{"lag", 0}] > 0
	})
}

// lastSegment is the path of a partition's newest segment file under dir.
func lastSegment(t *testing.T, dir, part string) string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, part, "*.kafka"))
	if len(files) == 0 {
		t.Fatalf("no segment in %s/%s", dir, part)
	}
	slices.Sort(files)
	return files[len(files)-1]
}

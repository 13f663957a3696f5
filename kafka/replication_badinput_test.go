package kafka_test

// Bad input to replication (docs/PROTOCOL.md §10): a replica fetch from a
// broker outside the replica list, a produce to a broker that does not lead, a LEADER_AND_ISR from a deposed
// controller, a topic created with more replicas than brokers, and hostile topic names. Each gets a clear
// error, the broker goes on serving, and nothing is lost or half-created: the tests compare the logs, the
// partition states in ZooKeeper and the log directories before and after.

import (
	"errors"
	"maps"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func TestIntegration_ReplicationBadInput(t *testing.T) {
	rc := startReplCluster(t, 3, nil)
	// "two" has replicas 1 and 2 only: broker 0 is alive but no replica of it.
	rc.create("two", replication.Assignment{{1, 2}})
	rc.waitISR("two", 0, 1, 2)
	leader, follower, stranger := rc.brokers[1], rc.brokers[2], rc.brokers[0]
	if rc.leaderBroker("two", 0) != leader {
		t.Fatalf("broker 1 (the preferred replica) does not lead two-0")
	}
	cl := dialRaw(t, leader.HostPort())
	for i := range 5 {
		if res := cl.produce("two", 0, protocol.AcksAll, 5*time.Second, "before "+string(rune('a'+i))); res.Error != protocol.ErrNone {
			t.Fatalf("produce to the leader: %v", res.Error)
		}
	}
	acked := []string{"before a", "before b", "before c", "before d", "before e"}
	dirsBefore := logDirs(t, rc.brokers)

	t.Run("replica fetch from a broker outside the replica list", func(t *testing.T) {
		stateBefore := rc.state("two", 0)
		snap := leader.Replication().Partition("two", 0).Snapshot()
		for _, id := range []int32{0, 99, -1, 1} { // alive but not a replica, unknown, a consumer's id, the leader itself
			parts := rc.replicaFetch(cl, id, "two", 0, 0)
			if len(parts) != 1 || parts[0].err != protocol.ErrReplicaNotAvailable || parts[0].setLen != 0 {
				t.Errorf("REPLICA_FETCH from broker %d: %+v, want one part with error %d (replica not available) and no bytes",
					id, parts, protocol.ErrReplicaNotAvailable)
			}
		}
		if parts := rc.replicaFetch(cl, 2, "two", 0, 0); len(parts) != 1 || parts[0].err != protocol.ErrNone || parts[0].setLen == 0 {
			t.Errorf("REPLICA_FETCH from the follower, on the same connection: %+v, want the log's bytes", parts)
		}
		after := leader.Replication().Partition("two", 0).Snapshot()
		if !slices.Equal(after.ISR, snap.ISR) || after.HighWatermark < snap.HighWatermark || after.LEO != snap.LEO {
			t.Errorf("the strangers' fetches changed the leader: %+v, was %+v", after, snap)
		}
		if s := rc.state("two", 0); !slices.Equal(s.ISR, stateBefore.ISR) || s.LeaderEpoch != stateBefore.LeaderEpoch {
			t.Errorf("the strangers' fetches changed the state node: %+v, was %+v", s, stateBefore)
		}
	})

	t.Run("produce to a broker that does not lead", func(t *testing.T) {
		leo := map[int]int64{1: rc.leo(leader, "two"), 2: rc.leo(follower, "two")}
		for _, b := range []*brokertest.Broker{follower, stranger} {
			c := dialRaw(t, b.HostPort())
			for _, acks := range []int16{1, protocol.AcksAll} {
				if res := c.produce("two", 0, acks, time.Second, "to a non-leader"); res.Error != protocol.ErrNotLeaderForPartition || res.Offset >= 0 {
					t.Errorf("acks=%d produce to broker %d: error %d offset %d, want %d (not leader) and no offset",
						acks, b.ID, res.Error, res.Offset, protocol.ErrNotLeaderForPartition)
				}
			}
			if code, _ := c.fetch("two", 0, 0); code != protocol.ErrNotLeaderForPartition {
				t.Errorf("FETCH from broker %d: error %d, want %d (not leader)", b.ID, code, protocol.ErrNotLeaderForPartition)
			}
			// acks=0 has no answer: the broker closes the connection so that the producer looks the leader up.
			set := message.AppendV0(nil, []byte("acks 0 to a non-leader"))
			if _, _, err := c.call(protocol.AckedProduceRequest{Acks: protocol.AcksNone, TimeoutMs: 1000,
				Produces: []protocol.ProduceRequest{{Topic: "two", Partition: 0, Messages: set}}}); err == nil {
				t.Errorf("acks=0 produce to broker %d answered; want the connection closed", b.ID)
			}
			// 0.7's PRODUCE to a replicated topic on a non-leader is dropped (and logged), never turned into a
			// 0.7 partition.
			c = dialRaw(t, b.HostPort())
			if _, err := c.c.Write(protocol.ProduceRequest{Topic: "two", Partition: 0, Messages: set}.AppendTo(nil)); err != nil {
				t.Fatal(err)
			}
			if code, _ := c.fetch("two", 0, 0); code != protocol.ErrNotLeaderForPartition {
				t.Errorf("after a 0.7 PRODUCE, FETCH from broker %d: error %d, want %d", b.ID, code, protocol.ErrNotLeaderForPartition)
			}
		}
		if got := rc.leo(leader, "two"); got != leo[1] {
			t.Errorf("the leader's log end moved from %d to %d", leo[1], got)
		}
		rc.waitFor("the follower at the leader's end", func() bool { return rc.leo(follower, "two") == leo[1] })
		if _, ok := stranger.Logs().Get("two", 0); ok || stranger.Replication().Partition("two", 0) != nil {
			t.Errorf("broker 0, no replica of two, now has a partition two-0")
		}
	})

	t.Run("leader and ISR from a deposed controller", func(t *testing.T) {
		epoch, _, err := replication.ReadControllerEpoch(rc.zk)
		if err != nil || epoch < 1 {
			t.Fatalf("controller epoch %d, %v", epoch, err)
		}
		s := rc.state("two", 0)
		brokers := rc.brokerAddrs()
		// A deposed controller (an older epoch) tells the follower to lead.
		coup := protocol.PartitionState{Topic: "two", Partition: 0, Leader: 2, LeaderEpoch: s.LeaderEpoch + 1,
			Version: s.ZKVersion + 1, ISR: []int32{2}, Replicas: []int32{1, 2}}
		fc := dialRaw(t, follower.HostPort())
		code, payload, err := fc.call(protocol.LeaderAndISRRequest{ControllerID: 0, ControllerEpoch: epoch - 1,
			Brokers: brokers, Partitions: []protocol.PartitionState{coup}})
		if err != nil || code != protocol.ErrStaleControllerEpoch {
			t.Errorf("LEADER_AND_ISR with controller epoch %d (current %d): code %d, %v; want %d (stale controller epoch)",
				epoch-1, epoch, code, err, protocol.ErrStaleControllerEpoch)
		}
		if parts, _ := protocol.DecodePartitionErrors(payload); len(parts) != 0 {
			t.Errorf("a refused request answered partitions: %+v", parts)
		}
		// The current controller's epoch with an older leader epoch (the topic's first is 0) is refused for
		// that partition.
		old := coup
		old.LeaderEpoch = s.LeaderEpoch - 1
		code, payload, err = fc.call(protocol.LeaderAndISRRequest{ControllerID: 0, ControllerEpoch: epoch,
			Brokers: brokers, Partitions: []protocol.PartitionState{old}})
		parts, derr := protocol.DecodePartitionErrors(payload)
		if err != nil || code != protocol.ErrNone || derr != nil || len(parts) != 1 || parts[0].Error != protocol.ErrStaleLeaderEpoch {
			t.Errorf("LEADER_AND_ISR with leader epoch %d (current %d): code %d, parts %+v, %v %v; want %d for the partition",
				old.LeaderEpoch, s.LeaderEpoch, code, parts, err, derr, protocol.ErrStaleLeaderEpoch)
		}
		if follower.Replication().Partition("two", 0).IsLeader() || !leader.Replication().Partition("two", 0).IsLeader() {
			t.Fatalf("a stale LEADER_AND_ISR moved the leadership")
		}
		// Replication goes on as before: a committed produce through the real leader.
		if res := cl.produce("two", 0, protocol.AcksAll, 5*time.Second, "after the coup"); res.Error != protocol.ErrNone {
			t.Fatalf("acks=-1 produce after the stale requests: %v", res.Error)
		}
		acked = append(acked, "after the coup")
		if got := rc.state("two", 0); got.Leader != 1 || got.LeaderEpoch != s.LeaderEpoch {
			t.Errorf("state node after the stale requests: %+v, was %+v", got, s)
		}
	})

	t.Run("create with too high a replication factor", func(t *testing.T) {
		live := []int32{0, 1, 2}
		if _, err := replication.Assign(live, 2, 4, -1, -1); !errors.Is(err, replication.ErrBadAssignment) {
			t.Errorf("Assign of 4 replicas over 3 brokers: %v, want ErrBadAssignment", err)
		}
		for _, a := range []replication.Assignment{{{0, 1, 2, 3}}, {{0, 1}, {2, 7}}} { // a dead broker; an unknown one in partition 1
			err := replication.CreateTopic(rc.zk, "toomany", a)
			if !errors.Is(err, replication.ErrBadAssignment) || !strings.Contains(err.Error(), "not alive") {
				t.Errorf("CreateTopic(%v): %v, want ErrBadAssignment naming the broker that is not alive", a, err)
			}
		}
		if ok, err := rc.zk.Exists(zk.BrokerTopicPath("toomany")); ok || err != nil {
			t.Errorf("a refused creation left %s behind (%v)", zk.BrokerTopicPath("toomany"), err)
		}
	})

	t.Run("hostile topic names", func(t *testing.T) {
		hostile := []string{"", ".", "..", "../../etc", "two/partitions/0/state", "a/b", "x\x00y", "sp ace",
			strings.Repeat("x", topic.MaxLength+1), "/", "two-0/../../x"}
		for _, name := range hostile {
			if err := replication.CreateTopic(rc.zk, name, replication.Assignment{{1, 2}}); !errors.Is(err, topic.ErrInvalid) {
				t.Errorf("CreateTopic(%q): %v, want topic.ErrInvalid", name, err)
			}
		}
		cs := map[int]*rawClient{}
		for _, b := range rc.brokers {
			cs[b.ID] = dialRaw(t, b.HostPort())
		}
		for _, name := range hostile {
			for _, b := range rc.brokers {
				c := cs[b.ID]
				if res := c.produce(name, 0, 1, time.Second, "hostile"); res.Error == protocol.ErrNone {
					t.Errorf("acks=1 produce to %q on broker %d was accepted at %d", name, b.ID, res.Offset)
				}
				if parts := rc.replicaFetch(c, 2, name, 0, 0); len(parts) != 1 || parts[0].err == protocol.ErrNone {
					t.Errorf("REPLICA_FETCH of %q from broker %d: %+v, want an error", name, b.ID, parts)
				}
				code, payload, err := c.call(protocol.EpochEndOffsetRequest{ReplicaID: 2,
					Partitions: []protocol.EpochQuery{{Topic: name, Partition: 0, Epoch: 0}}})
				ends, derr := protocol.DecodeEpochEndResponse(payload)
				if err != nil || code != protocol.ErrNone || derr != nil || len(ends) != 1 || ends[0].Error == protocol.ErrNone {
					t.Errorf("EPOCH_END_OFFSET of %q from broker %d: code %d, %+v, %v %v; want an error for the partition", name, b.ID, code, ends, err, derr)
				}
				// The current controller's epoch, naming this broker as leader: a hostile name must not become a
				// directory, whoever sends it.
				epoch, _, _ := replication.ReadControllerEpoch(rc.zk)
				code, payload, err = c.call(protocol.LeaderAndISRRequest{ControllerID: 0, ControllerEpoch: epoch, Brokers: rc.brokerAddrs(),
					Partitions: []protocol.PartitionState{{Topic: name, Partition: 0, Leader: int32(b.ID), ISR: []int32{int32(b.ID)}, Replicas: []int32{int32(b.ID)}}}})
				parts, derr := protocol.DecodePartitionErrors(payload)
				if err != nil || code != protocol.ErrNone || derr != nil || len(parts) != 1 || parts[0].Error == protocol.ErrNone {
					t.Errorf("LEADER_AND_ISR for %q to broker %d: code %d, %+v, %v %v; want an error for the partition", name, b.ID, code, parts, err, derr)
				}
			}
		}
		// METADATA with hostile names among good ones answers each: the good one in full.
		names := append(slices.Clone(hostile[:4]), "two")
		code, payload, err := cs[0].call(protocol.MetadataRequest{Topics: names})
		m, derr := protocol.DecodeMetadataResponse(payload)
		if err != nil || code != protocol.ErrNone || derr != nil || len(m.Topics) != len(names) {
			t.Fatalf("METADATA of %q: code %d, %+v, %v %v", names, code, m, err, derr)
		}
		for _, tm := range m.Topics {
			switch {
			case tm.Topic == "two" && (tm.Error != protocol.ErrNone || len(tm.Partitions) != 1 || tm.Partitions[0].Leader != 1):
				t.Errorf("METADATA of two beside hostile names: %+v", tm)
			case tm.Topic != "two" && tm.Error != protocol.ErrUnknownTopicOrPartition:
				t.Errorf("METADATA of %q: error %d, want %d", tm.Topic, tm.Error, protocol.ErrUnknownTopicOrPartition)
			}
		}
		if after := logDirs(t, rc.brokers); !maps.EqualFunc(after, dirsBefore, slices.Equal[[]string]) {
			t.Errorf("log directories changed: %v, were %v", after, dirsBefore)
		}
	})

	// Nothing acknowledged was lost: the leader serves every acknowledged message, in order.
	rc.waitFor("the high watermark at the log end", func() bool {
		p := leader.Replication().Partition("two", 0)
		return p.HighWatermark() == p.Log().LogEndOffset()
	})
	leader.Flush("two", 0)
	code, set := cl.fetch("two", 0, 0)
	if got := payloads(set); code != protocol.ErrNone || !slices.Equal(got, acked) {
		t.Errorf("read back after the bad input: error %d, %q; want %q", code, got, acked)
	}
}

// replicaFetchPart is one part of a REPLICA_FETCH answer.
type replicaFetchPart struct {
	err    protocol.ErrorCode
	hw     int64
	setLen int
}

// replicaFetch sends one REPLICA_FETCH for topic-p at offset as broker id, with no wait.
func (rc *replCluster) replicaFetch(c *rawClient, id int32, topicName string, p int32, offset int64) []replicaFetchPart {
	rc.t.Helper()
	code, payload, err := c.call(protocol.ReplicaFetchRequest{ReplicaID: id, MaxWaitMs: 0, MinBytes: 1,
		Fetches: []protocol.FetchRequest{{Topic: topicName, Partition: p, Offset: offset, MaxSize: 1 << 20}}})
	if err != nil || code != protocol.ErrNone {
		rc.t.Fatalf("REPLICA_FETCH of %q as broker %d: code %d, %v (the connection should stay)", topicName, id, code, err)
	}
	var out []replicaFetchPart
	if err := protocol.DecodeReplicaFetchResponse(payload, &protocol.ReplicaFetchPart{}, func(_ int, part *protocol.ReplicaFetchPart) error {
		out = append(out, replicaFetchPart{err: part.Error, hw: part.HighWatermark, setLen: len(part.Set)})
		return nil
	}); err != nil {
		rc.t.Fatalf("REPLICA_FETCH answer: %v", err)
	}
	return out
}

// leo is broker b's log end offset of topic-0.
func (rc *replCluster) leo(b *brokertest.Broker, topicName string) int64 {
	rc.t.Helper()
	p := b.Replication().Partition(topicName, 0)
	if p == nil {
		rc.t.Fatalf("broker %d has no replica of %s-0", b.ID, topicName)
	}
	return p.Log().LogEndOffset()
}

// brokerAddrs lists the cluster's brokers as LEADER_AND_ISR names them.
func (rc *replCluster) brokerAddrs() []protocol.BrokerAddr {
	var out []protocol.BrokerAddr
	for _, b := range rc.brokers {
		host, port, _ := net.SplitHostPort(b.HostPort())
		n, _ := strconv.Atoi(port)
		out = append(out, protocol.BrokerAddr{ID: int32(b.ID), Host: host, Port: int32(n)})
	}
	return out
}

// logDirs lists each broker's log.dir entries.
func logDirs(t *testing.T, bs brokertest.Cluster) map[int][]string {
	t.Helper()
	out := map[int][]string{}
	for _, b := range bs {
		ents, err := os.ReadDir(b.Dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			if e.IsDir() {
				out[b.ID] = append(out[b.ID], e.Name())
			}
		}
	}
	return out
}

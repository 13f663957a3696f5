package kafka_test

// Replication's claims (docs/PROTOCOL.md §10, the package doc of kafka/replication), one sentence each, in
// the manner of paper_claims_test.go. They run brokers in process against a real ZooKeeper.

import (
	"bytes"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
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

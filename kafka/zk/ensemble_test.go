package zk_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// TestIntegration_Ensemble registers a broker through a three-server ensemble, stops two members (losing the
// quorum), restarts one, and checks that the registration is there again once a quorum serves (kept by the same
// session, or re-created after an expiry), then that the last member rejoins with it.
func TestIntegration_Ensemble(t *testing.T) {
	connects, stop, start := zktest.StartEnsemble(t)
	all := strings.Join(connects, ",")
	r, err := zk.NewBrokerRegistry(all, 1, "h", 9092, 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.RegisterTopic("t", 3); err != nil {
		t.Fatal(err)
	}
	session := r.Client().SessionID()
	// Watch from a client pinned to member 2 (index 2), which stays up.
	other, err := zk.Connect(connects[2], 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	stop(0)
	stop(1) // two of three down: no quorum, nobody can serve
	start(1)
	zktest.WaitServing(t, connects[1], time.Minute)
	zktest.WaitServing(t, connects[2], time.Minute)
	eventually(t, "the broker node to be readable with a quorum of 2", func() bool {
		data, err := other.Get(zk.BrokerTopicBrokerPath("t", 1))
		return err == nil && string(data) == "3"
	})
	if ok, err := other.Exists(zk.BrokerIDPath(1)); err != nil || !ok {
		t.Fatalf("broker node after losing a member: %v %v", ok, err)
	}
	if r.Client().SessionID() != session {
		t.Logf("the broker's session changed (expired during the quorum loss) and was re-registered")
	}
	start(0)
	zktest.WaitServing(t, connects[0], time.Minute)
	c0, err := zk.Connect(connects[0], 6*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	eventually(t, "the rejoined member to have the registry", func() bool {
		ok, err := c0.Exists(zk.BrokerIDPath(1))
		return err == nil && ok
	})
}

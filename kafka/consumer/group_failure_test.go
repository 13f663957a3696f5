package consumer

import (
	"errors"
	"testing"
	"time"

	gozk "github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// TestIntegration_RebalanceFailureIsClear: a partition held by a foreign owner node that never goes away makes
// every attempt conflict; after rebalance.retries.max attempts the consumer says so (docs/PROTOCOL.md §6) — at start as
// CreateMessageStreams' error, later as the error every stream ends with — and leaves the group.
func TestIntegration_RebalanceFailureIsClear(t *testing.T) {
	zkc := zktest.Start(t)
	b0 := startBroker(t, zkc, 0)
	produceAll(t, newProducer(t, b0), "t", "m", 8, b0)
	c := rawZK(t, zkc)
	waitFor(t, 10*time.Second, "topic registered", func() bool {
		ok, _, _ := c.Exists(zk.BrokerTopicBrokerPath("t", 0))
		return ok
	})
	acl := gozk.WorldACL(gozk.PermAll)

	cfg := fastConfig(zkc, "g")
	cfg.ConsumerID, cfg.RebalanceRetriesMax, cfg.RebalanceBackoff = "zzz", 3, 50*time.Millisecond
	g, err := NewGroupConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ss, err := g.CreateMessageStreams(map[string]int{"t": 1})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	// A second member "g_aaa" with three streams sorts first and gets 0-0..0-2; ours keeps 0-3.
	if _, err := c.Create(zk.ConsumerIDPath("g", "g_aaa"), []byte(`{"t":3}`), gozk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "our member to keep only 0-3", func() bool {
		o := g.Owned()["t"]
		return len(o) == 1 && o[0] == "0-3"
	})
	// The fake member takes 0-0 and then leaves: ours now wants 0-0, which stays owned by a stream that is gone.
	if _, err := c.Create(zk.OwnerPath("g", "t", "0-0"), []byte("g_aaa-0"), gozk.FlagEphemeral, acl); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(zk.ConsumerIDPath("g", "g_aaa"), -1); err != nil {
		t.Fatal(err)
	}
	s := ss["t"][0]
	done := make(chan error, 1)
	go func() {
		for s.Next() {
		}
		done <- s.Err()
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrRebalanceFailed) {
			t.Fatalf("stream ended with %v, want ErrRebalanceFailed", err)
		}
		t.Logf("stream ended with: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("the stream did not end after the rebalance ran out of retries")
	}
	waitFor(t, 5*time.Second, "the consumer that gave up to leave the registry", func() bool {
		ok, _, _ := c.Exists(zk.ConsumerIDPath("g", "g_zzz"))
		return !ok
	})

	// At start the same conflict is CreateMessageStreams' error.
	g2, err := NewGroupConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if _, err := g2.CreateMessageStreams(map[string]int{"t": 1}); !errors.Is(err, ErrRebalanceFailed) {
		t.Fatalf("CreateMessageStreams: %v, want ErrRebalanceFailed", err)
	}
}

// TestIntegration_ConsumerTimeout: with consumer.timeout.ms ≥ 0 an idle stream ends its wait with
// ErrConsumerTimeout and can be used again.
func TestIntegration_ConsumerTimeout(t *testing.T) {
	zkc := zktest.Start(t)
	b0 := startBroker(t, zkc, 0)
	p := newProducer(t, b0)
	produceAll(t, p, "t", "m", 4, b0)
	cfg := fastConfig(zkc, "g")
	cfg.ConsumerTimeoutMs = 300
	g, err := NewGroupConsumer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ss, err := g.CreateMessageStreams(map[string]int{"t": 1})
	if err != nil {
		t.Fatal(err)
	}
	s := ss["t"][0]
	n := 0
	for s.Next() {
		n++
	}
	if n != 4 || !errors.Is(s.Err(), ErrConsumerTimeout) {
		t.Fatalf("%d messages then %v, want 4 then ErrConsumerTimeout", n, s.Err())
	}
	produceAll(t, p, "t", "later", 1, b0)
	if !s.Next() || string(s.Message().Payload) != "later-0" {
		t.Fatalf("after a timeout: %v", s.Err())
	}
}

// TestIntegration_SessionExpiry: a member cut off from ZooKeeper longer than its session timeout loses its
// registration and ownership; the rest of the group takes its partitions; when it reconnects it gets a new
// session, registers again and the group rebalances back to both, with every message delivered.
func TestIntegration_SessionExpiry(t *testing.T) {
	zkc := zktest.Start(t)
	proxy := zktest.NewProxy(t, zkc)
	b0 := startBroker(t, zkc, 0)
	p := newProducer(t, b0)
	first := produceAll(t, p, "t", "a", 100, b0)
	c := rawZK(t, zkc)

	cut := startMember(t, fastConfig(proxy.Addr(), "g"), "t", 1)
	other := startMember(t, fastConfig(zkc, "g"), "t", 1)
	waitFor(t, 15*time.Second, "two members balanced", func() bool {
		return balanced(c, "g", "t", 4) && len(cut.g.Owned()["t"]) == 2
	})
	drain(t, 15*time.Second, first, cut, other)

	proxy.Cut()
	waitFor(t, 15*time.Second, "the cut member's session to expire and the other to own everything", func() bool {
		ok, _, _ := c.Exists(zk.ConsumerIDPath("g", cut.g.ID()))
		return !ok && balanced(c, "g", "t", 4) && !anyOwnedBy(c, "g", "t", cut.g.ID())
	})
	during := produceAll(t, p, "t", "b", 100, b0)
	drain(t, 15*time.Second, during, cut, other)

	proxy.Restore()
	waitFor(t, 20*time.Second, "the member to come back with a new session and take its share", func() bool {
		return balanced(c, "g", "t", 4) && anyOwnedBy(c, "g", "t", cut.g.ID())
	})
	after := produceAll(t, p, "t", "c", 100, b0)
	drain(t, 15*time.Second, after, cut, other)
}

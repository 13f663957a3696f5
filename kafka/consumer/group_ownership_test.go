package consumer

import (
	"fmt"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// OwnershipOnly: a member takes its share of the partitions by Algorithm 1 (§3.2) and claims them, but starts
// no fetcher (its streams stay empty: the caller reads its partitions itself); OwnershipChanges tells it when
// its share changes, as members join and leave.
func TestIntegration_OwnershipOnly(t *testing.T) {
	zkc := zktest.Start(t)
	b := startBroker(t, zkc, 0)
	produceAll(t, newProducer(t, b), "t", "m", 40, b)

	join := func() *GroupConsumer {
		cfg := fastConfig(zkc, "own")
		cfg.OwnershipOnly = true
		g, err := NewGroupConsumer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { g.Close() })
		ss, err := g.CreateMessageStreams(map[string]int{"t": 1})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			for ss["t"][0].Next() {
				t.Errorf("a stream of an ownership-only member handed out %q", ss["t"][0].Message().Payload)
			}
		}()
		return g
	}
	notified := func(g *GroupConsumer, what string) {
		t.Helper()
		select {
		case <-g.OwnershipChanges():
		case <-time.After(10 * time.Second):
			t.Fatalf("no ownership change notified after %s", what)
		}
	}
	fetchers := func(g *GroupConsumer) int {
		g.mu.Lock()
		defer g.mu.Unlock()
		return len(g.fetchers)
	}

	a := join()
	notified(a, "the first rebalance")
	if got := fmt.Sprint(a.Owned()); got != "map[t:[0-0 0-1 0-2 0-3]]" {
		t.Fatalf("the only member owns %s, want every partition", got)
	}
	if n := fetchers(a); n != 0 {
		t.Errorf("an ownership-only member runs %d fetchers", n)
	}

	c := join()
	notified(a, "a second member joined")
	waitFor(t, 10*time.Second, "the partitions split two and two", func() bool {
		return len(a.Owned()["t"]) == 2 && len(c.Owned()["t"]) == 2
	})
	if fmt.Sprint(a.Owned()["t"], c.Owned()["t"]) != "[0-0 0-1] [0-2 0-3]" && fmt.Sprint(c.Owned()["t"], a.Owned()["t"]) != "[0-0 0-1] [0-2 0-3]" {
		t.Errorf("members own %v and %v, want the ranges of Algorithm 1", a.Owned(), c.Owned())
	}
	for len(a.OwnershipChanges()) > 0 {
		<-a.OwnershipChanges()
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	notified(a, "the second member left")
	waitFor(t, 10*time.Second, "the remaining member owning every partition again", func() bool {
		return len(a.Owned()["t"]) == 4
	})
	if n := fetchers(a) + fetchers(c); n != 0 {
		t.Errorf("ownership-only members run %d fetchers", n)
	}
	time.Sleep(200 * time.Millisecond) // what a fetcher would have handed out by now, the streams would have
}

package consumer

import (
	"reflect"
	"testing"
)

// What a consumer decides in a rebalance (planRebalance), without ZooKeeper: every member computes the same
// range assignment from the same registry view and takes the partitions of its own streams, each with the
// broker and partition its name stands for.
func TestPlanRebalance(t *testing.T) {
	view := &registryView{
		partitions: map[string][]string{
			"clicks": {"0-0", "0-1", "1-0", "1-1", "1-2"},
			"orders": {"0", "1", "2"}, // replicated: named by number
		},
		streams: map[string][]string{
			"clicks": {"a-0", "b-0"},
			"orders": {"a-0", "a-1", "b-0"},
		},
		replicated: map[string]bool{"orders": true},
	}
	topics := map[string]int{"clicks": 1, "orders": 2}
	mineOf := func(consumer string) func(topic, stream string) bool {
		return func(_, stream string) bool { return stream[:1] == consumer }
	}
	a, err := planRebalance(view, topics, mineOf("a"))
	if err != nil {
		t.Fatal(err)
	}
	want := []plannedClaim{
		// clicks: 5 partitions over 2 streams: the first gets 3 (the remainder goes to the first ones, as 0.7).
		{topic: "clicks", part: "0-0", stream: "a-0", brokerID: 0, partition: 0},
		{topic: "clicks", part: "0-1", stream: "a-0", brokerID: 0, partition: 1},
		{topic: "clicks", part: "1-0", stream: "a-0", brokerID: 1, partition: 0},
		// orders: 3 partitions over 3 streams, one each; -1: the leader is looked up by the fetchers.
		{topic: "orders", part: "0", stream: "a-0", brokerID: -1, partition: 0, replicated: true},
		{topic: "orders", part: "1", stream: "a-1", brokerID: -1, partition: 1, replicated: true},
	}
	if !reflect.DeepEqual(a, want) {
		t.Errorf("consumer a:\n got  %+v\n want %+v", a, want)
	}
	b, _ := planRebalance(view, topics, mineOf("b"))
	if len(a)+len(b) != 8 {
		t.Errorf("a takes %d and b %d partitions of 8: the members' plans must cover every partition once", len(a), len(b))
	}
	for _, pa := range a {
		for _, pb := range b {
			if pa.topic == pb.topic && pa.part == pb.part {
				t.Errorf("%s/%s planned for both a and b", pa.topic, pa.part)
			}
		}
	}
	// This consumer's registration is missing from C_T (a new session before it registered again): nothing.
	gone := &registryView{partitions: view.partitions, streams: map[string][]string{"clicks": {"b-0"}}, replicated: view.replicated}
	if c, err := planRebalance(gone, topics, mineOf("a")); err != nil || len(c) != 0 {
		t.Errorf("without its own registration: %+v, %v; want nothing", c, err)
	}
	// A partition name that does not parse is an error, not a guess.
	bad := &registryView{partitions: map[string][]string{"clicks": {"x-0"}}, streams: map[string][]string{"clicks": {"a-0"}}}
	if _, err := planRebalance(bad, map[string]int{"clicks": 1}, mineOf("a")); err == nil {
		t.Error("a partition named x-0 was planned")
	}
}

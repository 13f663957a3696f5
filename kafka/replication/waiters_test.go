package replication

import (
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// "A REPLICA_FETCH held for replica.fetch.min.bytes is woken once the leader has that many bytes beyond
// the follower's offset, not at every append before" (docs/PROTOCOL.md §10: fewer, larger follower fetches
// cost the leader fewer wake-ups), and at once when this broker stops leading.
func TestReplicaFetchWaiterWokenAtMinBytesOnly(t *testing.T) {
	p := replica(t, 0, 1)
	if err := p.becomeLeader(state(0, 0, 0, 1, 2), 1); err != nil {
		t.Fatal(err)
	}
	one := set("0123456789")
	ch := make(chan struct{}, 1)
	woken := func() bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	off := p.log.LogEndOffset()
	p.AddWaiter(ch, off+3*int64(len(one))) // waits for three messages' bytes
	for i := 1; i <= 3; i++ {
		if _, _, code, err := p.Append(one, protocol.AcksAll); err != nil || code != protocol.ErrNone {
			t.Fatal(code, err)
		}
		if got, want := woken(), i == 3; got != want {
			t.Fatalf("after %d of 3 messages (%d of %d bytes): woken %v, want %v", i, p.Available(off), 3*len(one), got, want)
		}
	}
	p.becomeFollower(state(1, 1, 1, 2), 2)
	if !woken() {
		t.Fatal("a held replica fetch was not woken when this broker stopped leading")
	}
	p.RemoveWaiter(ch)
	if len(p.waiters) != 0 {
		t.Fatalf("%d waiters left after RemoveWaiter", len(p.waiters))
	}
}

// "A leader's connection answers its acks=-1 produces from the goroutine whose change settles them"
// (Partition.Watch, kafka/broker/ackedanswers.go): a watcher runs when a follower's fetch moves the HW
// past a set, on that fetch's goroutine and with the partition's lock released (so Committed answers), not
// at a fetch that moves nothing, and when this broker stops leading; after unwatch it runs no more.
func TestWatchRunsWhenTheHWMovesAndLeadershipEnds(t *testing.T) {
	p := replica(t, 0, 1)
	if err := p.becomeLeader(state(0, 0, 0, 1), 1); err != nil {
		t.Fatal(err)
	}
	var end int64
	runs, codes := 0, []protocol.ErrorCode{}
	unwatch := p.Watch(func() {
		runs++
		if code, done := p.Committed(end); done { // takes p.mu: would deadlock under the lock
			codes = append(codes, code)
		}
	})
	_, end, code, err := p.Append(set("watched"), protocol.AcksAll)
	if err != nil || code != protocol.ErrNone {
		t.Fatal(code, err)
	}
	if runs != 0 {
		t.Fatalf("watcher ran %d times at an append that commits nothing (ISR 0,1)", runs)
	}
	if _, _, _, code, err := p.FollowerFetch(1, 0, 1<<20, nil); err != nil || code != protocol.ErrNone {
		t.Fatal(code, err)
	}
	if runs != 0 {
		t.Fatalf("watcher ran %d times at a follower fetch from offset 0, which moves no HW", runs)
	}
	if _, _, _, code, err := p.FollowerFetch(1, end, 1<<20, nil); err != nil || code != protocol.ErrNone {
		t.Fatal(code, err)
	}
	if runs != 1 || len(codes) != 1 || codes[0] != protocol.ErrNone {
		t.Fatalf("after the follower fetched past the set: watcher ran %d times, settled %v; want once, [ErrNone]", runs, codes)
	}
	if p.HighWatermark() != end {
		t.Fatalf("HW %d, want %d", p.HighWatermark(), end)
	}
	_, end, _, _ = p.Append(set("next"), protocol.AcksAll)
	p.becomeFollower(state(1, 1, 1), 2)
	if runs != 2 || len(codes) != 2 || codes[1] != protocol.ErrNotLeaderForPartition {
		t.Fatalf("after leadership ended: watcher ran %d times, settled %v; want twice, the second NotLeaderForPartition", runs, codes)
	}
	unwatch()
	if err := p.becomeLeader(state(0, 2, 0, 1), 3); err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("watcher ran after unwatch (%d runs)", runs)
	}
}

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

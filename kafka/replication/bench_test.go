package replication

import (
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// followerPath is a follower's fetcher with one partition and a REPLICA_FETCH answer of n 200-byte
// messages, ready to be applied again and again (the network left out: the leader's side is sendfile).
func followerPath(tb testing.TB, n int) (*fetcher, []byte, int) {
	tb.Helper()
	p := replica(tb, 1, 1)
	f := &fetcher{m: p.m, parts: map[TopicPartition]*fetchPart{}}
	f.apply = f.applyPart
	fp := &fetchPart{p: p}
	f.parts[p.tp] = fp
	f.active = []*fetchPart{fp}
	var msgs []byte
	payload := make([]byte, 200)
	for range n {
		msgs = message.AppendV0(msgs, payload)
	}
	resp := []byte{0, 1}
	resp = protocol.AppendReplicaFetchPart(resp, "t", 0, protocol.ErrNone, 0, []protocol.EpochEntry{{Epoch: 0, Start: 0}}, len(msgs))
	resp = append(resp, msgs...)
	return f, resp, len(msgs)
}

func applyOnce(tb testing.TB, f *fetcher, resp []byte) {
	fp := f.active[0]
	fp.expected = fp.p.log.LogEndOffset()
	if err := f.applyResponse(resp); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkFollowerAppend is the follower's fetch-and-append path per answer of 1000 messages: decode the
// answer, validate every CRC, append the bytes verbatim, record the epochs, write them out to the file.
func BenchmarkFollowerAppend(b *testing.B) {
	f, resp, size := followerPath(b, 1000)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		applyOnce(b, f, resp)
	}
}

// "Zero allocations per message on the follower's fetch-and-append path."
func TestFollowerAppendAllocatesNothing(t *testing.T) {
	f, resp, _ := followerPath(t, 1000)
	applyOnce(t, f, resp) // the first answer records the epoch and grows the buffers
	if n := testing.AllocsPerRun(50, func() { applyOnce(t, f, resp) }); n != 0 {
		t.Fatalf("%.1f allocations per answer of 1000 messages, want 0", n)
	}
	if got, want := f.active[0].p.log.LogEndOffset(), int64(52*1000*(200+9)); got != want {
		t.Fatalf("log end %d after 52 answers, want %d", got, want)
	}
}

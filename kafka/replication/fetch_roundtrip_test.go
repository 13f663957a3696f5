package replication

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// The whole of a follower's fetch, the network included (bench_test.go leaves it out): the fetcher's
// REPLICA_FETCH written to a leader over loopback, the answer read into the fetcher's buffer, then
// applied (decoded, every CRC checked, appended verbatim, written out). The leader is a stand-in that
// answers every fetch with the same 50 messages of 200 bytes, a producer's batch. And the leader's side of
// a follower's fetch: its progress recorded as the request arrives and as it is answered, the chunk of log
// to send. Neither allocates in the steady state, per message or per fetch (kafka/internal/hotpath's rule).

// fakeLeader answers each request on its connections with resp.
func fakeLeader(tb testing.TB, resp []byte) protocol.BrokerAddr {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				body := make([]byte, 64<<10)
				for {
					if _, err := io.ReadFull(r, body[:4]); err != nil {
						return
					}
					n := int(binary.BigEndian.Uint32(body[:4]))
					if n > len(body) {
						return
					}
					if _, err := io.ReadFull(r, body[:n]); err != nil {
						return
					}
					if _, err := c.Write(resp); err != nil {
						return
					}
				}
			}()
		}
	}()
	return protocol.BrokerAddr{ID: 0, Host: "127.0.0.1", Port: int32(l.Addr().(*net.TCPAddr).Port)}
}

// fetchRoundTrip is followerPath's fetcher pointed at a fake leader that answers 50 messages.
func fetchRoundTrip(tb testing.TB) (*fetcher, int) {
	tb.Helper()
	f, part, size := followerPath(tb, 50)
	f.leader = fakeLeader(tb, append(protocol.AppendResponseHeader(nil, len(part), protocol.ErrNone), part...))
	tb.Cleanup(f.disconnect)
	return f, size
}

func fetchOnce(tb testing.TB, f *fetcher, size int) {
	l := f.active[0].p.log
	before := l.LogEndOffset()
	if err := f.fetch(); err != nil {
		tb.Fatal(err)
	}
	if got := l.LogEndOffset() - before; got != int64(size) {
		tb.Fatalf("one fetch appended %d bytes, want %d", got, size)
	}
}

func BenchmarkFollowerFetchRoundTrip(b *testing.B) {
	f, size := fetchRoundTrip(b)
	fetchOnce(b, f, size)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		fetchOnce(b, f, size)
	}
}

func TestFollowerFetchRoundTripAllocatesNothing(t *testing.T) {
	f, size := fetchRoundTrip(t)
	for range 3 { // the connection, the buffers' growth, the epoch
		fetchOnce(t, f, size)
	}
	if n := testing.AllocsPerRun(100, func() { fetchOnce(t, f, size) }); n != 0 {
		t.Fatalf("%.1f allocations per fetch of 50 messages, want 0", n)
	}
}

func TestLeaderSideOfAFollowerFetchAllocatesNothing(t *testing.T) {
	p := replica(t, 1, 1)
	if err := p.becomeLeader(state(1, 0, 0, 1, 2), 1); err != nil {
		t.Fatal(err)
	}
	_, part, _ := followerPath(t, 50)
	msgs := part[len(part)-50*(200+9):]
	var epochs []protocol.EpochEntry
	round := func() {
		off := p.log.LogEndOffset()
		if _, _, code, err := p.Append(msgs, 1); err != nil || code != protocol.ErrNone {
			t.Fatal(code, err)
		}
		p.FollowerArrived(2, off)
		c, hw, e, code, err := p.FollowerFetch(2, off, 1<<20, epochs[:0])
		if err != nil || code != protocol.ErrNone || int(c.Len) != len(msgs) || hw < 0 {
			t.Fatalf("FollowerFetch at %d: %d bytes, hw %d, code %d, %v", off, c.Len, hw, code, err)
		}
		c.Release()
		epochs = e
	}
	for range 3 {
		round()
	}
	if n := testing.AllocsPerRun(100, round); n != 0 {
		t.Fatalf("%.1f allocations per append and follower fetch of 50 messages, want 0", n)
	}
}

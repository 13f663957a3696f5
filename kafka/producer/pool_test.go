package producer

import (
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// A send that found its connection just before Close (two goroutines, one
// sending, one closing) must not dial the broker again afterwards: the pool
// marks every connection closed, and its write then fails with ErrClosed.
func TestSendAfterCloseDoesNotRedial(t *testing.T) {
	var accepted atomic.Int64
	addr := listen(t, "127.0.0.1:0", func(c net.Conn) {
		accepted.Add(1)
		buf := make([]byte, 4096)
		for {
			if _, err := c.Read(buf); err != nil {
				return
			}
		}
	})
	p := newTestProducer(t, brokerList(0, addr))
	if err := p.Send("clicks", -1, []byte("a")); err != nil {
		t.Fatal(err)
	}
	c, err := p.pool.get(0, p.disc) // what a racing Send holds
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.buf = append(c.buf[:0], 0, 0, 0, 0)
	err = c.writeLocked()
	redialed := c.conn != nil
	c.mu.Unlock()
	if !errors.Is(err, ErrClosed) {
		t.Errorf("write on a connection of a closed producer: %v, want ErrClosed", err)
	}
	if redialed {
		t.Error("the closed producer's connection dialed the broker again")
	}
	if err := p.Send("clicks", -1, []byte("b")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v, want ErrClosed", err)
	}
	if n := accepted.Load(); n != 1 {
		t.Errorf("the broker accepted %d connections, want the first one only", n)
	}
}

// The topic cache: a name is validated before it is remembered, a bad one
// never is, a remembered one costs no allocation, and past maxCachedTopics
// names the rest are still checked every time.
func TestTopicCache(t *testing.T) {
	var tc topicCache
	for _, bad := range []string{"", "..", "a/b", "a b"} {
		for range 2 {
			if err := tc.check(bad); !errors.Is(err, topic.ErrInvalid) {
				t.Errorf("check(%q) = %v, want ErrInvalid", bad, err)
			}
		}
	}
	if p := tc.names.Load(); p != nil {
		t.Fatalf("bad names were remembered: %q", *p)
	}
	names := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9"}
	for range 2 {
		for _, n := range names {
			if err := tc.check(n); err != nil {
				t.Fatalf("check(%q): %v", n, err)
			}
		}
	}
	got := *tc.names.Load()
	if len(got) != maxCachedTopics || got[0] != "t0" || got[maxCachedTopics-1] != names[maxCachedTopics-1] {
		t.Errorf("remembered %q, want the first %d names once each", got, maxCachedTopics)
	}
	for _, n := range []string{"t0", "t7", "t9"} {
		if a := testing.AllocsPerRun(100, func() { _ = tc.check(n) }); a != 0 {
			t.Errorf("check(%q) allocates %.0f times, want 0", n, a)
		}
	}
	if err := tc.check("a b"); !errors.Is(err, topic.ErrInvalid) {
		t.Errorf("with the cache full, check(%q) = %v, want ErrInvalid", "a b", err)
	}
}

// The pool's two lookups, the connection added last and the map, must each
// give a send the connection of the broker it names: sends that alternate
// between two brokers reach each broker in their own order.
func TestPoolKeepsEachBrokersConnection(t *testing.T) {
	reqs := []chan protocol.Request{make(chan protocol.Request, 16), make(chan protocol.Request, 16)}
	list := brokerList(0, fakeBroker(t, reqs[0])) + "," + brokerList(1, fakeBroker(t, reqs[1]))
	p := newTestProducer(t, list)
	defer p.Close()
	for i := range 6 {
		if err := p.SendTo(i%2, "clicks", 0, []byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for b, want := range []string{"ace", "bdf"} {
		var got []byte
		for range 3 {
			select {
			case r := <-reqs[b]:
				it := message.NewIterator(r.(protocol.ProduceRequest).Messages, 0)
				for it.Next() {
					got = append(got, it.Message().Payload()...)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("broker %d got %q, then nothing", b, got)
			}
		}
		if string(got) != want {
			t.Errorf("broker %d got %q, want %q", b, got, want)
		}
	}
}

package producer

import (
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// countAccepts listens on loopback, discarding what each connection sends,
// and returns its address and a function that tells how many connections it
// had accepted before that function was called: it dials one more itself
// and waits until the accept loop reaches it, and accepts come in the order
// the connections were made, so every connection made before the call is
// counted, however late the loop got to it.
func countAccepts(t *testing.T) (string, func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	remotes := make(chan string, 16)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			remotes <- c.RemoteAddr().String()
			go func() {
				defer c.Close()
				io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String(), func() int {
		m, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		for n := 0; ; n++ {
			select {
			case r := <-remotes:
				if r == m.LocalAddr().String() {
					return n
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("the marker connection was not accepted after %d others", n)
			}
		}
	}
}

// A send that found its connection just before Close (two goroutines, one
// sending, one closing) must not dial the broker again afterwards: the pool
// marks every connection closed, and its write then fails with ErrClosed.
func TestSendAfterCloseDoesNotRedial(t *testing.T) {
	addr, acceptedBefore := countAccepts(t)
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
	if n := acceptedBefore(); n != 1 {
		t.Errorf("the broker accepted %d connections, want the first one only", n)
	}
}

// The leaders' connections (replicated topics) close for good the same way:
// a write on one found before Close fails with ErrClosed, with no new dial,
// whether it would retry (writeLocked) or not (writeOnceLocked).
func TestLeaderConnAfterCloseDoesNotRedial(t *testing.T) {
	addr, acceptedBefore := countAccepts(t)
	host, port, _ := net.SplitHostPort(addr)
	portN, _ := strconv.Atoi(port)
	cfg := DefaultConfig()
	lc := &leaderConns{cfg: &cfg}
	c, err := lc.get(Broker{ID: 1, Host: host, Port: portN})
	if err != nil {
		t.Fatal(err)
	}
	c.mu.Lock()
	c.buf = append(c.buf[:0], 0, 0, 0, 0)
	if err := c.writeLocked(); err != nil {
		t.Fatal(err)
	}
	c.mu.Unlock()
	lc.close()
	for name, write := range map[string]func() error{"writeLocked": c.writeLocked, "writeOnceLocked": c.writeOnceLocked} {
		c.mu.Lock()
		err := write()
		redialed := c.conn != nil
		c.mu.Unlock()
		if !errors.Is(err, ErrClosed) || redialed {
			t.Errorf("%s after close: %v (a new connection: %v), want ErrClosed and none", name, err, redialed)
		}
	}
	if _, err := lc.get(Broker{ID: 1, Host: host, Port: portN}); !errors.Is(err, ErrClosed) {
		t.Errorf("get after close: %v, want ErrClosed", err)
	}
	if n := acceptedBefore(); n != 1 {
		t.Errorf("the leader accepted %d connections, want the first one only", n)
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

package broker_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// dialFrom connects to addr from the loopback address src (127.0.0.0/8 is
// all loopback on Linux), so one test can be several clients' addresses.
func dialFrom(t *testing.T, src string, addr net.Addr) *client {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr.String())
	if err != nil {
		t.Fatalf("dial %s from %s: %v", addr, src, err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

// served reports whether the broker answers an OFFSETS request on cl (with error 0).
func served(cl *client) bool {
	code, err := ask(cl)
	return err == nil && code == protocol.ErrNone
}

// ask sends an OFFSETS request on cl and returns the answer's error code.
func ask(cl *client) (protocol.ErrorCode, error) {
	cl.out = protocol.OffsetsRequest{Topic: "t", Time: protocol.OffsetsLatest, MaxNumOffsets: 1}.AppendTo(cl.out[:0])
	if _, err := cl.c.Write(cl.out); err != nil {
		return 0, err
	}
	cl.c.SetReadDeadline(time.Now().Add(3 * time.Second))
	code, _, buf, err := protocol.ReadResponse(cl.r, cl.in)
	cl.in = buf
	return code, err
}

// busy starts a request on cl and leaves it unfinished (the header of a 100 KiB PRODUCE, no body): the
// connection is in the middle of a request, not idle, so it cannot be evicted at a limit.
func busy(cl *client) *client {
	hdr := binary.BigEndian.AppendUint32(nil, 100<<10+2)
	cl.write(binary.BigEndian.AppendUint16(hdr, uint16(protocol.RequestProduce)))
	return cl
}

// TestIdleConnectionsAreClosed: with connections.max.idle.ms, a connection
// silent for that long is closed, between requests and in the middle of
// one, while a connection that keeps sending is not.
func TestIdleConnectionsAreClosed(t *testing.T) {
	const idle = 400 * time.Millisecond
	tb := startBroker(t, map[string]string{"connections.max.idle.ms": "400"})
	addr := tb.Addr()

	silent := dial(t, addr)
	stalled := dial(t, addr)
	b := protocol.ProduceRequest{Topic: "stall", Messages: messageSet(0, 1000, 200)}.AppendTo(nil)
	stalled.write(b[:len(b)/3]) // announces 209 KiB, sends a third
	busy := dial(t, addr)
	start := time.Now()
	for time.Since(start) < 3*idle {
		if !served(busy) {
			t.Fatalf("a connection sending a request every %v was closed after %v", idle/4, time.Since(start))
		}
		time.Sleep(idle / 4)
	}
	for name, cl := range map[string]*client{"silent": silent, "stalled mid-request": stalled} {
		if !cl.closedByBroker() {
			t.Fatalf("%s connection still open after %v", name, time.Since(start))
		}
	}
	if tb.Connections() != 1 {
		t.Fatalf("%d connections open, want the busy one", tb.Connections())
	}
}

// TestConnectionLimits: max.connections.per.ip and max.connections refuse
// connections beyond them as they arrive when no connection is idle (each of
// these is in the middle of a request), the listener goes on accepting,
// other addresses still get in, and a freed place is taken again.
func TestConnectionLimits(t *testing.T) {
	tb := startBroker(t, map[string]string{"max.connections.per.ip": "3", "max.connections": "5"})
	addr := tb.Addr()
	var first []*client
	for range 3 {
		cl := dialFrom(t, "127.0.0.1", addr)
		if !served(cl) {
			t.Fatal("one of the first three connections from 127.0.0.1 was not served")
		}
		first = append(first, busy(cl))
	}
	fourth := dialFrom(t, "127.0.0.1", addr)
	if code, err := ask(fourth); err != nil || code != protocol.ErrBrokerNotAvailable || !fourth.closedByBroker() {
		t.Fatalf("a fourth connection from 127.0.0.1 (max.connections.per.ip=3): answer %v, %v; want %v (broker not available) and the connection closed",
			code, err, protocol.ErrBrokerNotAvailable)
	}
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		cl := dialFrom(t, src, addr)
		if !served(cl) {
			t.Fatalf("a connection from %s was not served", src)
		}
		busy(cl)
	}
	if sixth := dialFrom(t, "127.0.0.4", addr); !sixth.closedByBroker() {
		t.Fatal("a sixth connection was not refused (max.connections=5)")
	}
	first[0].c.Close()
	waitUntil(t, func() bool { return tb.Connections() == 4 })
	if !served(dialFrom(t, "127.0.0.4", addr)) {
		t.Fatal("a connection was refused after one closed")
	}
}

// A flood of idle connections from one address cannot keep a new client out: at the connection limit
// (here max.connections=20, standing in for the descriptor limit of a ulimit -n), the connection idle the
// longest (at least a second) is closed to let the new one in. (Without an idle one, the new client is
// refused with an answer it can read: TestConnectionLimits.)
func TestIdleConnectionsGiveWayAtTheLimit(t *testing.T) {
	tb := startBroker(t, map[string]string{"max.connections": "20"})
	addr := tb.Addr()
	var flood []*client
	for range 20 {
		flood = append(flood, dialFrom(t, "127.0.0.1", addr))
	}
	waitUntil(t, func() bool { return tb.Connections() == 20 })
	time.Sleep(1100 * time.Millisecond) // idle for a second: evictable
	start := time.Now()
	for i := range 3 {
		cl := dialFrom(t, "127.0.0.2", addr)
		if !served(cl) {
			t.Fatalf("new client %d not served with 20 idle connections open (%d open)", i, tb.Connections())
		}
	}
	t.Logf("3 new clients served %v after 20 idle connections filled max.connections=20; %d connections open",
		time.Since(start).Round(time.Millisecond), tb.Connections())
	closed := 0
	for _, cl := range flood {
		if cl.closedByBroker() {
			closed++
		}
		if closed == 3 {
			break
		}
	}
	if closed < 3 || tb.Connections() != 20 {
		t.Errorf("%d idle connections closed, %d open; want 3 closed and 20 open", closed, tb.Connections())
	}
}

// TestBadRequestWarningsAreRateLimited: a flood of bad requests costs a
// warning line per interval, not one per request, and the line says how
// many were held back.
func TestBadRequestWarningsAreRateLimited(t *testing.T) {
	var logs brokertest.LogBuffer
	tb := brokertest.Start(t, 0, brokertest.Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	for range 50 {
		cl := dial(t, tb.Addr())
		cl.write(binary.BigEndian.AppendUint32(nil, 0x7fffffff)) // a size past max.socket.request.bytes
		if !cl.closedByBroker() {
			t.Fatal("a request of 2 GiB did not close its connection")
		}
	}
	if n := strings.Count(logs.String(), `msg="closing connection"`); n < 1 || n > 2 {
		t.Fatalf("%d warnings for 50 bad requests in well under two intervals, want 1 or 2:\n%s", n, logs.String())
	}
}

// TestRequestMemoryBudget: ten clients sending a request of nearly the
// budget at once are served one after the other: the broker never holds
// more than queued.max.request.bytes of request bodies, and every set is
// stored.
func TestRequestMemoryBudget(t *testing.T) {
	const budget = 4 << 20
	tb := startBroker(t, map[string]string{"max.socket.request.bytes": "4194304", "queued.max.request.bytes": "4194304"})
	set := messageSet(0, 3000, 1000) // 2.9 MiB
	var wg sync.WaitGroup
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := dial(t, tb.Addr())
			cl.produce("big", 0, set)
			cl.sync()
		}()
	}
	wg.Wait()
	st := tb.MemoryStats()
	if st.Peak > budget || st.Peak < int64(len(set)) || st.InUse != 0 || st.Waiting != 0 {
		t.Fatalf("memory %+v: want a peak of one set (%d) within the budget %d, nothing in use or waiting", st, len(set), budget)
	}
	tb.Flush("big", 0)
	l, _ := tb.Logs().Get("big", 0)
	if want := int64(10 * len(set)); l.FlushedEnd() != want {
		t.Fatalf("stored %d bytes, want %d", l.FlushedEnd(), want)
	}
	got, _ := l.ReadBytes(0, len(set))
	if !bytes.Equal(got, set) {
		t.Fatal("the first stored set differs from the one sent")
	}
}

// TestNoRequestMemoryBudget: queued.max.request.bytes=-1 reads a large
// request as 0.7 did, into a buffer grown as it arrives, and stores it.
func TestNoRequestMemoryBudget(t *testing.T) {
	tb := startBroker(t, map[string]string{"queued.max.request.bytes": "-1"})
	set := messageSet(0, 3000, 1000)
	cl := dial(t, tb.Addr())
	cl.produce("big", 0, set)
	cl.sync()
	tb.Flush("big", 0)
	l, _ := tb.Logs().Get("big", 0)
	if got, _ := l.ReadBytes(0, len(set)); !bytes.Equal(got, set) {
		t.Fatalf("stored %d bytes, want the %d sent", len(got), len(set))
	}
	if st := tb.MemoryStats(); st.Peak != 0 || st.Budget != -1 {
		t.Fatalf("memory %+v without a budget", st)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
	}
}

// Stalled and trickled bodies cannot hold the request budget (docs/ROBUSTNESS.md): three connections announce
// 99 MiB PRODUCEs and send one byte, holding 297 of... 198 of the 256 MiB budget between them (the third
// waits); a fourth large one is closed once it has waited queued.max.request.wait.ms; a 200 KB produce
// meanwhile is served at once (a small request is not queued behind large ones); and the stalled bodies,
// arriving at far under request.min.bytes.per.sec, are cut after the grace, giving their share back.
func TestStalledBodiesCannotHoldTheBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the body grace of 10 s (skipped with -short)")
	}
	tb := startBroker(t, map[string]string{"queued.max.request.wait.ms": "2000"})
	announce := func(cl *client, n int) {
		hdr := binary.BigEndian.AppendUint32(nil, uint32(n+2))
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(protocol.RequestProduce))
		cl.write(append(hdr, 0)) // and one byte of the body
	}
	start := time.Now()
	var stalled []*client
	for range 3 {
		cl := dial(t, tb.Addr())
		announce(cl, 99<<20)
		stalled = append(stalled, cl)
	}
	waitUntil(t, func() bool { st := tb.MemoryStats(); return st.InUse == 2*99<<20 && st.Waiting == 1 })
	fourth := dial(t, tb.Addr())
	announce(fourth, 99<<20)

	cl := dial(t, tb.Addr())
	sent := time.Now()
	cl.produce("small", 0, messageSet(0, 200, 1000)) // 200 KB
	cl.sync()
	served := time.Since(sent)
	if served > 2*time.Second {
		t.Errorf("a 200 KB produce behind stalled 99 MiB bodies took %v", served)
	}
	if !closedWithin(fourth, 5*time.Second) {
		t.Errorf("a 99 MiB body waiting for the budget was not closed after queued.max.request.wait.ms=2000 (%v)", time.Since(start))
	}
	for i, s := range stalled {
		if !closedWithin(s, 15*time.Second) {
			t.Fatalf("stalled body %d still open after %v", i, time.Since(start))
		}
	}
	cut := time.Since(start)
	waitUntil(t, func() bool { st := tb.MemoryStats(); return st.InUse == 0 && st.Waiting == 0 })
	t.Logf("200 KB produce served in %v beside three stalled 99 MiB bodies; the stalled bodies cut %v after they began; budget %+v",
		served.Round(time.Millisecond), cut.Round(time.Millisecond), tb.MemoryStats())
}

// closedWithin reports whether the broker closes cl within d.
func closedWithin(cl *client, d time.Duration) bool {
	cl.c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, cl.r)
	return err == nil || errors.Is(err, net.ErrClosed) || isReset(err)
}

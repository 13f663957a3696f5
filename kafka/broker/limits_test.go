package broker_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
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

// served reports whether the broker answers an OFFSETS request on cl.
func served(cl *client) bool {
	cl.out = protocol.OffsetsRequest{Topic: "t", Time: protocol.OffsetsLatest, MaxNumOffsets: 1}.AppendTo(cl.out[:0])
	if _, err := cl.c.Write(cl.out); err != nil {
		return false
	}
	cl.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _, buf, err := protocol.ReadResponse(cl.r, cl.in)
	cl.in = buf
	return err == nil
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
// connections beyond them as they arrive, the listener goes on accepting,
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
		first = append(first, cl)
	}
	if fourth := dialFrom(t, "127.0.0.1", addr); !fourth.closedByBroker() {
		t.Fatal("a fourth connection from 127.0.0.1 was not refused (max.connections.per.ip=3)")
	}
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		if !served(dialFrom(t, src, addr)) {
			t.Fatalf("a connection from %s was not served", src)
		}
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
	if want := int64(10 * len(set)); l.HighWaterMark() != want {
		t.Fatalf("stored %d bytes, want %d", l.HighWaterMark(), want)
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

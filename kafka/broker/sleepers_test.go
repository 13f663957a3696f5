package broker

import (
	"net"
	"testing"
	"time"
)

// sleeperConn is a conn whose socket's mark can be set: the accepted side
// of a loopback connection.
func sleeperConn(t *testing.T) *conn {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	a, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	cn := &conn{}
	if err := cn.co.sock.init(a.(*net.TCPConn)); err != nil {
		t.Fatal(err)
	}
	return cn
}

// untilIdle waits until the ticker has woken cn and, no one else asleep,
// stopped.
func untilIdle(t *testing.T, s *sleepers, cn *conn) {
	for start := time.Now(); ; time.Sleep(100 * time.Microsecond) {
		s.mu.Lock()
		_, asleep := s.asleep[cn]
		running := s.running
		s.mu.Unlock()
		if !asleep && !running {
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("after 10 s: asleep %v, ticker running %v", asleep, running)
		}
	}
}

// A connection that coalesces in bursts falls asleep again and again after
// the ticker has stopped: each time the same goroutine starts the same
// ticker again, with no allocation.
func TestSleepersStartAgainWithoutAllocating(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	s := newSleepers(2*time.Millisecond, stop)
	cn := sleeperConn(t)
	s.add(cn) // the first sleep starts the goroutine
	untilIdle(t, s, cn)
	if n := testing.AllocsPerRun(20, func() {
		s.add(cn)
		untilIdle(t, s, cn)
	}); n != 0 {
		t.Fatalf("%.1f allocations per sleep after the ticker had stopped, want 0", n)
	}
}

// Once the broker stops, a sleeper is woken at once, also one that falls
// asleep after the stop, whether the ticker's goroutine was idle or gone.
func TestSleepersWakeEveryoneOnStop(t *testing.T) {
	// The goroutine idle when the broker stops.
	stop := make(chan struct{})
	s := newSleepers(2*time.Millisecond, stop)
	a, b := sleeperConn(t), sleeperConn(t)
	s.add(a)
	untilIdle(t, s, a)
	close(stop)
	s.add(b)
	untilIdle(t, s, b)

	// The goroutine ticking, with a period only the stop can cut short.
	stop = make(chan struct{})
	s = newSleepers(time.Hour, stop)
	s.add(a)
	close(stop)
	untilIdle(t, s, a)
	s.add(b) // after the goroutine has returned: a run of its own
	untilIdle(t, s, b)
}

package broker

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestRequestMemoryStaysWithinBudget: many goroutines asking for buffers
// of varying sizes at once never hold more than the budget between them,
// all are served, waiters are admitted in order, and buffers are reused.
func TestRequestMemoryStaysWithinBudget(t *testing.T) {
	const budget = 10 << 20
	m := newRequestMemory(budget)
	stop := make(chan struct{})
	var held, most atomic.Int64
	var wg sync.WaitGroup
	for g := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20 {
				n := (1 + (g*7+i*3)%8) << 20 // 1..8 MiB
				b, err := m.get(n, stop, 0)
				if err != nil {
					t.Error(err)
					return
				}
				if len(b) != n {
					t.Errorf("got %d bytes, asked %d", len(b), n)
				}
				h := held.Add(int64(cap(b)))
				for {
					old := most.Load()
					if h <= old || most.CompareAndSwap(old, h) {
						break
					}
				}
				b[0], b[n-1] = 1, 1
				time.Sleep(100 * time.Microsecond)
				held.Add(-int64(cap(b)))
				m.put(b, len(b))
			}
		}()
	}
	wg.Wait()
	inUse, free, peak, waiting := m.stats()
	if most.Load() > budget || peak > budget || inUse != 0 || waiting != 0 || free > budget {
		t.Fatalf("held at most %d, pool peak %d, now in use %d, free %d, waiting %d; budget %d",
			most.Load(), peak, inUse, free, waiting, budget)
	}
	t.Logf("800 buffers of 1-8 MiB through a 10 MiB budget: at most %d MiB held at once, %d MiB kept free",
		most.Load()>>20, free>>20)
}

// TestRequestMemoryFirstComeFirstServed: a large request waiting at the head
// is not overtaken by a smaller one that would fit (6 + 4 <= 10).
func TestRequestMemoryFirstComeFirstServed(t *testing.T) {
	m := newRequestMemory(10)
	stop := make(chan struct{})
	a, _ := m.get(6, stop, 0)
	order := make(chan int, 2)
	go func() { b, _ := m.get(8, stop, 0); order <- 8; m.put(b, len(b)) }()
	waitFor(t, func() bool { _, _, _, w := m.stats(); return w == 1 })
	go func() { b, _ := m.get(4, stop, 0); order <- 4; m.put(b, len(b)) }()
	waitFor(t, func() bool { _, _, _, w := m.stats(); return w == 2 })
	m.put(a, len(a))
	if first, second := <-order, <-order; first != 8 || second != 4 {
		t.Fatalf("served %d then %d, want 8 then 4", first, second)
	}
}

// TestRequestMemoryStopAndClose: a waiter leaves when its stop channel
// closes (the next one is then considered), and close wakes every waiter
// with an error.
func TestRequestMemoryStopAndClose(t *testing.T) {
	m := newRequestMemory(10)
	a, _ := m.get(10, nil, 0)
	stop1 := make(chan struct{})
	errs := make(chan error, 2)
	go func() { _, err := m.get(5, stop1, 0); errs <- err }()
	go func() { _, err := m.get(5, nil, 0); errs <- err }()
	waitFor(t, func() bool { _, _, _, w := m.stats(); return w == 2 })
	close(stop1)
	if err := <-errs; err == nil {
		t.Fatal("a stopped waiter got a buffer")
	}
	m.close()
	if err := <-errs; err == nil {
		t.Fatal("a waiter got a buffer from a closed pool")
	}
	m.put(a, len(a))
	if _, err := m.get(1, nil, 0); err == nil {
		t.Fatal("get after close succeeded")
	}
}

// TestRequestMemoryReleasesIdleBuffers: free buffers are reused while they
// are wanted, and dropped once unused for releaseAfter.
func TestRequestMemoryReleasesIdleBuffers(t *testing.T) {
	m := newRequestMemory(64 << 20)
	b, _ := m.get(8<<20, nil, 0)
	m.put(b, len(b))
	c, _ := m.get(7<<20, nil, 0) // fits in the free 8 MiB buffer: reused
	if &c[:1][0] != &b[:1][0] {
		t.Fatal("a 7 MiB request did not reuse the free 8 MiB buffer")
	}
	m.put(c, len(c))
	if d := m.releaseIdle(time.Now()); d != 0 {
		t.Fatalf("released %d bytes of a buffer used just now", d)
	}
	if d := m.releaseIdle(time.Now().Add(releaseAfter)); d != 8<<20 {
		t.Fatalf("released %d bytes after releaseAfter, want %d", d, 8<<20)
	}
	if _, free, _, _ := m.stats(); free != 0 {
		t.Fatalf("%d bytes still kept", free)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
	}
}

// TestLogLimiter: one line per interval, the next one told how many were
// held back.
func TestLogLimiter(t *testing.T) {
	r := logLimiter{every: 50 * time.Millisecond}
	if ok, held := r.allow(); !ok || held != 0 {
		t.Fatalf("first: %v %d", ok, held)
	}
	for range 9 {
		if ok, _ := r.allow(); ok {
			t.Fatal("a second line within the interval")
		}
	}
	time.Sleep(60 * time.Millisecond)
	if ok, held := r.allow(); !ok || held != 9 {
		t.Fatalf("after the interval: %v, %d held; want true, 9", ok, held)
	}
}

// TestRequestMemorySmallNotStuckBehindLarge: while a large request waits for the budget, small ones (at
// most 1 MiB) are admitted within the reserve of an eighth of the budget instead of queueing behind it;
// past the reserve they wait, so they cannot starve it; and the large one is admitted first once it fits.
func TestRequestMemorySmallNotStuckBehindLarge(t *testing.T) {
	const budget = 16 << 20 // reserve 2 MiB
	m := newRequestMemory(budget)
	a, _ := m.get(6<<20, nil, 0)
	b, _ := m.get(6<<20, nil, 0) // 12 of 16 MiB held by large requests
	large := make(chan []byte)
	go func() { l, _ := m.get(8<<20, nil, 0); large <- l }()
	waitFor(t, func() bool { _, _, _, w := m.stats(); return w == 1 })
	var small [][]byte
	for i := range 4 { // 4 × 512 KiB = the reserve
		s, err := m.get(512<<10, nil, time.Second)
		if err != nil {
			t.Fatalf("small request %d behind a waiting large one: %v", i, err)
		}
		small = append(small, s)
	}
	fifth := make(chan []byte)
	go func() { s, _ := m.get(512<<10, nil, 0); fifth <- s }()
	waitFor(t, func() bool { _, _, _, w := m.stats(); return w == 2 })
	m.put(a, len(a)) // 6 MiB free: the large one fits (12 - 6 + 2 + 8 = 16) and goes first
	l := <-large
	select {
	case <-fifth:
		t.Fatal("a small request past the reserve was admitted before the waiting large one")
	default:
	}
	m.put(small[0], len(small[0]))
	if s := <-fifth; len(s) != 512<<10 {
		t.Fatalf("fifth small request got %d bytes", len(s))
	}
	m.put(b, len(b))
	m.put(l, len(l))
}

// TestRequestMemoryWaitIsBounded: a request the budget cannot admit within its wait gets errMemoryWait and
// leaves the queue; the one after it is then considered.
func TestRequestMemoryWaitIsBounded(t *testing.T) {
	m := newRequestMemory(4 << 20)
	a, _ := m.get(3<<20, nil, 0)
	start := time.Now()
	_, err := m.get(2<<20, nil, 100*time.Millisecond)
	if !errors.Is(err, errMemoryWait) || time.Since(start) < 100*time.Millisecond {
		t.Fatalf("after %v: %v, want errMemoryWait after 100 ms", time.Since(start), err)
	}
	if _, _, _, w := m.stats(); w != 0 {
		t.Fatalf("%d waiting after the timeout", w)
	}
	if c, err := m.get(1<<20, nil, time.Second); err != nil {
		t.Fatalf("a request that fits: %v", err)
	} else {
		m.put(c, len(c))
	}
	m.put(a, len(a))
}

// TestRequestMemoryReadBuffers: the grown read buffers (readbuffer.go) are
// charged to the budget, together within its reserve (an eighth), never
// while a request waits, and given back; without a budget they always fit.
func TestRequestMemoryReadBuffers(t *testing.T) {
	const mib = 1 << 20
	m := newRequestMemory(16 * mib) // reserve 2 MiB
	if !m.reserveRead(mib) || !m.reserveRead(mib) {
		t.Fatal("two 1 MiB read buffers refused within a 2 MiB reserve")
	}
	if m.reserveRead(mib) {
		t.Fatal("a third 1 MiB read buffer admitted past the 2 MiB reserve")
	}
	if inUse, _, _, _ := m.stats(); inUse != 2*mib {
		t.Fatalf("in use %d, want %d", inUse, 2*mib)
	}
	m.releaseRead(mib)
	// 1 MiB held: a 15.5 MiB request does not fit and waits, and a read
	// buffer that would fit the reserve and the budget may not pass it.
	stop := make(chan struct{})
	defer close(stop)
	got := make(chan error, 1)
	go func() {
		b, err := m.get(15*mib+mib/2, stop, 0)
		if err == nil {
			m.put(b, len(b))
		}
		got <- err
	}()
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		if _, _, _, waiting := m.stats(); waiting == 1 {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("the 15.5 MiB request is not waiting after 10 s")
		}
	}
	if m.reserveRead(mib) {
		t.Fatal("a read buffer admitted while a large request waits")
	}
	m.releaseRead(mib) // the 15.5 MiB request fits now
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if inUse, _, _, _ := m.stats(); inUse != 0 {
		t.Fatalf("in use %d after everything was given back, want 0", inUse)
	}
	if none := newRequestMemory(-1); !none.reserveRead(mib) {
		t.Fatal("without a budget a read buffer was refused")
	}
}

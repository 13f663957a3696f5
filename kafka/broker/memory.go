package broker

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// requestMemory is queued.max.request.bytes: a broker-wide budget for the
// request bodies held in memory, Kafka's memory pool. A connection that has
// read the size field of a large request asks for that many bytes and waits
// until the budget admits them, and only then reads the body, into a buffer
// of exactly that size; meanwhile it reads nothing more, so the client's
// bytes wait in the kernel's socket buffers, not in the broker. Requests of
// at most smallRequestBytes do not come here: they are served where they
// lie in the connection's read buffer (see conn.go), which is 64 KiB
// unless a producer's connection grew it (readbuffer.go): the grown buffers
// are charged here too, within the reserve.
//
// 0.7 grew each connection's buffer by doubling as bytes arrived, so a
// burst of large requests took the broker to more than the bytes in flight,
// and it kept that memory (docs/ROBUSTNESS.md §2). Here at most budget bytes are handed
// out at once, and released buffers are kept for reuse rather than left to
// the garbage collector, so the broker's heap holds no more than the budget
// in request buffers, in use or free. A free buffer that nobody has taken
// for releaseAfter is dropped and the memory is returned to the operating
// system, so the process shrinks back after a burst.
//
// Requests come in two classes. Large ones (over smallClassBytes) are
// admitted first come, first served: a 100 MiB request is not overtaken for
// ever by a stream of 1 MiB ones. Small ones wait in a queue of their own and
// are not stuck behind a large one that does not fit yet: while a large
// request waits, small ones are admitted within a reserve of an eighth of the
// budget, so they cannot starve it either. A wait is bounded
// (queued.max.request.wait.ms): a connection not admitted by then is closed.
type requestMemory struct {
	budget  int64 // <= 0: no budget (each request gets a fresh buffer)
	reserve int64 // what small requests may hold while a large one waits: budget/8

	mu         sync.Mutex
	inUse      int64 // bytes handed out and not yet given back
	smallInUse int64 // of which to small requests
	free       []freeBuffer
	freeBytes  int64
	waiters    []*memWaiter // large requests, in arrival order
	small      []*memWaiter // small requests, in arrival order
	closed     bool
	peak       int64 // most bytes handed out at once, for tests
	reads      int64 // of inUse, the connections' grown read buffers (readbuffer.go)
}

// smallClassBytes: a request body of at most this many bytes is a small one
// (requestMemory's doc).
const smallClassBytes = 1 << 20

type freeBuffer struct {
	b     []byte
	since time.Time
}

type memWaiter struct {
	n     int
	small bool   // n <= smallClassBytes
	buf   []byte // a reused buffer, or nil: allocate n bytes
	gc    bool   // free buffers were dropped to make room: collect first
	ready chan struct{}
}

// smallRequestBytes: bodies up to this size are served in the connection's
// read buffer, without asking the budget.
const smallRequestBytes = 64 << 10

// releaseAfter: a free buffer unused this long is dropped and its memory
// returned to the operating system.
const releaseAfter = time.Second

func newRequestMemory(budget int64) *requestMemory {
	return &requestMemory{budget: budget, reserve: budget / 8}
}

// errMemoryWait: a request body not admitted within queued.max.request.wait.ms.
var errMemoryWait = errors.New("request memory: body not admitted in time (queued.max.request.wait.ms)")

// get returns a buffer of n bytes once the budget admits them, or an error
// if stop is closed, wait (> 0) passes (errMemoryWait) or the pool closes
// first. The buffer must be given back with put. Without a budget it
// returns nil: the caller reads the body as 0.7 did, into a buffer grown as
// the bytes arrive.
func (m *requestMemory) get(n int, stop <-chan struct{}, wait time.Duration) ([]byte, error) {
	if m.budget <= 0 {
		return nil, nil
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errMemoryClosed
	}
	w := &memWaiter{n: n, small: n <= smallClassBytes}
	q := &m.waiters
	if w.small {
		q = &m.small
	}
	if len(*q) == 0 && m.mayPassLocked(w) && m.admitLocked(w) {
		m.mu.Unlock()
		return w.take(), nil
	}
	w.ready = make(chan struct{})
	*q = append(*q, w)
	m.mu.Unlock()

	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	giveUp := errMemoryClosed
	select {
	case <-w.ready:
		if w.n < 0 { // closed while waiting
			return nil, errMemoryClosed
		}
		return w.take(), nil
	case <-timeout:
		giveUp = fmt.Errorf("%w: %d bytes waited %v", errMemoryWait, n, wait)
	case <-stop:
	}
	m.mu.Lock()
	select {
	case <-w.ready: // admitted meanwhile: give the reservation back
		if w.n >= 0 {
			cost := int64(w.n)
			if w.buf != nil {
				cost = int64(cap(w.buf))
				m.free = append(m.free, freeBuffer{b: w.buf, since: time.Now()})
				m.freeBytes += cost
			}
			m.inUse -= cost
			if w.small {
				m.smallInUse -= cost
			}
			m.wakeLocked()
		}
		m.mu.Unlock()
		return nil, giveUp
	default:
	}
	for i, x := range *q {
		if x == w {
			*q = append((*q)[:i], (*q)[i+1:]...)
			break
		}
	}
	m.wakeLocked() // the next one may fit now that this one left the head
	m.mu.Unlock()
	return nil, giveUp
}

// mayPassLocked says whether w may be admitted before the large requests
// waiting: a large one never, a small one within the reserve.
func (m *requestMemory) mayPassLocked(w *memWaiter) bool {
	return !w.small || len(m.waiters) == 0 || m.smallInUse+int64(w.n) <= m.reserve
}

// take turns an admission into a buffer: the reused one, or a new one.
func (w *memWaiter) take() []byte {
	if w.buf != nil {
		return w.buf[:w.n]
	}
	if w.gc {
		// Free buffers were just dropped to make room; collect them before
		// allocating, so the heap does not hold both.
		runtime.GC()
	}
	return make([]byte, w.n)
}

// admitLocked reserves w's bytes if the budget allows, choosing the
// smallest free buffer that holds them (and is not more than twice as big),
// else reserving a new allocation and dropping free buffers so that what
// is in use plus what is kept stays within the budget.
func (m *requestMemory) admitLocked(w *memWaiter) bool {
	best := -1
	for i, f := range m.free {
		if c := cap(f.b); c >= w.n && c <= 2*w.n && (best < 0 || c < cap(m.free[best].b)) {
			best = i
		}
	}
	if best >= 0 && m.inUse+int64(cap(m.free[best].b)) <= m.budget {
		w.buf = m.free[best].b
		m.free = append(m.free[:best], m.free[best+1:]...)
		m.freeBytes -= int64(cap(w.buf))
		m.charge(w, int64(cap(w.buf)))
		return true
	}
	if m.inUse+int64(w.n) > m.budget {
		return false
	}
	m.charge(w, int64(w.n))
	w.gc = m.dropFreeLocked()
	return true
}

// dropFreeLocked drops free buffers, oldest first, until what is in use
// plus what is kept fits the budget, and reports whether it dropped any.
func (m *requestMemory) dropFreeLocked() bool {
	dropped := false
	for len(m.free) > 0 && m.inUse+m.freeBytes > m.budget {
		m.freeBytes -= int64(cap(m.free[0].b))
		m.free[0] = freeBuffer{}
		m.free = m.free[1:]
		dropped = true
	}
	return dropped
}

// charge counts cost bytes handed to w.
func (m *requestMemory) charge(w *memWaiter, cost int64) {
	m.inUse += cost
	if w.small {
		m.smallInUse += cost
	}
	m.peak = max(m.peak, m.inUse)
}

// reserveRead charges n bytes of a connection's grown read buffer
// (readbuffer.go) if they fit now: the grown buffers together within the
// reserve, the whole within the budget, and no request waiting. Free
// buffers are dropped as for a request (dropFreeLocked). Without a budget it always
// does, as 0.7 bounded nothing.
func (m *requestMemory) reserveRead(n int) bool {
	if m.budget <= 0 {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || len(m.waiters) > 0 || len(m.small) > 0 ||
		m.reads+int64(n) > m.reserve || m.inUse+int64(n) > m.budget {
		return false
	}
	m.inUse += int64(n)
	m.reads += int64(n)
	m.peak = max(m.peak, m.inUse)
	m.dropFreeLocked()
	return true
}

// releaseRead gives back what reserveRead charged, and admits the waiters
// that now fit.
func (m *requestMemory) releaseRead(n int) {
	if m.budget <= 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inUse -= int64(n)
	m.reads -= int64(n)
	m.wakeLocked()
}

// put gives a buffer from get back (for a body of n bytes, as asked), keeps
// it for reuse, and admits the waiters that now fit, in order.
func (m *requestMemory) put(b []byte, n int) {
	if m.budget <= 0 || b == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.inUse -= int64(cap(b))
	if n <= smallClassBytes {
		m.smallInUse -= int64(cap(b))
	}
	if !m.closed {
		m.free = append(m.free, freeBuffer{b: b[:cap(b)], since: time.Now()})
		m.freeBytes += int64(cap(b))
	}
	m.wakeLocked()
}

func (m *requestMemory) wakeLocked() {
	for len(m.waiters) > 0 && m.admitLocked(m.waiters[0]) {
		close(m.waiters[0].ready)
		m.waiters[0] = nil
		m.waiters = m.waiters[1:]
	}
	for len(m.small) > 0 && m.mayPassLocked(m.small[0]) && m.admitLocked(m.small[0]) {
		close(m.small[0].ready)
		m.small[0] = nil
		m.small = m.small[1:]
	}
}

// releaseIdle drops the free buffers unused since before now-releaseAfter
// and, if it dropped any, returns the memory to the operating system. It
// reports how many bytes it dropped.
func (m *requestMemory) releaseIdle(now time.Time) int64 {
	m.mu.Lock()
	var dropped int64
	keep := m.free[:0]
	for _, f := range m.free {
		if now.Sub(f.since) >= releaseAfter {
			dropped += int64(cap(f.b))
			continue
		}
		keep = append(keep, f)
	}
	clear(m.free[len(keep):])
	m.free = keep
	m.freeBytes -= dropped
	m.mu.Unlock()
	if dropped > 0 {
		debug.FreeOSMemory()
	}
	return dropped
}

// run releases idle buffers every releaseAfter until stop is closed.
func (m *requestMemory) run(stop <-chan struct{}) {
	t := time.NewTicker(releaseAfter)
	defer t.Stop()
	for {
		select {
		case now := <-t.C:
			m.releaseIdle(now)
		case <-stop:
			return
		}
	}
}

// close refuses further requests, wakes every waiter with an error and
// drops the free buffers.
func (m *requestMemory) close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	for _, w := range append(m.waiters, m.small...) {
		w.n = -1
		close(w.ready)
	}
	m.waiters, m.small = nil, nil
	m.free, m.freeBytes = nil, 0
}

// MemoryStats describes the request memory budget (queued.max.request.bytes).
type MemoryStats struct {
	Budget  int64 // the budget; <= 0: none
	InUse   int64 // bytes of request buffers handed out now
	Free    int64 // bytes of released buffers kept for reuse
	Peak    int64 // the most bytes handed out at once since the start
	Waiting int   // connections waiting for the budget to admit their request
}

// MemoryStats is the state of the request memory budget now.
func (b *Broker) MemoryStats() MemoryStats {
	inUse, free, peak, waiting := b.mem.stats()
	return MemoryStats{Budget: b.mem.budget, InUse: inUse, Free: free, Peak: peak, Waiting: waiting}
}

// stats is what tests and the broker's log report: bytes handed out now,
// kept free, the most handed out at once, and connections waiting.
func (m *requestMemory) stats() (inUse, free, peak int64, waiting int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inUse, m.freeBytes, m.peak, len(m.waiters) + len(m.small)
}

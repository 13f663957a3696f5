package producer

import "sync"

// setPool recycles the buffers of encoded sets sent to replicated topics, so that the producer's hot path
// allocates nothing per batch in the steady state (the paper's §5 batch of 50 is 10,450 bytes; allocating
// one per batch kept the producer's garbage collector and the runtime's scavenger busy in figure 6). A
// set goes back once nothing can send it again: after its synchronous send returned, or once its answer
// was read when several are in flight (inflight.go). A set that is resent after a failure is simply left
// to the garbage collector.
type setPool struct {
	mu   sync.Mutex
	free [][]byte
}

// maxFreeSets bounds the buffers kept: the producer's window (maxInFlight) and a few more.
const maxFreeSets = maxInFlight + 4

// get returns an empty buffer with room for n bytes.
func (sp *setPool) get(n int) []byte {
	sp.mu.Lock()
	for i := len(sp.free) - 1; i >= 0; i-- {
		if b := sp.free[i]; cap(b) >= n {
			sp.free[i] = sp.free[len(sp.free)-1]
			sp.free[len(sp.free)-1] = nil
			sp.free = sp.free[:len(sp.free)-1]
			sp.mu.Unlock()
			return b[:0]
		}
	}
	sp.mu.Unlock()
	return make([]byte, 0, n)
}

// put gives b back for reuse; the caller no longer uses it.
func (sp *setPool) put(b []byte) {
	if cap(b) == 0 {
		return
	}
	sp.mu.Lock()
	if len(sp.free) < maxFreeSets {
		sp.free = append(sp.free, b[:0])
	}
	sp.mu.Unlock()
}

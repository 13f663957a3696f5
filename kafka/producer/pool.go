package producer

import (
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
)

// pool holds one connection per broker id. A send finds its connection in a
// map it loads with one atomic load and never changes: a connection is added
// (rarely, under mu) by storing a new map, so the steady state takes no lock
// before the connection's own. The connection added last is looked at
// before the map, so a producer of one broker (the paper's set-up) finds it
// without a map lookup.
type pool struct {
	cfg    Config
	conns  atomic.Pointer[map[int]*brokerConn]
	last   atomic.Pointer[brokerConn] // the connection added last; nil after close
	mu     sync.Mutex                 // adds and close
	closed bool
}

func newPool(cfg Config) *pool {
	p := &pool{cfg: cfg}
	p.conns.Store(&map[int]*brokerConn{})
	return p
}

func (p *pool) get(id int, disc Discovery) (*brokerConn, error) {
	if c := p.last.Load(); c != nil && c.broker.ID == id {
		return c, nil
	}
	if c, ok := (*p.conns.Load())[id]; ok {
		return c, nil
	}
	b, found := disc.Broker(id)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, ErrClosed
	}
	cur := *p.conns.Load()
	if c, ok := cur[id]; ok {
		return c, nil
	}
	if !found {
		return nil, fmt.Errorf("producer: broker id %d: %w", id, ErrNoBrokers)
	}
	c := &brokerConn{broker: b, cfg: &p.cfg, unanswered: true}
	next := maps.Clone(cur)
	next[id] = c
	p.conns.Store(&next)
	p.last.Store(c)
	return c, nil
}

// close closes every connection for good; a send that found one before close
// gets ErrClosed from it rather than a new dial (brokerConn.shut).
func (p *pool) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, c := range *p.conns.Load() {
		c.shut()
	}
	p.conns.Store(&map[int]*brokerConn{})
	p.last.Store(nil)
}

package zktest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP relay in front of a server. Cut drops every relayed connection and refuses new ones until
// Restore: a network partition between one client and ZooKeeper, so the server expires that client's session
// while everyone else carries on (how a broker or consumer loses its ephemeral nodes, docs/PROTOCOL.md §5).
type Proxy struct {
	target string
	l      net.Listener
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

// NewProxy listens on a free local port and relays to target until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{target: target, l: l, conns: map[net.Conn]struct{}{}}
	go p.serve()
	t.Cleanup(func() {
		l.Close()
		p.Cut()
	})
	return p
}

// Addr is the proxy's address, to put in a connect string instead of the target's.
func (p *Proxy) Addr() string { return p.l.Addr().String() }

// Cut closes every relayed connection and refuses new ones.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Restore accepts connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		if !p.track(c) {
			continue
		}
		go func() {
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				return
			}
			if !p.track(s) {
				c.Close()
				return
			}
			go func() { _, _ = io.Copy(s, c); s.Close() }()
			_, _ = io.Copy(c, s)
			c.Close()
		}()
	}
}

package broker

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Connection limits (docs/ROBUSTNESS.md). A connection over
// max.connections.per.ip or max.connections is closed as soon as it is
// accepted, so the listener goes on accepting (and the clients within the
// limits keep getting in); with max.connections=0 the limit follows the
// process's descriptor limit, read again at every accept, so that
// connections cannot use up the descriptors segment files and ZooKeeper
// need. If descriptors run out all the same, accept fails: the broker keeps
// serving the connections it has, refuses the clients waiting in the listen
// backlog with a spare descriptor kept for that (so they are told no rather
// than left hanging), and logs once per interval.

// track records a new connection so Close can close it, or returns why it
// is refused: the broker is closing, or a limit is reached.
func (b *Broker) track(c *net.TCPConn) (refused string) {
	ip := remoteIP(c)
	limit := b.connectionLimit()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closing:
		return "the broker is shutting down"
	case b.perIP[ip] >= b.cfg.MaxConnectionsPerIP:
		return fmt.Sprintf("max.connections.per.ip=%d reached for %s", b.cfg.MaxConnectionsPerIP, ip)
	case len(b.conns) >= limit:
		if b.cfg.MaxConnections > 0 {
			return fmt.Sprintf("max.connections=%d reached", limit)
		}
		return fmt.Sprintf("%d connections, the descriptor limit less a reserve (max.connections=0)", limit)
	}
	b.conns[c] = struct{}{}
	b.perIP[ip]++
	b.connWG.Add(1)
	return ""
}

func (b *Broker) untrack(c *net.TCPConn) {
	ip := remoteIP(c)
	b.mu.Lock()
	delete(b.conns, c)
	if b.perIP[ip]--; b.perIP[ip] <= 0 {
		delete(b.perIP, ip)
	}
	b.mu.Unlock()
	c.Close()
	b.connWG.Done()
}

// Connections is the number of client connections open now.
func (b *Broker) Connections() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

func remoteIP(c *net.TCPConn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// refused logs, rate-limited, a connection closed by track.
func (b *Broker) refused(c *net.TCPConn, why string) {
	if b.isClosing() {
		return
	}
	if ok, held := b.lim.refused.allow(); ok {
		b.log.Warn("connection refused", "remote", c.RemoteAddr().String(), "reason", why,
			"connections", b.Connections(), "alsoRefusedSinceLastLine", held)
	}
}

// connectionLimit is max.connections or, with 0, the descriptor limit less
// a reserve of an eighth of it (at least 64).
func (b *Broker) connectionLimit() int {
	if b.cfg.MaxConnections > 0 {
		return b.cfg.MaxConnections
	}
	n := descriptorLimit()
	return max(n-max(64, n/8), 1)
}

// acceptFailed handles an accept error worth retrying. Out of descriptors,
// it refuses the clients waiting in the backlog with the spare descriptor,
// and logs once per interval how many accepts failed and how many clients
// were refused.
func (b *Broker) acceptFailed(err error) {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		b.shed.Add(int64(b.shedWaiting()))
	}
	if ok, held := b.lim.descriptors.allow(); ok {
		b.log.Warn("accept failed; serving the connections already open", "err", err,
			"connections", b.Connections(), "descriptorLimit", descriptorLimit(),
			"waitingClientsRefused", b.shed.Swap(0), "alsoFailedSinceLastLine", held)
	}
}

// shedWaiting closes the spare descriptor and with it accepts and closes at
// once every client waiting in the listen backlog (at most 1024; a short
// deadline ends the loop when none is left), then takes the spare back. It
// returns how many it refused.
func (b *Broker) shedWaiting() int {
	if b.spare == nil {
		b.spare, _ = os.Open(os.DevNull)
		return 0
	}
	b.spare.Close()
	b.spare = nil
	n := 0
	for ; n < 1024; n++ {
		b.ln.SetDeadline(time.Now().Add(5 * time.Millisecond))
		c, err := b.ln.AcceptTCP()
		if err != nil {
			break
		}
		c.Close()
	}
	b.ln.SetDeadline(time.Time{})
	b.spare, _ = os.Open(os.DevNull)
	return n
}

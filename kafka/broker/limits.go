package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
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

// connState is what the broker knows of one open connection beyond its socket: since when it has been
// waiting for a request with nothing buffered (idle), for eviction at a limit.
type connState struct {
	idleSince atomic.Int64 // unix nanoseconds; 0 while a request is being read or served
}

// evictIdleAfter: at a connection limit, a connection silent at least this long may be closed to let a new
// one in (the longest silent first), so that idle connections cannot keep new clients out.
const evictIdleAfter = time.Second

// track records a new connection so Close can close it, or returns why it is refused: the broker is
// closing, or a limit is reached and no connection has been idle long enough to give way to it.
func (b *Broker) track(c *net.TCPConn) (_ *connState, refused string) {
	ip := remoteIP(c)
	limit := b.connectionLimit()
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.closing:
		return nil, "the broker is shutting down"
	case b.perIP[ip] >= b.cfg.MaxConnectionsPerIP && !b.evictIdleLocked(&ip):
		return nil, fmt.Sprintf("max.connections.per.ip=%d reached for %s, none of its connections idle for %v", b.cfg.MaxConnectionsPerIP, ip, evictIdleAfter)
	case len(b.conns) >= limit && !b.evictIdleLocked(nil):
		if b.cfg.MaxConnections > 0 {
			return nil, fmt.Sprintf("max.connections=%d reached, no connection idle for %v", limit, evictIdleAfter)
		}
		return nil, fmt.Sprintf("%d connections, the descriptor limit less a reserve (max.connections=0), no connection idle for %v", limit, evictIdleAfter)
	}
	st := &connState{}
	b.conns[c] = st
	b.perIP[ip]++
	b.connWG.Add(1)
	return st, ""
}

// evictIdleLocked closes the connection (from ip, if not nil) that has been idle longest, if that is at
// least evictIdleAfter, and takes it out of the counts at once; its goroutine ends on the closed socket.
func (b *Broker) evictIdleLocked(ip *netip.Addr) bool {
	cutoff := time.Now().Add(-evictIdleAfter).UnixNano()
	var victim *net.TCPConn
	oldest := int64(0)
	for c, st := range b.conns {
		since := st.idleSince.Load()
		if since == 0 || since > cutoff || since >= oldest && victim != nil {
			continue
		}
		if ip != nil && remoteIP(c) != *ip {
			continue
		}
		victim, oldest = c, since
	}
	if victim == nil {
		return false
	}
	b.forgetLocked(victim)
	victim.Close()
	b.evicted.Add(1)
	if ok, held := b.lim.idle.allow(); ok {
		b.log.Info("closing the longest idle connection to let a new one in", "remote", victim.RemoteAddr().String(),
			"idle", time.Duration(time.Now().UnixNano()-oldest).Round(time.Millisecond), "alsoClosedSinceLastLine", held)
	}
	return true
}

// forgetLocked takes c out of the connection counts (once: untrack after an eviction finds it gone).
func (b *Broker) forgetLocked(c *net.TCPConn) {
	if _, ok := b.conns[c]; !ok {
		return
	}
	ip := remoteIP(c)
	delete(b.conns, c)
	if b.perIP[ip]--; b.perIP[ip] <= 0 {
		delete(b.perIP, ip)
	}
}

func (b *Broker) untrack(c *net.TCPConn) {
	b.mu.Lock()
	b.forgetLocked(c)
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

// maxRefusing bounds the refused connections answered at once (refuse); past it they are only closed.
const maxRefusing = 16

// refuse closes a connection track refused, answering its first request first where the client will read
// an answer: the request's header is read (for at most a second) and answered with error 8 (broker not
// available) and an empty payload, which every request's answer can carry; a PRODUCE, which has no answer,
// sees the connection closed. It logs, rate-limited.
func (b *Broker) refuse(c *net.TCPConn, why string) {
	select {
	case b.refusing <- struct{}{}:
		go func() {
			defer func() { <-b.refusing }()
			defer c.Close()
			c.SetDeadline(time.Now().Add(time.Second))
			var hdr [protocol.RequestHeaderSize]byte
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			if int16(binary.BigEndian.Uint16(hdr[4:])) != protocol.RequestProduce {
				c.Write(protocol.AppendResponseHeader(nil, 0, protocol.ErrBrokerNotAvailable))
			}
		}()
	default:
		c.Close()
	}
	b.refused(c, why)
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

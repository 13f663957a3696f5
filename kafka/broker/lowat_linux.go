package broker

import (
	"net"
	"syscall"
)

// lowat sets a socket's SO_RCVLOWAT, the bytes that must be queued before a
// sleeping reader is woken (package coalesce). The callback is bound once
// per connection, so a change allocates nothing.
type lowat struct {
	rc  syscall.RawConn
	fn  func(fd uintptr)
	n   int
	err error
}

func (l *lowat) init(c *net.TCPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	l.rc, l.n = rc, 1
	l.fn = l.step
	return nil
}

func (l *lowat) step(fd uintptr) {
	l.err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, l.n)
}

// set makes n the socket's mark. Lowering it wakes a reader asleep on the
// socket if n bytes are queued already (Linux checks at once).
func (l *lowat) set(n int) error {
	l.n = n
	if err := l.rc.Control(l.fn); err != nil {
		return err
	}
	return l.err
}

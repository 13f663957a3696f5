package broker

import (
	"net"
	"syscall"
)

// lowat sets a socket's SO_RCVLOWAT, the bytes that must be queued before a
// sleeping reader is woken (package coalesce), and sends the delayed
// acknowledgement before the reader waits (ackNow). The callbacks are bound
// once per connection, so neither allocates.
type lowat struct {
	rc    syscall.RawConn
	fn    func(fd uintptr)
	ackFn func(fd uintptr)
	n     int
	err   error
}

func (l *lowat) init(c *net.TCPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	l.rc, l.n = rc, 1
	l.fn, l.ackFn = l.step, l.quickAck
	return nil
}

func (l *lowat) quickAck(fd uintptr) {
	l.err = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_QUICKACK, 1)
}

// ackNow sends the acknowledgement TCP has delayed, if it has delayed one
// and everything received has been read (Linux: TCP_QUICKACK runs the
// receive path's "ACK now?" check again, as if the reader had just read,
// with the segment marked as pushed). A reader about to wait calls it, so
// that a sender using Nagle's algorithm, which holds its next small
// segments until the last one is acknowledged, is not made to wait for the
// delayed-ACK timer (40 ms) by a reader that has read everything: the
// kernel acknowledges on a read only when it holds no more unread bytes or
// more than one full segment has come since the last acknowledgement, and
// a read that ends on a segment as large as the largest so far may meet
// neither.
func (l *lowat) ackNow() error {
	if err := l.rc.Control(l.ackFn); err != nil {
		return err
	}
	return l.err
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

package ceiling

import (
	"net"
	"syscall"
)

// WakeAt asks the kernel to wake the reader of c only once n bytes are
// queued (SO_RCVLOWAT; also at the sender's close): a reader that keeps up
// with one-message writes is otherwise woken, and its sender's write(2)
// made to wake it, for every 209-byte message.
func WakeAt(c net.Conn, n int) error {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return nil
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
	}); err != nil {
		return err
	}
	return serr
}

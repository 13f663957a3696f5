package broker

import (
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// sender writes responses on a TCP socket's raw descriptor: headers with
// send(2) and log bytes with sendfile(2) at an explicit file offset.
//
// Why not (*net.TCPConn).ReadFrom: it uses sendfile only from the file's
// shared current offset, so two connections fetching from one segment file
// at once would move each other's position (docs/PROTOCOL.md §4). sendfile with an
// offset pointer leaves the file offset alone, like pread.
//
// Headers go out with MSG_MORE when log bytes follow, so the 6-byte header
// and the data share packets instead of the header leaving alone. Nothing is
// buffered in user space between the header and the file bytes.
//
// The callbacks are method values bound once per connection, so a fetch
// allocates nothing.
type sender struct {
	rc      syscall.RawConn
	writeFn func(fd uintptr) bool
	sfFn    func(fd uintptr) bool

	// state of the operation in progress
	buf    []byte
	flags  int
	noWait bool // write: give up at EAGAIN instead of waiting (tryWrite)
	file   int
	off    int64
	remain int64
	err    error
}

func (s *sender) init(c *net.TCPConn) error {
	rc, err := c.SyscallConn()
	if err != nil {
		return err
	}
	s.rc = rc
	s.writeFn = s.writeStep
	s.sfFn = s.sendfileStep
	return nil
}

// write sends p; more says that file bytes follow at once (MSG_MORE).
func (s *sender) write(p []byte, more bool) error {
	if len(p) == 0 {
		return nil
	}
	s.buf, s.flags, s.err = p, unix.MSG_NOSIGNAL, nil
	if more {
		s.flags |= unix.MSG_MORE
	}
	if err := s.rc.Write(s.writeFn); err != nil {
		return err
	}
	s.buf = nil
	if s.err != nil {
		return fmt.Errorf("broker: send %d-byte response header: %w", len(p), s.err)
	}
	return nil
}

// tryWrite sends what of p the socket takes now, without waiting for it to
// become writable: n < len(p) with no error means it is full.
func (s *sender) tryWrite(p []byte) (n int, err error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.buf, s.flags, s.err, s.noWait = p, unix.MSG_NOSIGNAL, nil, true
	err = s.rc.Write(s.writeFn)
	n, s.buf, s.noWait = len(p)-len(s.buf), nil, false
	if err == nil && s.err != nil {
		err = fmt.Errorf("broker: send %d-byte response: %w", len(p), s.err)
	}
	return n, err
}

// writeStep runs with the socket's descriptor; false means "wait until the
// socket is writable and call me again".
func (s *sender) writeStep(fd uintptr) bool {
	for len(s.buf) > 0 {
		n, err := unix.SendmsgN(int(fd), s.buf, nil, nil, s.flags)
		switch err {
		case nil:
			s.buf = s.buf[n:]
		case unix.EINTR:
		case unix.EAGAIN:
			return s.noWait
		default:
			s.err = err
			return true
		}
	}
	return true
}

// sendFile sends n bytes of f starting at pos, from the page cache straight
// to the socket (§3.1).
func (s *sender) sendFile(f *os.File, pos, n int64) error {
	if n <= 0 {
		return nil
	}
	// Fd does not change a regular file's mode; the caller's Chunk keeps f
	// open until after we return.
	s.file, s.off, s.remain, s.err = int(f.Fd()), pos, n, nil
	err := s.rc.Write(s.sfFn)
	runtime.KeepAlive(f)
	if err == nil {
		err = s.err
	}
	if err != nil {
		return fmt.Errorf("broker: sendfile %d bytes of %s at %d (%d sent): %w", n, f.Name(), pos, n-s.remain, err)
	}
	return nil
}

func (s *sender) sendfileStep(fd uintptr) bool {
	for s.remain > 0 {
		n, err := unix.Sendfile(int(fd), s.file, &s.off, int(min(s.remain, 1<<30)))
		if n > 0 {
			s.remain -= int64(n)
		}
		switch err {
		case nil:
			if n <= 0 {
				s.err = io.ErrUnexpectedEOF // the file is shorter than the chunk
				return true
			}
		case unix.EINTR:
		case unix.EAGAIN:
			return false
		default:
			s.err = err
			return true
		}
	}
	return true
}

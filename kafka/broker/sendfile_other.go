//go:build !linux

package broker

import (
	"io"
	"net"
	"os"
)

// sender is the portable fallback of sendfile_linux.go: plain writes and a
// positioned copy (io.SectionReader reads with pread, so concurrent fetches
// of one file do not disturb each other). It copies through user space.
type sender struct {
	c *net.TCPConn
}

func (s *sender) init(c *net.TCPConn) error {
	s.c = c
	return nil
}

func (s *sender) write(p []byte, more bool) error {
	_, err := s.c.Write(p)
	return err
}

func (s *sender) sendFile(f *os.File, pos, n int64) error {
	if n <= 0 {
		return nil
	}
	_, err := io.Copy(s.c, io.NewSectionReader(f, pos, n))
	return err
}

// tryWrite is write here: the portable fallback has no write that does not
// wait, so the caller's goroutine waits for the socket.
func (s *sender) tryWrite(p []byte) (int, error) {
	n, err := s.c.Write(p)
	return n, err
}

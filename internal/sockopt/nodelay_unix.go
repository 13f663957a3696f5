//go:build unix

// Package sockopt reads the socket options the tests check.
package sockopt

import (
	"fmt"
	"syscall"
)

// NoDelay reports whether TCP_NODELAY is set on c: true when Nagle's
// algorithm is off (Go's default for every TCP connection).
func NoDelay(c syscall.Conn) (bool, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return false, err
	}
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) {
		v, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY)
	}); err != nil {
		return false, err
	}
	if gerr != nil {
		return false, fmt.Errorf("getsockopt TCP_NODELAY: %w", gerr)
	}
	return v != 0, nil
}

//go:build !linux

package broker

import (
	"errors"
	"net"
)

// lowat is the portable fallback of lowat_linux.go: coalescing is off.
type lowat struct{ n int }

func (l *lowat) init(c *net.TCPConn) error {
	l.n = 1
	return errors.New("SO_RCVLOWAT is used on Linux only")
}

func (l *lowat) set(n int) error {
	return errors.New("SO_RCVLOWAT is used on Linux only")
}

func (l *lowat) ackNow() error { return nil }

package link

import (
	"encoding/json"
	"fmt"
	"github.com/kafkarepro/kafkarepro/internal/netns"
	"io"
	"net"
	"strconv"
	"time"
)

// Exec is the command prefix that runs a program on end e's host:
// ip netns exec <namespace>. ip switches namespace and then execs the
// program in place, so the process id a caller starts is the program's.
func (e End) Exec() []string { return []string{"ip", "netns", "exec", e.Netns} }

// FreePort returns a TCP port on addr that nobody listens on now, asked of
// the kernel inside namespace ns.
func FreePort(ns, addr string) (int, error) {
	var port int
	err := netns.InNetns(ns, func() error {
		l, err := net.Listen("tcp", net.JoinHostPort(addr, "0"))
		if err != nil {
			return fmt.Errorf("link: free port on %s in %s: %w", addr, ns, err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		return l.Close()
	})
	return port, err
}

// probe checks the path: a listener on the server host's address, a
// connection to it from the client host, one byte each way.
func (l *Link) probe() error {
	var ln net.Listener
	if err := netns.InNetns(l.Server.Netns, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(l.Server.Addr, "0"))
		return err
	}); err != nil {
		return fmt.Errorf("%w: listen on the server host: %w", ErrSetup, err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_, _ = io.Copy(c, io.LimitReader(c, 1))
			c.Close()
		}
	}()
	return netns.InNetns(l.Client.Netns, func() error {
		c, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
		if err != nil {
			return fmt.Errorf("%w: the client host cannot reach %s: %w", ErrSetup, ln.Addr(), err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		b := []byte{42}
		if _, err := c.Write(b); err != nil {
			return fmt.Errorf("%w: write to %s: %w", ErrSetup, ln.Addr(), err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			return fmt.Errorf("%w: no echo from %s: %w", ErrSetup, ln.Addr(), err)
		}
		return nil
	})
}

// Encode describes the link for a child process (see Decode).
func (l *Link) Encode() string {
	b, _ := json.Marshal(l)
	return string(b)
}

// Decode reads Encode's description. The Link it returns describes where
// the caller runs; it does not own the namespaces (Close refuses).
func Decode(s string) (*Link, error) {
	var l Link
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, fmt.Errorf("link: decode %q: %w", s, err)
	}
	if !validID.MatchString(l.ID) || l.Spec.BitsPerSec <= 0 || l.Framing.MTU <= 0 {
		return nil, fmt.Errorf("link: decode %q: not a link description", s)
	}
	return &l, nil
}

// Describe is the set-up in one line, for the machine table:
// "two network namespaces on one 2-core VM, 1 Gb/s shaped link".
func (l *Link) Describe(cores int) string {
	return "two network namespaces on one " + strconv.Itoa(cores) + "-core VM, " + l.Spec.String() + " shaped link"
}

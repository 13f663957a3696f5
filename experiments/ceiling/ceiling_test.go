package ceiling

import (
	"bytes"
	"context"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// The probes write the messages our message package writes (magic 0).
func TestAppendMessageIsMagicZero(t *testing.T) {
	p := compare.Payload(200)
	if got, want := AppendMessage(nil, p), message.AppendV0(nil, p); !bytes.Equal(got, want) {
		t.Fatalf("probe message % x\nwant           % x", got[:12], want[:12])
	}
}

// The reader finds every message across reads of any size, and stops at a
// bad CRC or a bad length.
func TestCheck(t *testing.T) {
	p := compare.Payload(200)
	var set []byte
	for range 100 {
		set = AppendMessage(set, p)
	}
	for _, readSize := range []int{1, 100, 209, 1000, 1 << 20} {
		clk := newClock(100)
		var sunk int
		err := check(&chunked{b: set, n: readSize}, 100, 200, readSize, clk, func(b []byte) error { sunk += len(b); return nil })
		if err != nil || sunk != len(set) || clk.next != 10 {
			t.Fatalf("read size %d: %v, %d bytes handed on (want %d), %d tenths", readSize, err, sunk, len(set), clk.next)
		}
	}
	bad := bytes.Clone(set)
	bad[50*209+100] ^= 1
	if err := check(bytes.NewReader(bad), 100, 200, 4096, newClock(100), nil); !errors.Is(err, ErrChecksum) {
		t.Fatalf("flipped payload byte: %v, want ErrChecksum", err)
	}
	bad = bytes.Clone(set)
	bad[3*209+3]++
	if err := check(bytes.NewReader(bad), 100, 200, 4096, newClock(100), nil); !errors.Is(err, ErrFraming) {
		t.Fatalf("wrong length: %v, want ErrFraming", err)
	}
}

// chunked reads at most n bytes at a time.
type chunked struct {
	b []byte
	n int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, errors.New("EOF")
	}
	k := copy(p[:min(len(p), c.n)], c.b)
	c.b = c.b[k:]
	return k, nil
}

// Each probe moves every message, in a process of its own for the sender,
// and reports ten tenths.
func TestProbes(t *testing.T) {
	for _, p := range Probes {
		r, err := Run(context.Background(), p, Config{Messages: 20_000, Dir: t.TempDir(), FileMessages: 3000})
		if err != nil {
			t.Fatal(err)
		}
		if r.Messages != 20_000 || r.MsgPerS <= 0 || len(r.Tenths) != 10 || (p != Consumer && r.Fsyncs < 2) {
			t.Fatalf("%s: %+v", p, r)
		}
		t.Logf("%s: %s", p, Describe(r))
	}
	if _, err := Run(context.Background(), "producer-batch2", Config{Messages: 1, Dir: t.TempDir()}); err == nil {
		t.Fatal("an unknown probe ran")
	}
}

// The producer probes' reader asks to be woken once per WriteSize bytes.
func TestWakeAt(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := net.Dial("tcp", ln.Addr().String()); err == nil {
			defer c.Close()
			time.Sleep(100 * time.Millisecond)
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := WakeAt(c, WriteSize); err != nil {
		t.Fatal(err)
	}
	rc, _ := c.(*net.TCPConn).SyscallConn()
	var got int
	var gerr error
	rc.Control(func(fd uintptr) { got, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) })
	if gerr != nil || got != WriteSize {
		t.Fatalf("SO_RCVLOWAT = %d (%v), want %d", got, gerr, WriteSize)
	}
}

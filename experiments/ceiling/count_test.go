package ceiling

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
)

// TestCallgrindProbe runs one probe for scripts/ceiling-callgrind.sh, which
// counts its instructions under valgrind --tool=callgrind at two message
// counts; the difference over the messages is the probe's instructions per
// message, set-up excluded. The sender runs in this process, in a goroutine
// (withSenderInProcess), so that one count holds both sides' work. It runs
// only when the script sets CEILING_CALLGRIND_PROBE and
// CEILING_CALLGRIND_MESSAGES.
func TestCallgrindProbe(t *testing.T) {
	probe := os.Getenv("CEILING_CALLGRIND_PROBE")
	n, err := strconv.ParseInt(os.Getenv("CEILING_CALLGRIND_MESSAGES"), 10, 64)
	if probe == "" || err != nil {
		t.Skip("run by scripts/ceiling-callgrind.sh")
	}
	saved := withSender
	withSender = withSenderInProcess
	defer func() { withSender = saved }()
	r, err := Run(context.Background(), probe, Config{Messages: n, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("ceiling-callgrind: probe=%s messages=%d reads=%d\n", probe, r.Messages, r.Reads)
}

// withSenderInProcess is withSenderProcess with the sender in a goroutine
// of this process: the same sendSets or sendFile on its own connection.
func withSenderInProcess(ctx context.Context, job sendJob, receive func(net.Conn) error) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	sent := make(chan error, 1)
	go func() {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			sent <- err
			return
		}
		defer c.Close()
		tc := c.(*net.TCPConn)
		_ = tc.SetWriteBuffer(SocketBuffer)
		if job.file != "" {
			sent <- sendFile(tc, job)
		} else {
			sent <- sendSets(tc, job)
		}
	}()
	in, err := ln.Accept()
	if err != nil {
		return err
	}
	defer in.Close()
	_ = in.(*net.TCPConn).SetReadBuffer(SocketBuffer)
	if err := receive(in); err != nil {
		return fmt.Errorf("reader: %w", err)
	}
	if err := <-sent; err != nil {
		return fmt.Errorf("sender: %w", err)
	}
	return ctx.Err()
}

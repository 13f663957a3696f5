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
// (withSenderInProcess), so that one count holds both sides' work. The
// script names the probe and the count (CEILING_CALLGRIND_PROBE,
// CEILING_CALLGRIND_MESSAGES); without them it moves 20,000 messages of the
// batch-50 probe, every CRC checked by the reader (Run fails otherwise).
func TestCallgrindProbe(t *testing.T) {
	probe, n := Batch50, int64(20_000) // without the script: a short run, so that the in-process sender is tested
	if p := os.Getenv("CEILING_CALLGRIND_PROBE"); p != "" {
		var err error
		if n, err = strconv.ParseInt(os.Getenv("CEILING_CALLGRIND_MESSAGES"), 10, 64); err != nil {
			t.Fatalf("CEILING_CALLGRIND_MESSAGES: %v", err)
		}
		probe = p
	}
	saved := withSender
	withSender = withSenderInProcess
	defer func() { withSender = saved }()
	r, err := Run(context.Background(), probe, Config{Messages: n, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if r.Messages != n || r.Reads == 0 {
		t.Fatalf("%s moved %d messages in %d reads, want %d", probe, r.Messages, r.Reads, n)
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

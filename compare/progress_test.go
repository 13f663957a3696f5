package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

var errBad = errors.New("test: bad spec")

func TestRemoteWrapNamesServerAndLog(t *testing.T) {
	r := NewRemote("activemq", "broker", Endpoint{Port: 61613, LogPath: "/tmp/x/activemq.log"})
	if r.Addr != "127.0.0.1:61613" {
		t.Fatalf("Addr = %q, want 127.0.0.1:61613 for an empty host", r.Addr)
	}
	err := r.Wrap("consume", fmt.Errorf("read: %w", syscall.ECONNRESET))
	want := "activemq: consume at 127.0.0.1:61613: the broker closed the connection (stopped or crashed?): read: " +
		syscall.ECONNRESET.Error() + " (server log /tmp/x/activemq.log)"
	if err.Error() != want {
		t.Fatalf("Wrap = %q\nwant   %q", err, want)
	}
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatal("Wrap lost the cause")
	}
	other := errors.New("boom")
	err = NewRemote("rabbitmq", "node", Endpoint{Host: "h", Port: 5672}).Wrap("connect", other)
	if err.Error() != "rabbitmq: connect at h:5672: boom" || !errors.Is(err, other) {
		t.Fatalf("Wrap without a log = %q", err)
	}
	if err := r.Wrap("x", io.EOF); !strings.Contains(err.Error(), "closed the connection") {
		t.Fatalf("EOF not explained: %q", err)
	}
}

func TestRemoteDiskUsagePicksTheStore(t *testing.T) {
	data := t.TempDir()
	var measured string
	usage := func(dir string) (int64, error) { measured = dir; return 42, nil }
	r := NewRemote("activemq", "broker", Endpoint{DataDir: data})
	if n, err := r.DiskUsage("kahadb", usage); err != nil || n != 42 || measured != data {
		t.Fatalf("without kahadb/: %d, %v, measured %q; want DataDir %q", n, err, measured, data)
	}
	if err := os.Mkdir(filepath.Join(data, "kahadb"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := r.DiskUsage("kahadb", usage); err != nil || measured != filepath.Join(data, "kahadb") {
		t.Fatalf("with kahadb/: %v, measured %q", err, measured)
	}
	if _, err := NewRemote("activemq", "broker", Endpoint{}).DiskUsage("kahadb", usage); err == nil {
		t.Fatal("DiskUsage without a data directory succeeded")
	}
}

func TestCheckSpecs(t *testing.T) {
	if err := CheckProduce(errBad, ProduceSpec{Topic: "t", Messages: 1}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []ProduceSpec{{Messages: 1}, {Topic: "t"}, {Topic: "t", Messages: 1, MessageSize: -1}} {
		if err := CheckProduce(errBad, s); !errors.Is(err, errBad) {
			t.Errorf("CheckProduce(%+v) = %v, want errBad", s, err)
		}
	}
	if p, err := CheckConsume(errBad, ConsumeSpec{Topic: "t", Messages: 1}, 1000); err != nil || p != 1000 {
		t.Fatalf("default prefetch: %d, %v", p, err)
	}
	if p, err := CheckConsume(errBad, ConsumeSpec{Topic: "t", Messages: 1, PrefetchMessages: 7}, 1000); err != nil || p != 7 {
		t.Fatalf("given prefetch: %d, %v", p, err)
	}
	if _, err := CheckConsume(errBad, ConsumeSpec{Topic: "t"}, 1000); !errors.Is(err, errBad) {
		t.Fatalf("zero messages: %v", err)
	}
}

func TestPayload(t *testing.T) {
	p := Payload(30)
	if len(p) != 30 || string(p[:3]) != "abc" || p[26] != 'a' {
		t.Fatalf("Payload(30) = %q", p)
	}
}

func TestRunCountsAndReports(t *testing.T) {
	r := NewRemote("rabbitmq", "node", Endpoint{Port: 1, LogPath: "/l"})
	var received atomic.Int64
	run := r.BeginConsume(context.Background(), `queue "q"`, ConsumeSpec{Topic: "q", Messages: 3, MessageSize: 200, Received: &received})
	for range 2 {
		if err := run.Received(200); err != nil {
			t.Fatal(err)
		}
	}
	if run.Complete() || run.Done() != 2 || received.Load() != 2 {
		t.Fatalf("after 2 of 3: complete %v, done %d, received %d", run.Complete(), run.Done(), received.Load())
	}
	if err := run.Received(199); err == nil || run.Done() != 2 {
		t.Fatalf("a 199-byte message: %v, done %d", err, run.Done())
	}
	res, err := run.Fail(errors.New("boom"))
	if res.Messages != 2 || res.Bytes != 400 || res.Elapsed <= 0 {
		t.Fatalf("partial result %+v", res)
	}
	want := `rabbitmq: consume from queue "q" failed after 2 of 3 messages at 127.0.0.1:1: boom (server log /l)`
	if err == nil || err.Error() != want {
		t.Fatalf("Fail = %v\nwant   %s", err, want)
	}
	run.Add()
	if !run.Complete() || run.Result().Bytes != 600 {
		t.Fatalf("complete %v, result %+v", run.Complete(), run.Result())
	}

	// A producer without a Sent counter, ended by its context.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	prun := r.BeginProduce(ctx, "/queue/p", ProduceSpec{Topic: "p", Messages: 5, MessageSize: 10})
	prun.Add()
	_, err = prun.Fail(errors.New("write: broken pipe"))
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "produce to /queue/p failed after 1 of 5 messages") {
		t.Fatalf("cancelled Fail = %v", err)
	}
	if _, err := prun.Fail(ctx.Err()); strings.Count(err.Error(), "context canceled") != 1 {
		t.Fatalf("the context's own error is named twice: %v", err)
	}
}

func TestWatchdog(t *testing.T) {
	w := NewWatchdog(50 * time.Millisecond)
	if w.Stalled(0) {
		t.Fatal("stalled at once")
	}
	time.Sleep(60 * time.Millisecond)
	if w.Stalled(1) {
		t.Fatal("stalled although the count moved")
	}
	if w.Stalled(1) {
		t.Fatal("stalled right after progress")
	}
	time.Sleep(60 * time.Millisecond)
	if !w.Stalled(1) {
		t.Fatal("not stalled after the timeout without progress")
	}
}

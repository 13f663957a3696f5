package compare

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

// This file holds what the adapters of the external servers (compare/activemq, compare/rabbitmq) share
// around a §5 producer or consumer test: naming the server and its log in every error, reporting how
// far a failed test got, noticing a test that stops making progress, and finding the server's store
// for DiskBytes. The protocol code stays in each adapter.

// Remote names one external server in errors: its system, what it calls itself and where it answers.
type Remote struct {
	System   string // the adapter's Name: "activemq", "rabbitmq"
	Kind     string // what the server is called in messages: "broker", "node"
	Addr     string // host:port the adapter dials
	Endpoint Endpoint
}

// NewRemote describes the server of ep for the adapter system; an empty ep.Host means 127.0.0.1.
func NewRemote(system, kind string, ep Endpoint) Remote {
	host := ep.Host
	if host == "" {
		host = "127.0.0.1"
	}
	return Remote{System: system, Kind: kind, Addr: net.JoinHostPort(host, strconv.Itoa(ep.Port)), Endpoint: ep}
}

// Wrap names the server and its log in err: "<system>: <what> at <addr>: <err> (server log <path>)".
// A connection the server closed or reset (io.EOF, ECONNRESET, EPIPE) is said to be one, since that is
// what a killed server looks like to its client.
func (r Remote) Wrap(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		err = fmt.Errorf("the %s closed the connection (stopped or crashed?): %w", r.Kind, err)
	}
	if r.Endpoint.LogPath != "" {
		return fmt.Errorf("%s: %s at %s: %w (server log %s)", r.System, what, r.Addr, err, r.Endpoint.LogPath)
	}
	return fmt.Errorf("%s: %s at %s: %w", r.System, what, r.Addr, err)
}

// DiskUsage measures the store DiskBytes reports, with usage (localsvc.DiskUsage, which this package
// cannot import): DataDir/sub (e.g. ActiveMQ's kahadb), or DataDir itself when it has no such
// subdirectory (it already is the store).
func (r Remote) DiskUsage(sub string, usage func(dir string) (int64, error)) (int64, error) {
	if r.Endpoint.DataDir == "" {
		return 0, fmt.Errorf("%s: disk bytes: the endpoint has no data directory on this host", r.System)
	}
	dir := filepath.Join(r.Endpoint.DataDir, sub)
	if _, err := os.Stat(dir); err != nil {
		dir = r.Endpoint.DataDir
	}
	return usage(dir)
}

// CheckProduce returns an error wrapping bad (the adapter's ErrSpec) when spec cannot be run.
func CheckProduce(bad error, spec ProduceSpec) error {
	if spec.Messages <= 0 || spec.MessageSize < 0 || spec.Topic == "" {
		return fmt.Errorf("%w: produce %d messages of %d bytes to topic %q", bad, spec.Messages, spec.MessageSize, spec.Topic)
	}
	return nil
}

// CheckConsume returns an error wrapping bad (the adapter's ErrSpec) when spec cannot be run, and
// otherwise the prefetch count to ask for: spec.PrefetchMessages, or def when that is not set.
func CheckConsume(bad error, spec ConsumeSpec, def int) (prefetch int, err error) {
	if spec.Messages <= 0 || spec.Topic == "" {
		return 0, fmt.Errorf("%w: consume %d messages from topic %q", bad, spec.Messages, spec.Topic)
	}
	if spec.PrefetchMessages <= 0 {
		return def, nil
	}
	return spec.PrefetchMessages, nil
}

// Payload is one message body of size bytes ('a' to 'z' over and over), which an adapter reuses for
// every message of a test.
func Payload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// Run is one producer or consumer test under way: it holds the clock and the count of messages done
// (kept in step with ProduceSpec.Sent or ConsumeSpec.Received), and turns them into a Result, or into a
// Result and an error saying how far the test got.
type Run struct {
	remote  Remote
	ctx     context.Context
	what    string // "produce to /queue/t"
	want    int64  // messages the test is to move
	size    int64  // bytes per message
	n       int64  // messages done
	counter *atomic.Int64
	start   time.Time
}

// BeginProduce starts the clock of a producer test to dest (e.g. "/queue/t").
func (r Remote) BeginProduce(ctx context.Context, dest string, spec ProduceSpec) *Run {
	return r.begin(ctx, "produce to "+dest, spec.Messages, spec.MessageSize, spec.Sent)
}

// BeginConsume starts the clock of a consumer test from dest (e.g. "/queue/t").
func (r Remote) BeginConsume(ctx context.Context, dest string, spec ConsumeSpec) *Run {
	return r.begin(ctx, "consume from "+dest, spec.Messages, spec.MessageSize, spec.Received)
}

func (r Remote) begin(ctx context.Context, what string, want, size int, counter *atomic.Int64) *Run {
	return &Run{remote: r, ctx: ctx, what: what, want: int64(want), size: int64(size), counter: counter, start: time.Now()}
}

// Done is the number of messages done so far.
func (run *Run) Done() int64 { return run.n }

// Complete reports whether every message of the test is done.
func (run *Run) Complete() bool { return run.n >= run.want }

// Add counts one message done.
func (run *Run) Add() {
	run.n++
	if run.counter != nil {
		run.counter.Add(1)
	}
}

// Received counts one consumed message of size bytes, or fails when the test has a message size and
// size is not it.
func (run *Run) Received(size int) error {
	if run.size > 0 && int64(size) != run.size {
		return fmt.Errorf("message %d has %d bytes, want %d", run.n, size, run.size)
	}
	run.Add()
	return nil
}

// Result is the Result of the messages done, with the time since the test began.
func (run *Run) Result() Result {
	return Result{Messages: run.n, Bytes: run.n * run.size, Elapsed: time.Since(run.start)}
}

// Fail reports a test that failed part way: the partial Result, and err wrapped with the server's
// name and log, the count, and the context's error when the context ended the test.
func (run *Run) Fail(err error) (Result, error) {
	if cerr := run.ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%v)", cerr, err)
	}
	return run.Result(), run.remote.Wrap(fmt.Sprintf("%s failed after %d of %d messages", run.what, run.n, run.want), err)
}

// Watchdog notices a test that stops making progress (a hung server; a killed one breaks the
// connection at once): Stalled is true once the observed count has not changed for Timeout.
type Watchdog struct {
	Timeout time.Duration
	last    int64
	since   time.Time
}

// NewWatchdog starts watching a count that is 0 now.
func NewWatchdog(timeout time.Duration) *Watchdog {
	return &Watchdog{Timeout: timeout, since: time.Now()}
}

// Stalled records the count n seen now and reports whether it has stayed the same for Timeout.
func (w *Watchdog) Stalled(n int64) bool {
	now := time.Now()
	if n != w.last {
		w.last, w.since = n, now
		return false
	}
	return now.Sub(w.since) >= w.Timeout
}

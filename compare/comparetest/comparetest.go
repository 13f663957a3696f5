// Package comparetest is the integration-test suite every adapter of an external server (compare/activemq,
// compare/rabbitmq) runs against a real server: the paper's §5 producer and consumer tests at a small
// size, a server killed under a consumer and under a producer (the adapter must fail with an error naming
// the server's log, not hang), and an optional measurement at a size set by KAFKAREPRO_MEASURE_MESSAGES.
//
// Each adapter package keeps its own test functions, so `go test -run TestIntegration_ActiveMQ_KilledMidConsume`
// still selects one case, and calls the suite's method of the same name:
//
//	var suite = comparetest.Suite[*System]{Service: "activemq", Title: "ActiveMQ", Kind: "broker", New: New,
//		SetIdleTimeout: func(s *System, d time.Duration) { s.IdleTimeout = d }}
//
//	func TestIntegration_ActiveMQ_KilledMidConsume(t *testing.T) { suite.KilledMidConsume(t) }
package comparetest

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// Server is a started server as the suite sees it.
type Server struct {
	Endpoint compare.Endpoint // its LogPath is the log a failure must name
	Kill     func() error     // SIGKILL, as a crash would
	Startup  time.Duration    // how long starting it took (logged by Throughput)
}

// Suite describes one adapter to the suite.
type Suite[S compare.System] struct {
	Service string // the service localsvc starts: "activemq", "rabbitmq"
	Title   string // the system in logs: "ActiveMQ"
	Kind    string // what its server is called in messages: "broker", "node"
	// New connects the adapter to a started server.
	New func(compare.Endpoint) (S, error)
	// SetIdleTimeout shortens the adapter's no-progress timeout for the killed-server cases.
	SetIdleTimeout func(S, time.Duration)
	// Start starts a fresh server for one test and stops it at the test's end; nil means a real one
	// through localsvc.StartT (skipped under -short).
	Start func(testing.TB) Server
}

// start starts a server and connects the adapter to it, closing the adapter at the test's end.
func (s Suite[S]) start(t testing.TB) (Server, S) {
	t.Helper()
	var srv Server
	if s.Start != nil {
		srv = s.Start(t)
	} else {
		ls := localsvc.StartT(t, s.Service)
		srv = Server{Endpoint: ls.Endpoint(), Kill: ls.Kill, Startup: ls.Startup}
	}
	sys, err := s.New(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sys.Close() })
	return srv, sys
}

// produce runs one producer test of n messages of size bytes and checks that every one was counted.
func produce(t testing.TB, sys compare.System, topic string, n, size int) compare.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var sent atomic.Int64
	r, err := sys.Produce(ctx, compare.ProduceSpec{Topic: topic, Messages: n, MessageSize: size, Batch: 1, Sent: &sent})
	if err != nil {
		t.Fatal(err)
	}
	if r.Messages != int64(n) || sent.Load() != int64(n) || r.Bytes != int64(n*size) {
		t.Fatalf("produced %+v, Sent %d; want %d messages", r, sent.Load(), n)
	}
	return r
}

// ProduceConsume produces 20000 messages of 200 bytes, checks the store holds at least the payload,
// consumes them all and checks that Settings names what a fair comparison needs.
func (s Suite[S]) ProduceConsume(t testing.TB) {
	_, sys := s.start(t)
	const n, size = 20000, 200
	pr := produce(t, sys, "pc", n, size)
	disk, err := sys.DiskBytes()
	if err != nil {
		t.Fatal(err)
	}
	if disk < int64(n*size) {
		t.Fatalf("DiskBytes = %d after %d messages of %d bytes, want at least the payload", disk, n, size)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var received atomic.Int64
	cr, err := sys.Consume(ctx, compare.ConsumeSpec{Topic: "pc", Messages: n, MessageSize: size, PrefetchMessages: 1000, Received: &received})
	if err != nil {
		t.Fatal(err)
	}
	if cr.Messages != n || received.Load() != n || cr.Bytes != n*size {
		t.Fatalf("consumed %+v, Received %d; want %d messages", cr, received.Load(), n)
	}
	t.Logf("produce %.0f msg/s, consume %.0f msg/s, disk %d bytes (%.1f per message)",
		float64(n)/pr.Elapsed.Seconds(), float64(n)/cr.Elapsed.Seconds(), disk, float64(disk)/n)
	for _, k := range []string{"persistence", "flush", "ack", "prefetch", "protocol", "client", "server_version"} {
		if sys.Settings()[k] == "" {
			t.Errorf("Settings()[%q] is empty", k)
		}
	}
}

// killMidway runs test (a Produce or Consume that counts into progress) in a goroutine, kills the server
// once progress reaches at, and checks that test then fails within a minute; it returns that error.
func (s Suite[S]) killMidway(t testing.TB, srv Server, what string, progress *atomic.Int64, at int64, test func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- test() }()
	for progress.Load() < at {
		select {
		case err := <-done:
			t.Fatalf("%s returned early: %v", what, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("%s succeeded although the %s was killed", what, s.Kind)
		}
		return err
	case <-time.After(time.Minute):
		t.Fatalf("%s still running a minute after the %s was killed", what, s.Kind)
	}
	return nil
}

// KilledMidConsume: a server that dies under a consumer makes Consume return an error naming the
// server's log, not hang.
func (s Suite[S]) KilledMidConsume(t testing.TB) {
	srv, sys := s.start(t)
	const n, size = 20000, 200
	produce(t, sys, "kill", n, size)
	s.SetIdleTimeout(sys, 20*time.Second)

	var received atomic.Int64
	err := s.killMidway(t, srv, "Consume", &received, 100, func() error {
		_, err := sys.Consume(context.Background(), compare.ConsumeSpec{Topic: "kill", Messages: n + 1, MessageSize: size, Received: &received})
		return err
	})
	if log := srv.Endpoint.LogPath; !strings.Contains(err.Error(), log) {
		t.Errorf("error %q does not name the %s log %s", err, s.Kind, log)
	}
	t.Logf("after %d messages: %v", received.Load(), err)
}

// KilledMidProduce: a server that dies under a producer makes Produce return an error, not hang.
func (s Suite[S]) KilledMidProduce(t testing.TB) {
	srv, sys := s.start(t)
	s.SetIdleTimeout(sys, 20*time.Second)
	var sent atomic.Int64
	err := s.killMidway(t, srv, "Produce", &sent, 1000, func() error {
		_, err := sys.Produce(context.Background(), compare.ProduceSpec{Topic: "kill", Messages: 10_000_000, MessageSize: 200, Batch: 1, Sent: &sent})
		return err
	})
	t.Logf("after %d sent: %v", sent.Load(), err)
}

// Throughput measures the paper's producer and consumer tests at a size given by
// KAFKAREPRO_MEASURE_MESSAGES (skipped when unset); the harness in package experiments does the real runs.
func (s Suite[S]) Throughput(t testing.TB) {
	n, _ := strconv.Atoi(os.Getenv("KAFKAREPRO_MEASURE_MESSAGES"))
	if n <= 0 {
		t.Skip("set KAFKAREPRO_MEASURE_MESSAGES to measure")
	}
	srv, sys := s.start(t)
	const size = 200
	pr := produce(t, sys, "measure", n, size)
	disk, err := sys.DiskBytes()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	cr, err := sys.Consume(ctx, compare.ConsumeSpec{Topic: "measure", Messages: n, MessageSize: size, PrefetchMessages: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s %s: start-up %v; produce %d x %d B: %.0f msg/s (%v); consume: %.0f msg/s (%v); disk %d bytes = %.1f per message (%.1f over the payload)",
		s.Title, srv.Endpoint.Version, srv.Startup.Round(time.Millisecond), n, size, float64(n)/pr.Elapsed.Seconds(), pr.Elapsed.Round(time.Millisecond),
		float64(n)/cr.Elapsed.Seconds(), cr.Elapsed.Round(time.Millisecond), disk, float64(disk)/float64(n), float64(disk)/float64(n)-size)
}

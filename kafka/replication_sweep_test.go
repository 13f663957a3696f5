package kafka_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// TestIntegration_ReplicationFetchSweep measures what fewer, larger follower fetches buy an acks=-1
// producer (paper §6's synchronous model): for each replica.fetch.min.bytes × replica.fetch.wait.max.ms it
// starts three in-process brokers, sends REPL_SWEEP_MESSAGES messages of 200 bytes in batches of 50 to
// replication factor 1 (the baseline, acks 0, of the same cluster) and then to replication factor 3 with
// acks=-1 and each max.in.flight.requests.per.connection, and prints msg/s, the ratio to the baseline and
// the p50/p99 latency of one acknowledged batch (from its send until the call that read its answer
// returned, as figure 6 measures it). It checks nothing about speed (CPU is shared here). The grids are
// REPL_SWEEP_MIN_BYTES, REPL_SWEEP_WAIT_MS and REPL_SWEEP_IN_FLIGHT (comma-separated).
func TestIntegration_ReplicationFetchSweep(t *testing.T) {
	n := envInts(t, "REPL_SWEEP_MESSAGES", nil)
	if len(n) == 0 || n[0] <= 0 {
		t.Skip("set REPL_SWEEP_MESSAGES=N to measure")
	}
	minBytes := envInts(t, "REPL_SWEEP_MIN_BYTES", []int{1, 16 << 10, 64 << 10, 256 << 10})
	waits := envInts(t, "REPL_SWEEP_WAIT_MS", []int{1, 5})
	inFlight := envInts(t, "REPL_SWEEP_IN_FLIGHT", []int{5, 10})
	var table []string
	for _, mb := range minBytes {
		for _, w := range waits {
			t.Run(fmt.Sprintf("min=%d,wait=%dms", mb, w), func(t *testing.T) {
				rc := startReplCluster(t, 3, map[string]string{
					"replica.fetch.min.bytes": strconv.Itoa(mb), "replica.fetch.wait.max.ms": strconv.Itoa(w)})
				rc.create("rf1", replication.Assignment{{0}})
				rc.create("rf3", replication.Assignment{{0, 1, 2}})
				rc.waitISR("rf3", 0, 0, 1, 2)
				sweepSend(t, rc, "rf3", -1, 1, 50) // warm-up: every follower has fetched once
				sweepSend(t, rc, "rf1", -1, 1, 50)
				base := sweepSend(t, rc, "rf1", 0, 1, n[0])
				table = append(table, fmt.Sprintf("| %d | %d | rf1 acks=0 | %.0f | 1.00 | – | – |", mb, w, base.rate))
				for _, f := range inFlight {
					r := sweepSend(t, rc, "rf3", -1, f, n[0])
					table = append(table, fmt.Sprintf("| %d | %d | rf3 acks=-1, %d in flight | %.0f | %.2f | %.2f | %.2f |",
						mb, w, f, r.rate, r.rate/base.rate, r.p50, r.p99))
				}
			})
		}
	}
	t.Logf("%d messages of 200 bytes, batches of 50, three in-process brokers\n"+
		"| replica.fetch.min.bytes | replica.fetch.wait.max.ms | mode | msg/s | × rf1 | p50 ms | p99 ms |\n|---|---|---|---|---|---|---|\n%s",
		n[0], strings.Join(table, "\n"))
}

type sweepResult struct{ rate, p50, p99 float64 }

// sweepSend sends n messages in batches of 50 with a sync producer and measures them as figure 6 does.
func sweepSend(t *testing.T, rc *replCluster, topic string, acks int16, inFlight, n int) sweepResult {
	t.Helper()
	cfg := producer.DefaultConfig()
	cfg.MetadataBrokerList = rc.brokers.BrokerList()
	cfg.RequiredAcks, cfg.MaxInFlight = acks, inFlight
	cfg.RequestTimeout = 30 * time.Second
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	payload := make([]byte, 200)
	batch := make([][]byte, 50)
	for i := range batch {
		batch[i] = payload
	}
	hist := hdrhistogram.New(1, 120_000_000, 3)                // µs
	l := rc.brokers[0].Replication().Partition(topic, 0).Log() // broker 0 leads both topics
	end := l.LogEndOffset() + int64(n)*(200+10)
	started := make([]time.Time, 0, inFlight)
	start := time.Now()
	for sent := 0; sent < n; sent += len(batch) {
		started = append(started, time.Now())
		if err := p.Send(topic, 0, batch...); err != nil {
			t.Fatalf("%s acks %d after %d: %v", topic, acks, sent, err)
		}
		if len(started) == max(inFlight, 1) || acks == 0 {
			_ = hist.RecordValue(max(time.Since(started[0]).Microseconds(), 1))
			started = append(started[:0], started[1:]...)
		}
	}
	if err := p.Flush(); err != nil {
		t.Fatalf("%s acks %d: %v", topic, acks, err)
	}
	for _, t0 := range started {
		_ = hist.RecordValue(max(time.Since(t0).Microseconds(), 1))
	}
	if acks == 0 { // wait until the leader has them all, as the others did
		rc.waitFor("the leader to have every message", func() bool { return l.LogEndOffset() >= end })
	}
	el := time.Since(start)
	ms := func(q float64) float64 { return float64(hist.ValueAtQuantile(q)) / 1000 }
	return sweepResult{rate: float64(n) / el.Seconds(), p50: ms(50), p99: ms(99)}
}

// envInts reads a comma-separated list of integers from the environment, def when unset.
func envInts(t *testing.T, name string, def []int) []int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("%s=%q: %v", name, s, err)
		}
		out = append(out, v)
	}
	return out
}

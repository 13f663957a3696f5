package kafka_test

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// TestIntegration_ReplicationCost is a quick look at the price of replication (paper §6's two models) on
// three in-process brokers: one sync producer sending batches of 50 messages of 200 bytes to replication
// factor 1, then to replication factor 3 with acks 0, 1 and -1 (acks 1 and -1 with one produce in flight, as
// the §5 producer, with five, Kafka's later default of max.in.flight.requests.per.connection, and with 16).
// It prints msg/s and the ratio to
// replication factor 1 and checks nothing about
// speed (CPU is shared here); set REPL_COST_MESSAGES to run it (the figure-6 experiment is the real one).
func TestIntegration_ReplicationCost(t *testing.T) {
	n := 0
	if s := os.Getenv("REPL_COST_MESSAGES"); s != "" {
		for _, c := range s {
			n = n*10 + int(c-'0')
		}
	}
	if n <= 0 {
		t.Skip("set REPL_COST_MESSAGES=N to measure")
	}
	rc := startReplCluster(t, 3, map[string]string{"replica.fetch.wait.max.ms": "500"})
	rc.create("rf1", replication.Assignment{{0}})
	rc.create("rf3", replication.Assignment{{0, 1, 2}})
	payload := make([]byte, 200)
	batch := make([][]byte, 50)
	for i := range batch {
		batch[i] = payload
	}
	var base float64
	for _, c := range []struct {
		topic    string
		acks     int16
		inFlight int
	}{{"rf1", 0, 1}, {"rf3", 0, 1}, {"rf3", 1, 1}, {"rf3", -1, 1}, {"rf3", 1, 5}, {"rf3", -1, 5}, {"rf3", 1, 16}, {"rf3", -1, 16}} {
		cfg := producer.DefaultConfig()
		cfg.MetadataBrokerList = rc.brokers.BrokerList()
		cfg.RequiredAcks = c.acks
		cfg.MaxInFlight = c.inFlight
		p, err := producer.NewSync(cfg)
		if err != nil {
			t.Fatal(err)
		}
		cpu0 := processCPU()
		start := time.Now()
		for sent := 0; sent < n; sent += len(batch) {
			if err := p.Send(c.topic, 0, batch...); err != nil {
				t.Fatalf("%s acks %d after %d: %v", c.topic, c.acks, sent, err)
			}
		}
		if err := p.Flush(); err != nil { // the answers still in flight
			t.Fatalf("%s acks %d: %v", c.topic, c.acks, err)
		}
		if c.acks == protocol.AcksNone { // wait until the leader has them all, as the others did
			l := rc.brokers[0].Replication().Partition(c.topic, 0).Log()
			rc.waitFor("the leader to have every message", func() bool { return l.LogEndOffset() >= int64(n)*(200+10) })
		}
		el := time.Since(start)
		cpu := processCPU() - cpu0
		p.Close()
		rate := float64(n) / el.Seconds()
		if base == 0 {
			base = rate
		}
		t.Logf("%s acks=%2d in flight %d: %d messages in %v: %.0f msg/s (%.2f× rf1); CPU %.2f µs/msg (producer and brokers), %.2f cores busy",
			c.topic, c.acks, c.inFlight, n, el.Round(time.Millisecond), rate, rate/base,
			float64(cpu.Microseconds())/float64(n), cpu.Seconds()/el.Seconds())
	}
}

// processCPU is the user and system CPU time this process (producer and brokers) has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package consumer

import (
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// TestIntegration_GroupThroughput measures, for the report, how fast one group drains a topic of 8 partitions
// on 2 brokers (200-byte messages, the paper's §5 size) with a single member and with three members, all in
// this process. The count comes from the streams (every message handed to the application); times include
// the start and the rebalances. GROUP_PERF_MESSAGES sets the number of messages (default 500000);
// GROUP_PERF_WORK_NS makes the application spend that long on each message (default 0), which is where more
// members help on one machine: the pull itself is cheap.
//
//	go test ./kafka/consumer -run TestIntegration_GroupThroughput -v
func TestIntegration_GroupThroughput(t *testing.T) {
	n := 500000
	if v, err := strconv.Atoi(os.Getenv("GROUP_PERF_MESSAGES")); err == nil && v > 0 {
		n = v
	}
	var work time.Duration
	if v, err := strconv.Atoi(os.Getenv("GROUP_PERF_WORK_NS")); err == nil && v > 0 {
		work = time.Duration(v)
	}
	zkc := zktest.Start(t)
	b0, b1 := startBroker(t, zkc, 0), startBroker(t, zkc, 1)
	p := newProducer(t, b0, b1)
	payload := make([]byte, 200)
	batch := make([][]byte, 200)
	for i := range batch {
		batch[i] = payload
	}
	for i := 0; i < n/len(batch); i++ {
		b := []*testBroker{b0, b1}[i%2]
		if err := p.SendTo(b.id, "t", int32(i/2%4), batch...); err != nil {
			t.Fatal(err)
		}
	}
	total := n / len(batch) * len(batch)
	time.Sleep(200 * time.Millisecond) // the last flush (log.default.flush.interval.ms=20)

	run := func(group string, members int) time.Duration {
		var count atomic.Int64
		start := time.Now()
		var gs []*GroupConsumer
		for range members {
			cfg := fastConfig(zkc, group)
			g, err := NewGroupConsumer(cfg)
			if err != nil {
				t.Fatal(err)
			}
			gs = append(gs, g)
			ss, err := g.CreateMessageStreams(map[string]int{"t": 1})
			if err != nil {
				t.Fatal(err)
			}
			s := ss["t"][0]
			go func() {
				for s.Next() {
					if work > 0 { // an application that spends work per message
						for t0 := time.Now(); time.Since(t0) < work; {
						}
					}
					count.Add(1)
				}
			}()
		}
		c := rawZK(t, zkc)
		waitFor(t, time.Minute, group+" to balance", func() bool { return balanced(c, group, "t", 8) })
		balancedAt, countAt := time.Since(start), count.Load()
		// At-least-once: a rebalance may hand a few messages twice, so "done" is reaching the total.
		waitFor(t, 2*time.Minute, group+" to drain the topic", func() bool { return count.Load() >= int64(total) })
		d := time.Since(start)
		for _, g := range gs {
			g.Close()
		}
		t.Logf("FIGURE group of %d member(s): %d messages of 200 B in %v = %.0f msg/s (%.1f MB/s); %d handed out",
			members, total, d.Round(time.Millisecond), float64(total)/d.Seconds(),
			float64(total)*209/d.Seconds()/1e6, count.Load())
		if rest := int64(total) - countAt; rest > 0 {
			t.Logf("FIGURE   balanced after %v with %d read; after that %.0f msg/s", balancedAt.Round(time.Millisecond),
				countAt, float64(rest)/(d-balancedAt).Seconds())
		}
		return d
	}
	one := run("one", 1)
	three := run("three", 3)
	t.Logf("FIGURE three members vs one: %.2fx the throughput (GOMAXPROCS %d, work per message %v)",
		one.Seconds()/three.Seconds(), runtime.GOMAXPROCS(0), work)
}

package consumer

import (
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// TestIntegration_RebalanceTimes measures, for the report, how long a group's partitions go unread when one
// member leaves: from the moment the member is stopped (SIGTERM: a clean Close; SIGKILL: its ZooKeeper session
// must expire, zk.sessiontimeout.ms=2000 here) to the moment the surviving member, a separate process, prints a
// message produced after that moment on one of the partitions the leaver owned. Messages flow all along, one
// every 0.5 ms over the 8 partitions of 2 brokers.
//
//	go test ./kafka/consumer -run TestIntegration_RebalanceTimes -v
func TestIntegration_RebalanceTimes(t *testing.T) {
	zkc := zktest.Start(t)
	b0, b1 := startBroker(t, zkc, 0), startBroker(t, zkc, 1)
	p := newProducer(t, b0, b1)
	produceAll(t, p, "t", "seed", 16, b0, b1)
	c := rawZK(t, zkc)

	var seq atomic.Int64
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			b := []*testBroker{b0, b1}[i%2]
			p.SendTo(b.id, "t", int32(i/2%4), []byte("r-"+strconv.Itoa(i)))
			seq.Store(int64(i))
			time.Sleep(500 * time.Microsecond)
		}
	}()

	survivor := startProc(t, zkc, "gt", "t:1")
	measure := func(kill bool) time.Duration {
		leaver := startProc(t, zkc, "gt", "t:1")
		waitFor(t, 20*time.Second, "two members balanced", func() bool {
			return balanced(c, "gt", "t", 8) && anyOwnedBy(c, "gt", "t", leaver.id)
		})
		time.Sleep(200 * time.Millisecond)
		parts := map[string]bool{}
		for part, s := range owners(c, "gt", "t") {
			if strings.HasPrefix(s, leaver.id+"-") {
				parts[part] = true
			}
		}
		from := seq.Load() + 1
		sig := syscall.SIGTERM
		if kill {
			sig = syscall.SIGKILL
		}
		t0 := time.Now()
		leaver.cmd.Process.Signal(sig)
		var took time.Duration
		waitFor(t, 20*time.Second, "the survivor to read the leaver's partitions", func() bool {
			for _, d := range readOut(t, survivor.out) {
				n, err := strconv.ParseInt(strings.TrimPrefix(d.payload, "r-"), 10, 64)
				if err == nil && n >= from && parts[d.part] {
					took = time.Since(t0)
					return true
				}
			}
			return false
		})
		leaver.cmd.Wait()
		return took
	}
	var clean []string
	for range 3 {
		clean = append(clean, measure(false).Round(time.Millisecond).String())
	}
	t.Logf("FIGURE clean exit → group reading the leaver's partitions again: %s", strings.Join(clean, ", "))
	var killed []string
	for range 2 {
		killed = append(killed, measure(true).Round(time.Millisecond).String())
	}
	t.Logf("FIGURE kill -9 → group reading the leaver's partitions again: %s (zk.sessiontimeout.ms=2000)",
		strings.Join(killed, ", "))
}

package kafka_test

// Regression tests for replication bugs the fault tests (faults_test.go) found, each small and in
// process, next to the fault test that showed it.

import (
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// A follower that comes back rejoins the ISR while a producer keeps writing (found by
// TestIntegration_FaultFollowerDamaged). The leader used to record a follower's fetch only after holding
// it for replica.fetch.wait.max.ms, that is after new bytes had arrived; with an ISR of the leader alone
// the high watermark is the leader's log end, so the follower never looked caught up (its offset was below
// the HW every time), and it stayed out for as long as the producer wrote more often than every 500 ms.
func TestIntegration_FollowerRejoinsTheISRUnderLoad(t *testing.T) {
	rc := startReplCluster(t, 2, map[string]string{"replica.fetch.wait.max.ms": "500"}) // the default
	rc.create("rejoin", replication.Assignment{{1, 0}})
	rc.waitISR("rejoin", 0, 1, 0)
	cl := dialRaw(t, rc.brokers[1].HostPort())
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if res := cl.produce("rejoin", 0, 1, 5*time.Second, "a message every 10 ms"); res.Error != protocol.ErrNone {
				t.Errorf("acks=1 produce: %v", res.Error)
				return
			}
		}
	}()
	defer func() { close(stop); wg.Wait() }()

	if err := rc.brokers[0].Stop(); err != nil {
		t.Fatal(err)
	}
	rc.waitISR("rejoin", 0, 1)
	time.Sleep(500 * time.Millisecond)
	rc.brokers[0].Restart()
	start := time.Now()
	rc.waitISR("rejoin", 0, 1, 0)
	t.Logf("broker 0 back in the ISR %v after its restart, under a producer writing every 10 ms", time.Since(start).Round(time.Millisecond))
}

package kafka_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/internal/faults"
)

// Failover time: after kill -9 of the leader, how long until ZooKeeper names a new leader, until
// an acks=-1 producer is acknowledged again, and until a consumer reads a message sent after the kill, with
// zk.sessiontimeout.ms 2000 and 6000. A killed broker's ephemeral registration stays until its session
// expires, and only then does the controller move its partitions (docs/PROTOCOL.md §10): the session
// timeout is most of the failover. `make test` kills once per setting, `make test-faults` five times;
// docs/ROBUSTNESS.md has the figures.
func TestIntegration_FailoverTime(t *testing.T) {
	if testing.Short() {
		t.Skip("broker processes and ZooKeeper (skipped with -short)")
	}
	rounds := faultScale(1, 5)
	for _, session := range []int{2000, 6000} {
		t.Run("zk.sessiontimeout.ms="+strconv.Itoa(session), func(t *testing.T) {
			const topic = "failover"
			c, run, _, fos := killLeaders(t, topic, rounds, map[string]string{"zk.sessiontimeout.ms": strconv.Itoa(session)})
			run.Stop()
			t.Logf("faults: zk.sessiontimeout.ms=%d: %s", session, faults.Summary(fos))
			limit := time.Duration(session)*time.Millisecond + 10*time.Second
			for _, f := range fos {
				if f.Elected > limit || f.ProducerAgain > limit || f.ConsumerAgain > limit {
					t.Errorf("%s: longer than the session timeout plus 10 s (%v)", f, limit)
				}
			}
			if res := faults.Check(faults.ReadBack(t, c, topic, 2, 2*time.Second), nil, run); res.Lost > 0 || !res.OK() {
				t.Errorf("acks=-1 across the failovers: %s", res)
			}
		})
	}
}

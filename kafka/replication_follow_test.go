package kafka_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// Issue 10: a simple consumer follows a leader change "without losing or skipping an offset". A
// PartitionIterator with FollowLeaders reads a replicated partition from its leader while an acks=-1
// producer writes; the leader stops in the middle of the read; the iterator finds the new leader and goes
// on from the offset it had (the same byte offset on every replica, docs/PROTOCOL.md §10). Every offset is
// read exactly once, in order (each message starts where the one before ended), and every acknowledged
// message is read.
func TestIntegration_IteratorFollowsTheLeader(t *testing.T) {
	rc := startReplCluster(t, 3, nil)
	rc.create("follow", replication.Assignment{{0, 1, 2}})
	old := rc.leaderBroker("follow", 0)
	var addrs []string
	for _, b := range rc.brokers {
		addrs = append(addrs, b.HostPort())
	}
	cfg := producer.DefaultConfig()
	cfg.MetadataBrokerList = rc.brokers.BrokerList()
	cfg.RequiredAcks, cfg.MessageSendMaxRetries, cfg.RetryBackoff = protocol.AcksAll, 30, 200*time.Millisecond
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const total = 3000
	var mu sync.Mutex
	acked := map[string]bool{}
	send := func(from, to int) {
		for i := from; i < to; i += 10 {
			var msgs [][]byte
			for j := i; j < min(i+10, to); j++ {
				msgs = append(msgs, []byte(fmt.Sprintf("message %05d", j)))
			}
			if err := p.Send("follow", 0, msgs...); err != nil {
				t.Errorf("send %d..%d: %v", i, i+len(msgs)-1, err)
				continue
			}
			mu.Lock()
			for _, m := range msgs {
				acked[string(m)] = true
			}
			mu.Unlock()
		}
	}
	send(0, total/2)
	done := make(chan struct{})
	go func() { defer close(done); send(total/2, total) }()

	sc := consumer.NewSimpleConsumer(old.HostPort(), 5*time.Second)
	defer sc.Close()
	it := consumer.NewPartitionIterator(sc, "follow", 0, 0, 4096).FollowLeaders(addrs, 5*time.Second)
	defer it.Close()
	it.MaxBackoff = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	seen := map[string]int{}
	next, read, skipped := int64(0), 0, 0
	stopped := false
	for len(seen) < total && it.Next(ctx) {
		if it.Offset() != next {
			skipped++
			t.Errorf("message at offset %d; the one before ended at %d", it.Offset(), next)
		}
		next = it.NextOffset()
		seen[string(it.Payload())]++
		read++
		if read == total/4 && !stopped {
			stopped = true
			if err := old.Stop(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := it.Err(); err != nil {
		t.Fatalf("after %d messages (offset %d): %v", read, next, err)
	}
	<-done
	moves, why := it.LeaderMoves()
	dup, lost := 0, 0
	for _, n := range seen {
		dup += n - 1
	}
	mu.Lock()
	for m := range acked {
		if seen[m] == 0 {
			lost++
		}
	}
	mu.Unlock()
	t.Logf("leader %d stopped after %d messages read; the iterator moved %d times (last because: %v); acknowledged %d, read back %d (%d distinct), lost %d, duplicated %d, offsets skipped %d",
		old.ID, total/4, moves, why, len(acked), read, len(seen), lost, dup, skipped)
	if moves == 0 {
		t.Error("the iterator never moved to another broker")
	}
	if lost > 0 {
		t.Errorf("%d acknowledged messages not read", lost)
	}
}

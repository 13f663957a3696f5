package broker_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// waitEnd waits until topic-0 holds n messages of size payload bytes in
// the log itself (appended, flushed or not), or fails after d.
func waitEnd(t *testing.T, l *log.Log, n, size int, d time.Duration) {
	t.Helper()
	want := int64(n * message.SizeV0(size))
	start := time.Now()
	for l.LogEndOffset() < want {
		if time.Since(start) > d {
			t.Fatalf("log end %d after %v, want %d (%d messages)", l.LogEndOffset(), d, want, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// paced sends n one-message PRODUCEs of 200 bytes to topic-0, each after
// a pause, so that the broker has caught up (its read buffer is empty) at
// most of them: the case coalescing is for.
func paced(cl *client, topic string, n int) {
	set := messageSet(0, 1, 200)
	for range n {
		cl.produce(topic, 0, set)
		time.Sleep(20 * time.Microsecond)
	}
}

// getLog waits for the broker to have created topic-0.
func getLog(t *testing.T, tb *brokertest.Broker, topic string) *log.Log {
	t.Helper()
	for start := time.Now(); ; time.Sleep(time.Millisecond) {
		if l, ok := tb.Logs().Get(topic, 0); ok {
			return l
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("no log %s-0 after 10 s", topic)
		}
	}
}

// coalescing sends one-message PRODUCEs of 200 bytes to topic-0 back to
// back, one write(2) each, 2,000 at a time, until the broker has slept with
// a mark: the rule turns coalescing on only for a connection whose
// requests come fast enough over a window (package coalesce), which a
// producer flat out does on any machine and a paced one may not. It
// returns how many it sent.
func coalescing(t *testing.T, tb *brokertest.Broker, cl *client, topic string) int {
	t.Helper()
	set := messageSet(0, 1, 200)
	sent := 0
	for start := time.Now(); ; {
		for range 2000 {
			cl.produce(topic, 0, set)
		}
		sent += 2000
		if sleeps, _ := tb.CoalesceStats(); sleeps > 0 {
			return sent
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("%d requests back to back in %v and no sleep with a mark: coalescing never turned on", sent, time.Since(start))
		}
	}
}

// A batch-1 producer that sends faster than the broker needs to be woken
// turns coalescing on; when it stops, bytes short of the mark are read once
// the ticker has lowered it (produce.coalesce.max.us), and nothing is lost.
// Max is 200 ms here. Once the broker has read the flood, the connection
// sleeps with its mark; one request more, shorter than any mark (4,096
// bytes at least), is what only the ticker can let in. Should the request
// come before the broker fell asleep, it is read at once, and the test
// tries again.
func TestCoalescedProducerLosesNothing(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "200000"})
	cl := dial(t, tb.Addr())
	one := messageSet(0, 1, 200)
	n := 0
	for try := 1; ; try++ {
		n += coalescing(t, tb, cl, "flood")
		l := getLog(t, tb, "flood")
		waitEnd(t, l, n, 200, 10*time.Second)
		cl.produce("flood", 0, one)
		n++
		waitEnd(t, l, n, 200, 10*time.Second)
		sleeps, woken := tb.CoalesceStats()
		if woken > 0 {
			t.Logf("%d requests: %d sleeps with a mark, %d ended by the ticker", n, sleeps, woken)
			return
		}
		if try == 5 {
			t.Fatalf("%d requests in 5 floods: %d sleeps with a mark, none ended by the ticker", n, sleeps)
		}
	}
}

// A request that is answered, on a connection that was coalescing, is
// served, and the connection is never coalesced again.
func TestAnsweredRequestEndsCoalescing(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "200000"})
	cl := dial(t, tb.Addr())
	n := coalescing(t, tb, cl, "mixed")
	cl.sync() // OFFSETS: answered
	before, _ := tb.CoalesceStats()
	set := messageSet(0, 1, 200)
	for range 4000 {
		cl.produce("mixed", 0, set)
	}
	waitEnd(t, getLog(t, tb, "mixed"), n+4000, 200, 10*time.Second)
	if after, _ := tb.CoalesceStats(); after != before {
		t.Fatalf("%d more sleeps with a mark after an answered request, want none", after-before)
	}
}

// produce.coalesce.max.us=0 turns it off.
func TestCoalesceOff(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "0"})
	cl := dial(t, tb.Addr())
	paced(cl, "off", 2000)
	cl.sync()
	if sleeps, _ := tb.CoalesceStats(); sleeps != 0 {
		t.Fatalf("%d sleeps with a mark, want none", sleeps)
	}
}

// Whatever the pattern of bursts and pauses, every request is read soon
// after it arrived: after each burst the log holds it within a second
// (produce.coalesce.max.us is 50 ms here), so no burst is left waiting for
// bytes that do not come.
func TestCoalescedBurstsAreReadAfterEachPause(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "50000"})
	cl := dial(t, tb.Addr())
	sent := coalescing(t, tb, cl, "bursts")
	l := getLog(t, tb, "bursts")
	one := protocol.ProduceRequest{Topic: "bursts", Partition: 0, Messages: messageSet(0, 1, 200)}.AppendTo(nil)
	rng := rand.New(rand.NewPCG(1, 2))
	var burst []byte
	for round := range 200 {
		k := 1 + rng.IntN(40)
		burst = burst[:0]
		for range k {
			burst = append(burst, one...)
		}
		cl.write(burst)
		sent += k
		waitEnd(t, l, sent, 200, time.Second)
		if round%3 == 0 {
			time.Sleep(time.Duration(rng.IntN(3000)) * time.Microsecond)
		}
	}
	sleeps, woken := tb.CoalesceStats()
	t.Logf("%d requests: %d sleeps with a mark, %d ended by the ticker", sent, sleeps, woken)
}

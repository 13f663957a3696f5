package broker_test

import (
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// A connection whose requests get no answer acknowledges what it has read
// before it waits for more once it has read ackNowBytes (536) since it last
// waited: a segment of several requests, as a producer with Nagle's
// algorithm on sends them, whose next segment waits for that
// acknowledgement. After one small request it does not call for it: Linux
// acknowledges a segment shorter than the largest it has seen on the read
// itself. Coalescing is off, so that only the acknowledgement is at work.
func TestAckBeforeWaitingAfterSeveralRequests(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "0"})
	cl := dial(t, tb.Addr())
	// One request: size 4 + type 2 + topic 2 + 4 ("acks") + partition 4 +
	// set size 4 + one magic-0 message 9 + 200 = 229 bytes.
	set := messageSet(0, 1, 200)
	cl.produce("acks", 0, set)
	cl.produce("acks", 0, set) // appended only after the broker has waited after the first
	l := getLog(t, tb, "acks")
	waitEnd(t, l, 2, 200, 10*time.Second)
	if n := tb.EarlyAcks(); n != 0 {
		t.Fatalf("%d early acknowledgements after one 229-byte request, want none", n)
	}

	// Ten requests in one write: 2,290 bytes read before the next wait.
	var batch []byte
	for range 10 {
		batch = protocol.ProduceRequest{Topic: "acks", Partition: 0, Messages: set}.AppendTo(batch)
	}
	if len(batch) != 2290 {
		t.Fatalf("ten requests are %d bytes, want 2,290", len(batch))
	}
	cl.write(batch)
	waitEnd(t, l, 12, 200, 10*time.Second)
	for start := time.Now(); tb.EarlyAcks() == 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			t.Fatal("no early acknowledgement 10 s after 2,290 bytes of unanswered requests")
		}
	}
}

// A connection about to sleep with a mark (package coalesce) does not ask
// for the acknowledgement first: the bound ends that sleep anyway, and the
// acknowledgement would only release the sender's next segment short of the
// mark. A flood keeps coalescing on (the bound is 200 ms here); over its
// sleeps with a mark, the early acknowledgements (those before the waits
// with no mark the rule may still make) stay at one and a tenth of the
// sleeps or fewer; asking before every wait after ackNowBytes, as the
// broker did before, asks before a third of them or more here.
func TestNoAckBeforeSleepingWithAMark(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "200000"})
	cl := dial(t, tb.Addr())
	n := coalescing(t, tb, cl, "marks")
	sleeps0, _ := tb.CoalesceStats()
	acks0 := tb.EarlyAcks()
	set := messageSet(0, 1, 200)
	for range 50000 {
		cl.produce("marks", 0, set)
	}
	waitEnd(t, getLog(t, tb, "marks"), n+50000, 200, 10*time.Second)
	sleeps, _ := tb.CoalesceStats()
	slept, acked := sleeps-sleeps0, tb.EarlyAcks()-acks0
	t.Logf("50,000 requests: %d sleeps with a mark, %d early acknowledgements", slept, acked)
	if slept < 4 {
		t.Fatalf("%d sleeps with a mark in a flood of 50,000 requests, want at least 4", slept)
	}
	if acked > 1+slept/10 {
		t.Fatalf("%d early acknowledgements over %d sleeps with a mark, want at most %d", acked, slept, 1+slept/10)
	}
}

package main

import (
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// The tenths of a run: marks land on the first count reaching each tenth,
// rates use the counts actually done, and the producer's last tenth can be
// moved to when the broker holds every message.
func TestPerfTenths(t *testing.T) {
	t0 := time.Unix(1000, 0)
	tt := newTenths(1000, t0)
	// Batches of 30 overshoot the thresholds 100, 200, ...: the mark is
	// the first batch at or past each.
	for done := int64(30); done <= 1000; done += 30 {
		tt.markAt(done, t0.Add(time.Duration(done)*time.Millisecond))
	}
	if tt.complete() {
		t.Fatalf("990 of 1000 messages completed all ten tenths")
	}
	tt.markAt(1000, t0.Add(1000*time.Millisecond))
	if !tt.complete() {
		t.Fatalf("1000 of 1000 messages did not complete the tenths (next %d)", tt.next)
	}
	if tt.count[0] != 120 || tt.count[4] != 510 || tt.count[9] != 1000 {
		t.Fatalf("marks at counts %v, want 120 ... 510 ... 1000", tt.count)
	}
	for i := 0; i < 10; i++ { // one message per millisecond throughout
		if r := tt.rate(i); math.Abs(r-1000) > 1e-6 {
			t.Errorf("tenth %d: %v msg/s, want 1000", i+1, r)
		}
	}
	if r := tt.ratio(); math.Abs(r-1) > 1e-9 {
		t.Errorf("ratio %v, want 1", r)
	}
	// The broker held the last message 100 ms after the last write: the
	// last tenth (100 messages from 900) took 200 ms instead of 100.
	held := tt.withEnd(t0.Add(1100 * time.Millisecond))
	if r := held.rate(9); math.Abs(r-500) > 1e-6 {
		t.Errorf("held last tenth %v msg/s, want 500", r)
	}
	if r := held.ratio(); math.Abs(r-0.5) > 1e-9 {
		t.Errorf("held ratio %v, want 0.5", r)
	}
	if tt.rate(9) != 1000 {
		t.Errorf("withEnd changed the original")
	}
	var out strings.Builder
	held.print(&out, "held", 200)
	if !strings.Contains(out.String(), "10/10") || !strings.Contains(out.String(), "last tenth / first tenth = 0.500") {
		t.Errorf("print:\n%s", out.String())
	}

	// Fewer than ten messages: several tenths end on the same message.
	small := newTenths(3, t0)
	for i := int64(1); i <= 3; i++ {
		small.observe(i)
	}
	if !small.complete() {
		t.Errorf("3 messages did not complete the tenths")
	}
}

func TestPerfResultLine(t *testing.T) {
	got := resultLine("tool", "x", "messages", int64(7), "seconds", round3(1.23456), "msg_per_s", whole(1234.5),
		"ratio", sig4(0.000123456), "r2", sig4(1.30123))
	if want := "result: tool=x messages=7 seconds=1.235 msg_per_s=1235 ratio=0.0001235 r2=1.301"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// resultFields parses the "result:" line of a perf tool's output.
func resultFields(t *testing.T, out string) map[string]string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "result: "); ok {
			m := map[string]string{}
			for _, f := range strings.Fields(rest) {
				k, v, _ := strings.Cut(f, "=")
				m[k] = v
			}
			return m
		}
	}
	t.Fatalf("no result line in:\n%s", out)
	return nil
}

// producer-perf (batch 50 and batch 1) then consumer-perf against an
// in-process broker: every message is held by the broker, read back with its
// CRC checked, and both report ten tenths. The flush timer is shortened from
// 3 s so that a tail of fewer than log.flush.interval messages, visible only
// at the timer's flush, does not slow the test.
func TestPerfProducerThenConsumer(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.default.flush.interval.ms": "20"}})
	addr := b.HostPort()

	// 2000 = 4 flush intervals of 500: the last append triggers a flush.
	// Batch 50 sends from a locked thread (the default), batch 1 from any.
	for _, run := range []struct{ batch, lock string }{{"50", "true"}, {"1", "false"}} {
		batch := run.batch
		code, out, errOut := runCmd("", "producer-perf", "--broker-list", addr, "--topic", "perf", "--messages", "2000",
			"--message-size", "200", "--batch-size", batch, "--lock-thread="+run.lock)
		if code != 0 {
			t.Fatalf("producer-perf batch %s: exit %d: %s", batch, code, errOut)
		}
		r := resultFields(t, out)
		if r["tool"] != "producer-perf" || r["messages"] != "2000" || r["batch"] != batch || r["lock_thread"] != run.lock {
			t.Errorf("batch %s, --lock-thread=%s: result %v", batch, run.lock, r)
		}
		for _, k := range []string{"seconds", "msg_per_s", "first_tenth", "last_tenth", "send_first_tenth", "send_last_tenth"} {
			if v, err := strconv.ParseFloat(r[k], 64); err != nil || v <= 0 {
				t.Errorf("batch %s: %s=%q, want a positive number", batch, k, r[k])
			}
		}
		for _, k := range []string{"last_over_first", "send_last_over_first", "allocs_per_msg"} {
			if v, err := strconv.ParseFloat(r[k], 64); err != nil || v < 0 {
				t.Errorf("batch %s: %s=%q, want a number >= 0", batch, k, r[k])
			}
		}
		if !strings.Contains(out, "includes the final flush wait") || strings.Count(out, "10/10") != 2 {
			t.Errorf("batch %s: output lacks the two tenth tables:\n%s", batch, out)
		}
	}
	code, out, errOut := runCmd("", "consumer-perf", "--broker", addr, "--topic", "perf", "--messages", "4000",
		"--fetch-size", "307200")
	if code != 0 {
		t.Fatalf("consumer-perf: exit %d: %s", code, errOut)
	}
	r := resultFields(t, out)
	if r["messages"] != "4000" || r["message_size"] != "200" || r["fetch_size"] != "307200" {
		t.Errorf("consumer result %v", r)
	}
	for _, k := range []string{"seconds", "msg_per_s", "first_tenth", "last_tenth"} {
		if v, err := strconv.ParseFloat(r[k], 64); err != nil || v <= 0 {
			t.Errorf("consumer %s=%q, want a positive number", k, r[k])
		}
	}
	if v, err := strconv.ParseFloat(r["last_over_first"], 64); err != nil || v < 0 {
		t.Errorf("consumer last_over_first=%q", r["last_over_first"])
	}
	if !strings.Contains(out, "10/10") {
		t.Errorf("consumer output lacks the tenths:\n%s", out)
	}
	// Asking for more than the log holds fails after the idle timeout,
	// naming how many arrived.
	code, _, errOut = runCmd("", "consumer-perf", "--broker", addr, "--topic", "perf", "--messages", "4001",
		"--idle-timeout", "50ms")
	if code != 1 || !strings.Contains(errOut, "only 4000 of 4001") {
		t.Errorf("short log: exit %d, %q", code, errOut)
	}
}

// consumer-perf counts a keyed message's value, not its key: messages
// written through the Kafka protocol carry a key length and key in front of
// the value (message/keyed.go), and a plain message's payload is counted as
// it stands. 40 keyed messages of a 3-byte key and a 200-byte value, then
// 40 plain ones of 200 bytes: 200 bytes a message either way, where counting
// the keyed payloads whole would give (40×207 + 40×200)/80 = 203.
func TestConsumerPerfCountsValues(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.default.flush.interval.ms": "20"}})
	p := newSyncProducer(t, "0:"+b.HostPort())
	value := make([]byte, 200)
	var keyed, plain []byte
	for range 40 {
		keyed = message.AppendKeyed(keyed, []byte("key"), value)
		plain = message.AppendV1(plain, message.CodecNone, value)
	}
	for _, set := range [][]byte{keyed, plain} {
		if err := p.SendSet("keyed", 0, set); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runCmd("", "consumer-perf", "--broker", b.HostPort(), "--topic", "keyed", "--messages", "80",
		"--idle-timeout", "5s")
	if code != 0 {
		t.Fatalf("consumer-perf: exit %d: %s", code, errOut)
	}
	if r := resultFields(t, out); r["messages"] != "80" || r["message_size"] != "200" {
		t.Errorf("consumer result %v, want 80 messages of 200 payload bytes", r)
	}
}

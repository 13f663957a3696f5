package stream

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/audit"
)

// §4: "each message carries the timestamp ... when they are generated": a stage over audited messages takes
// the event time from the envelope, and the key and the processors see the application's bytes.
func TestEnvelopeEventTime(t *testing.T) {
	f := windowed(t, WindowedConfig{Window: tumbling(t, time.Minute), Aggregation: Count(), Output: "counts"})
	st := Stage{Input: "in", Key: KeyField(',', 0), Envelope: true, Processors: []ProcessorFactory{f}}
	t0 := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	var in [][]byte
	for i, d := range []time.Duration{0, 30 * time.Second, 59 * time.Second, 61 * time.Second, 10 * time.Minute} {
		in = append(in, audit.AppendEnvelope(nil, audit.Envelope{Time: t0.Add(d), Host: "web-1", Seq: uint32(i), Payload: []byte("page-1,ignored")}))
	}
	task, out := run(t, st, in)
	m := t0.UnixMilli()
	want := []string{"F " + itoa(m) + "-" + itoa(m+60000) + " page-1=3", "F " + itoa(m+60000) + "-" + itoa(m+120000) + " page-1=1"}
	if got := results(t, out); !slices.Equal(got, want) {
		t.Errorf("results %v, want %v", got, want)
	}
	if rep := task.Report(); rep.Skips() != 0 {
		t.Errorf("report %v", rep)
	}
	ms, app, err := audit.EnvelopeTime(in[1])
	if err != nil || ms != m+30000 || string(app) != "page-1,ignored" {
		t.Errorf("EnvelopeTime: %d %q %v", ms, app, err)
	}
	if _, err := AuditTime([]byte("plain")); !errors.Is(err, ErrSkip) || !errors.Is(err, ErrSkip) {
		t.Errorf("AuditTime of a plain payload: %v", err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _, _ = audit.EnvelopeTime(in[0]) }); n != 0 {
		t.Errorf("EnvelopeTime allocates %v times", n)
	}
}

// The counting path allocates nothing per message: a pass over 1,500 messages of 1,000 keys (windows
// opening and closing) is allocation-free once the keys have been seen.
func TestCountingPathAllocatesNothing(t *testing.T) {
	set, span := benchSet(1500)
	var base int64
	timeOf := TimeField(',', 1)
	f := windowed(t, WindowedConfig{Window: tumbling(t, 10*time.Millisecond), Aggregation: Count(), Output: "counts"})
	st := Stage{Input: "in", Key: KeyField(',', 0), Time: func(p []byte) (int64, error) {
		ms, err := timeOf(p)
		return ms + base, err
	}, Processors: []ProcessorFactory{f}}
	out := &countingEmitter{}
	task, err := NewTask(st, "0-0", out)
	if err != nil {
		t.Fatal(err)
	}
	pass := func() {
		for it := newSetIterator(set); it.Next(); {
			if err := task.Process(it.Offset(), it.NextOffset(), it.Message().Payload()); err != nil {
				t.Fatal(err)
			}
		}
		base += span
	}
	pass()
	if n := testing.AllocsPerRun(20, pass); n != 0 {
		t.Errorf("%v allocations per pass of 1,500 messages, want 0", n)
	}
	if out.n == 0 {
		t.Error("no window closed: the test measured no publishing")
	}
}

// A hostile key — huge, binary, with newlines — is kept and published as is, at the end of the line.
func TestBinaryKeys(t *testing.T) {
	f := windowed(t, WindowedConfig{Window: tumbling(t, time.Second), Aggregation: Count(), Output: "o"})
	key := "a b\nc\x00\xff" + string(make([]byte, 300))
	st := Stage{Input: "in", Key: func(p []byte) ([]byte, error) { return p[8:], nil },
		Time: func(p []byte) (int64, error) { return int64(p[0]) * 1000, nil }, Processors: []ProcessorFactory{f}}
	_, out := run(t, st, [][]byte{[]byte("\x00xxxxxxx" + key), []byte("\x05xxxxxxxend")})
	if len(out.Out) != 1 {
		t.Fatalf("%d results", len(out.Out))
	}
	r, err := ParseResult(out.Out[0].Value)
	if err != nil || string(r.Key) != key || r.Value != 1 {
		t.Errorf("result %q: %v", out.Out[0].Value, err)
	}
	for _, bad := range []string{"", "X 1 2 3 k", "F 1 2", "F a 2 3 k", "F 2 1 3 k"} {
		if _, err := ParseResult([]byte(bad)); !errors.Is(err, ErrBadResult) {
			t.Errorf("ParseResult(%q): %v", bad, err)
		}
	}
}

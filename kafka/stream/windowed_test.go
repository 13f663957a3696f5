package stream

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// §6: "window-based counting" on event time. Tumbling windows of 10 ms, grace 5 ms, messages out of order: each
// window's count is exact, and a message later than its window's end + grace is counted as late, not
// aggregated.
func TestTumblingOutOfOrderAndLate(t *testing.T) {
	st := csvStage(windowed(t, WindowedConfig{Window: tumbling(t, 10*time.Millisecond), Grace: 5 * time.Millisecond,
		Aggregation: Count(), Output: "counts"}))
	in := []msg{
		{"a", 1, 0}, {"b", 3, 0}, {"a", 12, 0}, // stream time 12: [0,10) still open (closes at 15)
		{"a", 9, 0},  // out of order, in grace: counted in [0,10)
		{"b", 14, 0}, // stream time 14
		{"b", 2, 0},  // in grace still (14 < 15)
		{"a", 15, 0}, // stream time 15: [0,10) closes → a=2, b=2
		{"a", 4, 0},  // late: [0,10) closed
		{"b", 8, 0},  // late
		{"a", 19, 0}, // [10,20) open until 25
		{"b", 11, 0}, // out of order, counted
		{"a", 25, 0}, // [10,20) closes → a=3, b=2
		{"a", 17, 0}, // late
		{"a", 40, 0}, // [20,30) closes → a=1
	}
	task, out := run(t, st, payloads(in))
	want := []string{
		"F 0-10 a=2", "F 0-10 b=2",
		"F 10-20 a=3", "F 10-20 b=2",
		"F 20-30 a=1",
	}
	if got := results(t, out); !slices.Equal(got, want) {
		t.Errorf("results:\n%s\nwant:\n%s", joinLines(got), joinLines(want))
	}
	rep := task.Report()
	if rep.Read != int64(len(in)) || rep.Late != 3 || rep.Skips() != 0 || rep.Emitted != int64(len(want)) {
		t.Errorf("report %v, want read %d, late 3, no skip, emitted %d", rep, len(in), len(want))
	}
	t.Logf("report: %v", rep)
}

// The same, checked against a brute-force count over a large random input: many keys, messages shuffled
// within a bound smaller than the grace period (none late) plus some far behind (all late).
func TestTumblingMatchesBruteForce(t *testing.T) {
	const size, grace = 1000, 300
	rng := rand.New(rand.NewPCG(1, 2))
	var in []msg
	for i := range 20000 {
		in = append(in, msg{key: string(rune('a' + rng.IntN(20))), t: int64(i) * 3})
	}
	// Deliver each message up to 250 ms (of event time) after its time (< grace): out of order, never late.
	at := make(map[int]int64, len(in))
	for i := range in {
		at[i] = in[i].t + rng.Int64N(250)
	}
	idx := make([]int, len(in))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(at[a] - at[b]) })
	shuffled := make([]msg, len(in))
	for i, j := range idx {
		shuffled[i] = in[j]
	}
	in = shuffled
	// Add 500 late ones: far behind stream time.
	late := 0
	var all []msg
	maxT := int64(-1)
	for i, m := range in {
		all = append(all, m)
		maxT = max(maxT, m.t)
		if i%40 == 39 && maxT > 2*size+grace {
			all = append(all, msg{key: "late", t: maxT - size - grace - 1 - int64(rng.IntN(100))})
			late++
		}
	}
	want := map[string]int64{}
	for _, m := range in {
		s := m.t - m.t%size
		want[strings.Join([]string{m.key, itoa(s)}, "@")]++
	}
	st := csvStage(windowed(t, WindowedConfig{Window: tumbling(t, size*time.Millisecond), Grace: grace * time.Millisecond,
		Aggregation: Count(), Output: "counts"}))
	// A last message far ahead closes every window.
	all = append(all, msg{key: "end", t: maxT + 10*size})
	task, out := run(t, st, payloads(all))
	got := map[string]int64{}
	for _, e := range out.Out {
		r, _ := ParseResult(e.Value)
		k := string(r.Key) + "@" + itoa(r.Start)
		if _, dup := got[k]; dup {
			t.Errorf("window %s published twice", k)
		}
		got[k] = r.Value
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("window %s: count %d, want %d", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d windows published, want %d", len(got), len(want))
	}
	if rep := task.Report(); rep.Late != int64(late) {
		t.Errorf("late %d, want %d (%v)", rep.Late, late, rep)
	}
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// Hopping windows of 10 ms every 5 ms: a message is in two windows; one too late for the older window but
// not for the newer is counted in that one and reported as partly late.
func TestHoppingWindows(t *testing.T) {
	w, err := Hopping(10*time.Millisecond, 5*time.Millisecond)
	st := csvStage(windowed(t, WindowedConfig{Window: mustWindow(t, w, err), Aggregation: Count(), Output: "counts"}))
	in := []msg{{"k", 7, 0}, {"k", 12, 0}, {"k", 3, 0}, {"k", 30, 0}}
	// 7 is in [0,10) and [5,15). 12 is in [5,15) and [10,20), and stream time 12 closes [0,10) (no grace):
	// k=1. 3 is in [-5,5) and [0,10), both closed: late. 30 closes [5,15) (k=2) and [10,20) (k=1); the
	// windows between hold nothing and publish nothing.
	task, out := run(t, st, payloads(in))
	want := []string{"F 0-10 k=1", "F 5-15 k=2", "F 10-20 k=1"}
	if got := results(t, out); !slices.Equal(got, want) {
		t.Errorf("results:\n%s\nwant:\n%s", joinLines(got), joinLines(want))
	}
	if rep := task.Report(); rep.Late != 1 || rep.LatePartial != 0 {
		t.Errorf("report %v, want 1 late", rep)
	}
	// A message late for one window only.
	in = []msg{{"k", 12, 0}, {"k", 8, 0}, {"k", 30, 0}}
	task, out = run(t, st, payloads(in))
	// 8 is in [0,10) (closed at stream time 12) and [5,15) (open): partly late.
	want = []string{"F 5-15 k=2", "F 10-20 k=1"}
	if got := results(t, out); !slices.Equal(got, want) {
		t.Errorf("results:\n%s\nwant:\n%s", joinLines(got), joinLines(want))
	}
	if rep := task.Report(); rep.Late != 0 || rep.LatePartial != 1 {
		t.Errorf("report %v, want 1 partly late", rep)
	}
}

// Session windows with a 10 ms gap and 10 ms of grace: messages closer than the gap form one session; a
// message between two sessions merges them; a session closes once stream time is more than gap + grace past
// its last message; a message more than grace behind stream time is late.
func TestSessionWindows(t *testing.T) {
	w, err := Session(10 * time.Millisecond)
	st := csvStage(windowed(t, WindowedConfig{Window: mustWindow(t, w, err), Grace: 10 * time.Millisecond,
		Aggregation: Count(), Output: "sessions"}))
	in := []msg{
		{"a", 0, 0}, {"a", 8, 0}, // session a [0,8]
		{"a", 30, 0},  // a second session [30,30]; stream time 30 > 8+10+5: [0,8] closes
		{"a", 45, 0},  // 45 is 15 after 30: a new session [45,45]
		{"a", 38, 0},  // within 10 of both: merges [30,30] and [45,45] into [30,45], 3 messages
		{"b", 40, 0},  // session b [40,40]
		{"a", 20, 0},  // 20+5 < 45: late
		{"x", 100, 0}, // closes a [30,45] and b
	}
	task, out := run(t, st, payloads(in))
	want := []string{"F 0-9 a=2", "F 30-46 a=3", "F 40-41 b=1"}
	if got := results(t, out); !slices.Equal(got, want) {
		t.Errorf("results:\n%s\nwant:\n%s", joinLines(got), joinLines(want))
	}
	if rep := task.Report(); rep.Late != 1 {
		t.Errorf("report %v, want 1 late", rep)
	}
}

// Sum, Min, Max and a user's Fold over the third field; Updates publishes each change.
func TestAggregations(t *testing.T) {
	in := []msg{{"a", 1, 5}, {"a", 2, -3}, {"a", 3, 10}, {"b", 4, 7}, {"a", 50, 0}}
	sq := Fold("sumsq", 0, ValueField(',', 2), func(acc, v int64) int64 { return acc + v*v }, func(x, y int64) int64 { return x + y })
	for _, tc := range []struct {
		agg  Aggregation
		a, b string
	}{
		{Sum(ValueField(',', 2)), "a=12", "b=7"},
		{Min(ValueField(',', 2)), "a=-3", "b=7"},
		{Max(ValueField(',', 2)), "a=10", "b=7"},
		{sq, "a=134", "b=49"},
		{Count(), "a=3", "b=1"},
	} {
		st := csvStage(windowed(t, WindowedConfig{Window: tumbling(t, 10*time.Millisecond), Aggregation: tc.agg, Output: "out"}))
		_, out := run(t, st, payloads(in))
		want := []string{"F 0-10 " + tc.a, "F 0-10 " + tc.b}
		if got := results(t, out); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tc.agg.Name(), got, want)
		}
	}
	st := csvStage(windowed(t, WindowedConfig{Window: tumbling(t, 10*time.Millisecond), Aggregation: Sum(ValueField(',', 2)),
		Output: "out", Updates: true}))
	_, out := run(t, st, payloads(in[:3]))
	want := []string{"U 0-10 a=5", "U 0-10 a=2", "U 0-10 a=12"}
	if got := results(t, out); !slices.Equal(got, want) {
		t.Errorf("updates %v, want %v", got, want)
	}
}

// Bad input: a message without a key, without a time, with a time that is not a number, not an audit
// envelope, or with a value that is not a number is skipped and counted with its reason; the others are
// all counted.
func TestUnextractableMessagesAreCountedSkips(t *testing.T) {
	st := csvStage(windowed(t, WindowedConfig{Window: tumbling(t, 10*time.Millisecond), Aggregation: Sum(ValueField(',', 2)), Output: "out"}))
	in := [][]byte{
		[]byte("a,1,1"),
		[]byte(",2,1"),                     // empty key
		[]byte("a"),                        // no time
		[]byte("a,noon,1"),                 // time not a number
		[]byte("a,3,x"),                    // value not a number
		[]byte("a,99999999999999999999,1"), // time overflows
		[]byte("a,4611686018427387905,1"),  // out of the ±2^62 range
		{},
		[]byte("a,4,2"),
		[]byte("b,50,0"),
	}
	task, out := run(t, st, in)
	rep := task.Report()
	if rep.Read != int64(len(in)) || rep.SkippedKey != 1 || rep.SkippedTime != 5 || rep.Skipped != 1 {
		t.Errorf("report %v, want read %d, 1 key skip, 5 time skips, 1 other", rep, len(in))
	}
	if len(rep.Reasons) != min(7, MaxReasons) || !strings.Contains(rep.Reasons[0], "offset 100: ") || !strings.Contains(rep.Reasons[0], "key") {
		t.Errorf("reasons %q", rep.Reasons)
	}
	for _, r := range rep.Reasons {
		t.Log(r)
	}
	if got := results(t, out); !slices.Equal(got, []string{"F 0-10 a=3"}) {
		t.Errorf("results %v, want a=3", got)
	}
	if task.Offset() != int64(len(in))*100 {
		t.Errorf("offset %d after %d messages, want %d: skipped messages are consumed too", task.Offset(), len(in), len(in)*100)
	}

	// With Envelope set, a payload that is not an audit envelope has no time.
	est := Stage{Input: "in", Key: KeyField(',', 0), Envelope: true, Processors: st.Processors}
	task, _ = run(t, est, [][]byte{[]byte("a,1,1")})
	if rep := task.Report(); rep.SkippedTime != 1 || !strings.Contains(rep.Reasons[0], "audit") {
		t.Errorf("not an envelope: %v %q", rep, rep.Reasons)
	}
}

// A window of zero or negative length, an advance longer than the window, a negative grace: a clear error
// when the window or the aggregation is made.
func TestBadWindows(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"tumbling 0", func() error { _, err := Tumbling(0); return err }()},
		{"tumbling -1s", func() error { _, err := Tumbling(-time.Second); return err }()},
		{"tumbling 1.5ms", func() error { _, err := Tumbling(1500 * time.Microsecond); return err }()},
		{"hopping 0", func() error { _, err := Hopping(0, time.Second); return err }()},
		{"hopping advance 0", func() error { _, err := Hopping(time.Second, 0); return err }()},
		{"hopping advance > size", func() error { _, err := Hopping(time.Second, 2*time.Second); return err }()},
		{"hopping 1 day every 1 ms", func() error { _, err := Hopping(24*time.Hour, time.Millisecond); return err }()},
		{"session -1ms", func() error { _, err := Session(-time.Millisecond); return err }()},
		{"zero Window", func() error { _, err := Windowed(WindowedConfig{Aggregation: Count(), Output: "x"}); return err }()},
		{"negative grace", func() error {
			_, err := Windowed(WindowedConfig{Window: tumbling(t, time.Second), Grace: -time.Second, Aggregation: Count(), Output: "x"})
			return err
		}()},
	} {
		if !errors.Is(tc.err, ErrBadWindow) {
			t.Errorf("%s: %v, want ErrBadWindow", tc.name, tc.err)
		} else {
			t.Logf("%s: %v", tc.name, tc.err)
		}
	}
	// An aggregation that session windows cannot merge.
	w, _ := Session(time.Second)
	_, err := Windowed(WindowedConfig{Window: w, Aggregation: Fold("f", 0, ValueField(',', 2), func(a, v int64) int64 { return a }, nil), Output: "x"})
	if !errors.Is(err, ErrBadConfig) {
		t.Errorf("fold without merge on sessions: %v", err)
	}
}

// An output topic the broker would refuse is an error before anything is produced, with kafka/topic's rule.
func TestHostileOutputTopic(t *testing.T) {
	for _, name := range []string{"", ".", "..", "../etc", "a/b", "a\x00b", "spaces here", strings.Repeat("x", topic.MaxLength+1), "ünï"} {
		_, err := Windowed(WindowedConfig{Window: tumbling(t, time.Second), Aggregation: Count(), Output: name})
		if !errors.Is(err, ErrBadConfig) || !errors.Is(err, topic.ErrInvalid) {
			t.Errorf("output %q: %v, want ErrBadConfig and topic.ErrInvalid", name, err)
		}
	}
	if _, err := NewTask(Stage{Input: "../in", Key: KeyField(',', 0), Time: TimeField(',', 1),
		Processors: []ProcessorFactory{windowed(t, WindowedConfig{Window: tumbling(t, time.Second), Aggregation: Count(), Output: "ok"})}},
		"0-0", &MemoryEmitter{}); !errors.Is(err, topic.ErrInvalid) {
		t.Errorf("input ../in: %v", err)
	}
	if _, err := NewTask(Stage{Input: "in", Time: TimeField(',', 1)}, "0-0", &MemoryEmitter{}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("no key function: %v", err)
	}
}

// A runner that cannot work is refused before it connects to anything.
func TestRunnerBadConfig(t *testing.T) {
	st := countStage(t)
	for _, tc := range []struct {
		name string
		cfg  RunnerConfig
	}{
		{"no group", RunnerConfig{ZkConnect: "127.0.0.1:1", Stages: []Stage{st}}},
		{"no zk.connect", RunnerConfig{Group: "g", Stages: []Stage{st}}},
		{"no stage", RunnerConfig{Group: "g", ZkConnect: "127.0.0.1:1"}},
		{"two stages on one topic", RunnerConfig{Group: "g", ZkConnect: "127.0.0.1:1", Stages: []Stage{st, st}}},
		{"a stage without key", RunnerConfig{Group: "g", ZkConnect: "127.0.0.1:1", Stages: []Stage{{Input: "in", Time: TimeField(',', 1), Processors: st.Processors}}}},
	} {
		if _, err := NewRunner(tc.cfg); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%s: %v, want ErrBadConfig", tc.name, err)
		}
	}
}

package stream

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// ctrRun feeds a workload's two topics to one join per partition (the events hashed on partKey over parts
// partitions, as the key-hash partitioner places them), interleaving the two inputs at random speeds as two
// independently fetched topics arrive, optionally checkpointing and restoring every join after each step,
// and returns the per-item rates and the summed join counters.
func ctrRun(t *testing.T, w CTRWorkload, parts int, partKey func(CTREvent) string, restore bool) (map[string]Rate, JoinStats) {
	t.Helper()
	imps, clicks, err := w.Generate()
	if err != nil {
		t.Fatal(err)
	}
	counter := NewCTRCounter()
	emit := func(r JoinResult) { counter.Add(string(r.Left), r.Key, r.Matched) }
	joins := make([]*WindowJoin, parts)
	for p := range joins {
		if joins[p], err = NewWindowJoin(time.Duration(w.Window)*time.Millisecond,
			time.Duration(w.Disorder)*time.Millisecond, emit); err != nil {
			t.Fatal(err)
		}
	}
	part := func(e CTREvent) int {
		return producer.DefaultPartitioner{}.Partition([]byte(partKey(e)), parts)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	i, c := 0, 0
	for i < len(imps) || c < len(clicks) {
		for n := rng.IntN(50); n > 0 && i < len(imps); n-- {
			e := imps[i]
			i++
			joins[part(e)].Left([]byte(e.ID), e.Time, []byte(e.Item))
		}
		for n := rng.IntN(30); n > 0 && c < len(clicks); n-- {
			e := clicks[c]
			c++
			joins[part(e)].Right([]byte(e.ID), e.Time, []byte(e.Item))
		}
		if restore {
			for p, j := range joins {
				again, _ := NewWindowJoin(j.Window(), time.Duration(w.Disorder)*time.Millisecond, emit)
				if err := again.LoadState(j.AppendState(nil)); err != nil {
					t.Fatal(err)
				}
				joins[p] = again
			}
		}
	}
	var sum JoinStats
	for _, j := range joins {
		j.Flush()
		s := j.Stats()
		sum.Left += s.Left
		sum.Right += s.Right
		sum.LateLeft += s.LateLeft
		sum.LateRight += s.LateRight
		sum.Matched += s.Matched
		sum.Unmatched += s.Unmatched
		sum.ExtraRight += s.ExtraRight
		sum.OrphanRight += s.OrphanRight
		sum.PendingLeft += s.PendingLeft
		sum.PendingRight += s.PendingRight
	}
	if counter.Dups != 0 {
		t.Errorf("%d impressions decided twice", counter.Dups)
	}
	return counter.Rates(), sum
}

// workloadFacts counts what the generator made beyond the clicks that count: double clicks and late ones.
func workloadFacts(t *testing.T, w CTRWorkload) (doubles, late int64) {
	imps, clicks, _ := w.Generate()
	at := map[string]int64{}
	for _, e := range imps {
		at[e.ID] = e.Time
	}
	seen := map[string]bool{}
	for _, e := range clicks {
		switch d := e.Time - at[e.ID]; {
		case d >= w.Window:
			late++
		case seen[e.ID]:
			doubles++
		default:
			seen[e.ID] = true
		}
	}
	return doubles, late
}

// §1: click-through rates join the clicks with the impressions, the ones not clicked included. For a workload
// whose rate per item is known exactly, with late clicks (which make a non-click), double clicks (one click)
// and both topics out of order, the joined rates equal the known ones exactly (as fractions, and so to every
// digit), whether one task joins everything or six tasks each join one partition of both topics (§6: partitioned
// on the join key at publish time).
func TestWindowJoinClickThroughRatesExact(t *testing.T) {
	w := DefaultCTRWorkload(40)
	want := w.Expected()
	doubles, late := workloadFacts(t, w)
	if doubles == 0 || late == 0 {
		t.Fatalf("workload has %d double and %d late clicks; the test needs both", doubles, late)
	}
	for _, parts := range []int{1, 6} {
		got, st := ctrRun(t, w, parts, func(e CTREvent) string { return e.ID }, false)
		checkRates(t, parts, got, want)
		var imps int64
		for _, r := range want {
			imps += r.Impressions
		}
		if st.Matched+st.Unmatched != imps || st.LateLeft != 0 || st.LateRight != 0 || st.PendingLeft != 0 ||
			st.PendingRight != 0 {
			t.Errorf("%d partitions: stats %+v, want %d impressions decided, none late or pending", parts, st, imps)
		}
		if st.ExtraRight != doubles || st.OrphanRight != late {
			t.Errorf("%d partitions: %d extra and %d orphan clicks, the workload has %d double and %d late",
				parts, st.ExtraRight, st.OrphanRight, doubles, late)
		}
	}
}

func checkRates(t *testing.T, parts int, got, want map[string]Rate) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d partitions: rates for %d items, want %d", parts, len(got), len(want))
	}
	for item, w := range want {
		g := got[item]
		if g != w || g.Rat().Cmp(w.Rat()) != 0 || g.Decimal(20) != w.Decimal(20) {
			t.Errorf("%d partitions: %s: rate %v, want %v", parts, item, g, w)
		}
	}
	t.Logf("%d partitions: %v", parts, got)
}

// The counterpart of §6's rule: clicks partitioned on another key than the impressions' (the item instead of
// the impression id) mostly reach a task that never saw their impression, and the rates come out wrong. The
// test makes sure the exact match above depends on the partitioning and is not a property of any input.
func TestWindowJoinNeedsCopartitionedInputs(t *testing.T) {
	w := DefaultCTRWorkload(10)
	got, _ := ctrRun(t, w, 6, func(e CTREvent) string {
		if e.Kind == Click {
			return e.Item
		}
		return e.ID
	}, false)
	same := 0
	for item, r := range w.Expected() {
		if got[item] == r {
			same++
		}
	}
	if same == len(w.Items) {
		t.Fatalf("rates %v came out right with clicks partitioned by item", got)
	}
}

// A task's join state checkpointed and restored after every batch of input (as a task that dies and restarts
// from its checkpoint does) decides every impression as the uninterrupted join does.
func TestWindowJoinStateRoundTrip(t *testing.T) {
	w := DefaultCTRWorkload(8)
	want, wantStats := ctrRun(t, w, 3, func(e CTREvent) string { return e.ID }, false)
	got, gotStats := ctrRun(t, w, 3, func(e CTREvent) string { return e.ID }, true)
	checkRates(t, 3, got, want)
	if gotStats != wantStats {
		t.Errorf("restored joins' stats %+v, uninterrupted %+v", gotStats, wantStats)
	}

	j, _ := NewWindowJoin(time.Second, 0, nil)
	j.Left([]byte("k"), 5, []byte("v"))
	st := j.AppendState(nil)
	for _, bad := range [][]byte{nil, []byte("XX1"), st[:len(st)-1], append(append([]byte(nil), st...), 0)} {
		if err := j.LoadState(bad); !errors.Is(err, ErrJoinState) {
			t.Errorf("LoadState of %d bytes: %v, want ErrJoinState", len(bad), err)
		}
	}
	other, _ := NewWindowJoin(2*time.Second, 0, nil)
	if err := other.LoadState(st); !errors.Is(err, ErrJoinState) {
		t.Errorf("a 1 s join's state loaded into a 2 s join: %v, want ErrJoinState", err)
	}
}

// Late events: once both sides have passed a time by more than the grace period, an event before it is
// counted as late on its side and changes nothing; a left event is decided exactly when the watermark reaches
// its window's end, and a click at the window's end does not fall in it.
func TestWindowJoinLateAndWindowEdges(t *testing.T) {
	var out []JoinResult
	j, err := NewWindowJoin(10*time.Millisecond, 5*time.Millisecond, func(r JoinResult) { out = append(out, r) })
	if err != nil {
		t.Fatal(err)
	}
	j.Left([]byte("a"), 100, []byte("A"))
	j.Left([]byte("b"), 100, []byte("B"))
	j.Right([]byte("a"), 109, nil) // last ms of a's window
	j.Right([]byte("b"), 110, nil) // b's window has ended: it waits (for a b at 110) until Flush
	if len(out) != 0 {
		t.Fatalf("decided %v before the watermark reached 110", out)
	}
	j.Left([]byte("z"), 115, nil)
	j.Right([]byte("z"), 115, nil) // watermark 110: a and b are due
	if len(out) != 2 || !out[0].Matched || out[0].Key != "a" || out[0].RightTime != 109 || out[1].Matched || out[1].Key != "b" {
		t.Fatalf("decided %+v, want a matched at 109 and b unmatched", out)
	}
	if j.Watermark() != 110 {
		t.Errorf("watermark %d, want 110", j.Watermark())
	}
	if j.Left([]byte("c"), 109, nil) || j.Right([]byte("c"), 105, nil) {
		t.Error("events before the watermark were taken")
	}
	if !j.Left([]byte("d"), 110, nil) {
		t.Error("an event at the watermark was refused")
	}
	s := j.Stats()
	if s.LateLeft != 1 || s.LateRight != 1 || s.Matched != 1 || s.Unmatched != 1 || s.OrphanRight != 0 || s.PendingRight != 1 {
		t.Errorf("stats %+v", s)
	}
	j.Flush()
	if s := j.Stats(); s.PendingLeft != 0 || s.PendingRight != 0 || s.Matched != 2 || s.Unmatched != 2 || s.OrphanRight != 1 {
		t.Errorf("after Flush: %+v, want z matched, d unmatched, b's click an orphan, nothing pending", s)
	}

	for _, bad := range [][2]time.Duration{{0, 0}, {-time.Second, 0}, {time.Second, -1}, {time.Microsecond, 0}} {
		if _, err := NewWindowJoin(bad[0], bad[1], nil); !errors.Is(err, ErrJoinWindow) {
			t.Errorf("window %v grace %v: %v, want ErrJoinWindow", bad[0], bad[1], err)
		}
	}
}

func TestCTREventLines(t *testing.T) {
	e := CTREvent{Kind: Click, ID: "i7", Item: "item-a", Time: 1733050800123}
	got, err := ParseCTREvent([]byte(e.String() + "\n"))
	if err != nil || got != e {
		t.Fatalf("round trip of %q: %+v, %v", e, got, err)
	}
	for _, bad := range []string{"", "imp i1 item", "view i1 x 5", "imp i1 x 5.5", "imp i1 x 5 extra"} {
		if _, err := ParseCTREvent([]byte(bad)); !errors.Is(err, ErrCTREvent) {
			t.Errorf("%q: %v, want ErrCTREvent", bad, err)
		}
	}
	if r := (Rate{Clicked: 1, Impressions: 3}); r.Decimal(6) != "0.333333" || r.String() != "1/3 = 0.333333" {
		t.Errorf("Rate 1/3: %q, %q", r.Decimal(6), r.String())
	}
}

// BenchmarkWindowJoin joins the click-through workload (impressions and clicks alternating in bursts, as two
// fetched topics arrive) on one task: the cost per event of matching, buffering and deciding. Bytes are the
// events' lines.
func BenchmarkWindowJoin(b *testing.B) {
	w := DefaultCTRWorkload(200)
	imps, clicks, err := w.Generate()
	if err != nil {
		b.Fatal(err)
	}
	type ev struct {
		left bool
		key  []byte
		t    int64
		val  []byte
	}
	var evs []ev
	var bytes int64
	for i, c := 0, 0; i < len(imps) || c < len(clicks); {
		for n := 0; n < 20 && i < len(imps); n, i = n+1, i+1 {
			evs = append(evs, ev{true, []byte(imps[i].ID), imps[i].Time, []byte(imps[i].Item)})
			bytes += int64(len(imps[i].String()))
		}
		for n := 0; n < 12 && c < len(clicks); n, c = n+1, c+1 {
			evs = append(evs, ev{false, []byte(clicks[c].ID), clicks[c].Time, []byte(clicks[c].Item)})
			bytes += int64(len(clicks[c].String()))
		}
	}
	b.SetBytes(bytes / int64(len(evs)))
	b.ReportAllocs()
	decided := 0
	j, _ := NewWindowJoin(time.Duration(w.Window)*time.Millisecond, time.Duration(w.Disorder)*time.Millisecond,
		func(JoinResult) { decided++ })
	for i := 0; b.Loop(); i++ {
		if i%len(evs) == 0 && i > 0 {
			j.Flush()
			j, _ = NewWindowJoin(time.Duration(w.Window)*time.Millisecond, time.Duration(w.Disorder)*time.Millisecond,
				func(JoinResult) { decided++ })
		}
		e := evs[i%len(evs)]
		if e.left {
			j.Left(e.key, e.t, e.val)
		} else {
			j.Right(e.key, e.t, e.val)
		}
	}
	b.ReportMetric(float64(len(evs)), "events/workload")
}

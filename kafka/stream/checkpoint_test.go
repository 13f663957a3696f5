package stream

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// workload is n messages of 20 keys with times increasing by 1 ms per message and delivered up to 40 ms out
// of order, a few of them hopelessly late, then one far ahead that closes every window.
func workload(n int) [][]byte {
	rng := rand.New(rand.NewPCG(7, 7))
	var out [][]byte
	for i := range n {
		t := int64(i) - rng.Int64N(40)
		if i%97 == 0 {
			t -= 500 // late beyond the grace period
		}
		out = append(out, msg{key: fmt.Sprintf("k%02d", rng.IntN(20)), t: t}.payload())
	}
	return append(out, msg{key: "end", t: int64(n) + 10000}.payload())
}

func countStage(t testing.TB) Stage {
	return csvStage(windowed(t, WindowedConfig{Window: tumbling(t, 100*time.Millisecond), Grace: 50 * time.Millisecond,
		Aggregation: Count(), Output: "counts"}))
}

// crashRun processes in with a task checkpointed every `every` messages into store, and "kills" the task
// (drops it with whatever it did since its last checkpoint) after each message index in kills; a new task
// then restores the checkpoint and resumes from its offset, as a restarted processor does. Everything
// emitted, by dead tasks too, is in the returned emitter: it was published. The last task checkpoints at
// the end.
func crashRun(t *testing.T, st Stage, in [][]byte, store Store, every int, kills map[int]bool) (*Task, *MemoryEmitter) {
	t.Helper()
	out := &MemoryEmitter{}
	for {
		task, err := NewTask(st, "0-0", out)
		if err != nil {
			t.Fatal(err)
		}
		data, version, err := store.Load("in", "0-0")
		if err != nil {
			t.Fatal(err)
		}
		start := 0
		if version != NoCheckpoint {
			if err := task.Restore(data); err != nil {
				t.Fatal(err)
			}
			start = int(task.Offset() / 100)
		}
		killed := false
		for i := start; i < len(in); i++ {
			if err := task.Process(int64(i)*100, int64(i+1)*100, in[i]); err != nil {
				t.Fatal(err)
			}
			if kills[i] {
				delete(kills, i) // the restarted task gets past it
				killed = true
				break
			}
			if (i+1)%every == 0 || i == len(in)-1 {
				cp, err := task.Checkpoint()
				if err != nil {
					t.Fatal(err)
				}
				if version, err = store.Save("in", "0-0", cp, version); err != nil {
					t.Fatal(err)
				}
			}
		}
		if !killed {
			return task, out
		}
	}
}

// The package doc's guarantees, sentence by sentence, over a task killed 25 times at random points:
// "The checkpointed state is exactly-once: every message of the partition is in the checkpointed state once,
// none twice and none missed" — the final checkpoint is byte for byte the uninterrupted task's, its report
// counts every message once; "The output topic is at-least-once ... windows closed since the last checkpoint
// are published again after a crash. A result published twice is the same line twice" — every result of the
// uninterrupted run is there, the extra ones are exact repeats.
func TestCheckpointExactlyOnceStateAtLeastOnceOutput(t *testing.T) {
	in := workload(20000)
	st := countStage(t)
	ref, refOut := run(t, st, in)
	refCP, err := ref.Checkpoint()
	if err != nil {
		t.Fatal(err)
	}
	refCP = bytes.Clone(refCP)

	rng := rand.New(rand.NewPCG(3, 4))
	kills := map[int]bool{}
	for len(kills) < 25 {
		kills[rng.IntN(len(in))] = true
	}
	store := &MemoryStore{}
	task, out := crashRun(t, st, in, store, 777, kills)
	cp, _ := task.Checkpoint()
	if !bytes.Equal(cp, refCP) {
		t.Errorf("the checkpoint after 25 crashes (%d bytes) differs from the uninterrupted run's (%d bytes)", len(cp), len(refCP))
	}
	rep, refRep := task.Report(), ref.Report()
	if rep.Read != int64(len(in)) || rep.Late != refRep.Late || rep.Emitted != refRep.Emitted {
		t.Errorf("report after crashes %v, uninterrupted %v; want read %d", rep, refRep, len(in))
	}

	// At-least-once: the published results are the reference's, some of them twice, identical.
	want := map[string]int{}
	for _, e := range refOut.Out {
		want[string(e.Value)]++
		if want[string(e.Value)] > 1 {
			t.Fatalf("the uninterrupted run published %q twice", e.Value)
		}
	}
	got := map[string]int{}
	perWindow := map[string]string{} // key@start → the line
	dups := 0
	for _, e := range out.Out {
		got[string(e.Value)]++
		if got[string(e.Value)] > 1 {
			dups++
		}
		r, _ := ParseResult(e.Value)
		w := fmt.Sprintf("%s@%d", r.Key, r.Start)
		if prev, ok := perWindow[w]; ok && prev != string(e.Value) {
			t.Errorf("window %s published as %q and as %q", w, prev, e.Value)
		}
		perWindow[w] = string(e.Value)
	}
	missing := 0
	for line := range want {
		if got[line] == 0 {
			missing++
		}
	}
	extra := 0
	for line := range got {
		if want[line] == 0 {
			extra++
		}
	}
	t.Logf("uninterrupted: %d results; with 25 kills: %d published, %d distinct, %d duplicated, %d missing, %d never in the reference; %d checkpoints written; %v",
		len(refOut.Out), len(out.Out), len(got), dups, missing, extra, store.Writes, rep)
	if missing != 0 || extra != 0 || len(got) != len(want) {
		t.Errorf("%d results missing, %d not in the uninterrupted run", missing, extra)
	}
	if dups == 0 {
		t.Errorf("no result published twice: the kills did not fall between a window's close and the next checkpoint, the test shows nothing")
	}
}

// "A task deposed by a rebalance it has not noticed cannot overwrite a newer checkpoint: its write is
// refused (ErrDeposed)": two tasks restore the same checkpoint; the second to write is refused, and after
// restoring the winner's it can write again.
func TestDeposedTaskCannotOverwrite(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store Store
	}{{"memory", &MemoryStore{}}} {
		t.Run(tc.name, func(t *testing.T) { deposedCase(t, tc.store) })
	}
}

// deposedCase runs the deposed scenario against a store (also used with ZooKeeper).
func deposedCase(t *testing.T, store Store) {
	st := countStage(t)
	in := workload(300)
	a, _ := run(t, st, in[:100])
	cp, _ := a.Checkpoint()
	v0, err := store.Save("in", "0-0", cp, NoCheckpoint)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Save("in", "0-0", cp, NoCheckpoint); !errors.Is(err, ErrDeposed) {
		t.Fatalf("a second first checkpoint: %v, want ErrDeposed", err)
	}
	// Two owners at once: both restore version v0.
	var tasks [2]*Task
	for i := range tasks {
		data, v, err := store.Load("in", "0-0")
		if err != nil || v != v0 {
			t.Fatalf("load: version %d, %v", v, err)
		}
		tasks[i], _ = NewTask(st, "0-0", &MemoryEmitter{})
		if err := tasks[i].Restore(data); err != nil {
			t.Fatal(err)
		}
		feed(t, tasks[i], in[100:200], 100*100)
	}
	cp1, _ := tasks[1].Checkpoint()
	v1, err := store.Save("in", "0-0", cp1, v0)
	if err != nil {
		t.Fatal(err)
	}
	cp0, _ := tasks[0].Checkpoint()
	if _, err := store.Save("in", "0-0", cp0, v0); !errors.Is(err, ErrDeposed) {
		t.Fatalf("the deposed task's write: %v, want ErrDeposed", err)
	}
	data, v, _ := store.Load("in", "0-0")
	if v != v1 || !bytes.Equal(data, cp1) {
		t.Errorf("the checkpoint is at version %d (want %d) and holds the winner's state: %v", v, v1, bytes.Equal(data, cp1))
	}
	t.Logf("versions: first %d, winner %d; the deposed task's write was refused", v0, v1)
}

// A checkpoint larger than one ZooKeeper node holds is ErrStateTooLarge, and nothing is written.
func TestStateTooLarge(t *testing.T) {
	st := countStage(t)
	task, _ := NewTask(st, "0-0", &MemoryEmitter{})
	key := strings.Repeat("k", 1000)
	for i := range 1100 { // 1100 keys of 1000 bytes in one open window: > 1 MB
		if err := task.Process(int64(i)*100, int64(i+1)*100, []byte(fmt.Sprintf("%s%d,5,0", key, i))); err != nil {
			t.Fatal(err)
		}
	}
	_, err := task.Checkpoint()
	if !errors.Is(err, ErrStateTooLarge) {
		t.Fatalf("checkpoint of 1.1 MB of keys: %v, want ErrStateTooLarge", err)
	}
	t.Log(err)
	store := &MemoryStore{}
	if _, err := store.Save("in", "0-0", make([]byte, MaxCheckpoint+1), NoCheckpoint); !errors.Is(err, ErrStateTooLarge) || store.Writes != 0 {
		t.Errorf("store: %v, %d writes", err, store.Writes)
	}
}

// A checkpoint that does not decode is ErrBadCheckpoint and leaves the task at its initial state; a
// truncation anywhere is caught.
func TestBadCheckpoint(t *testing.T) {
	st := countStage(t)
	a, _ := run(t, st, workload(500))
	cp, _ := a.Checkpoint()
	cp = bytes.Clone(cp)
	for _, bad := range [][]byte{nil, []byte("KSC2"), []byte("{}"), append(bytes.Clone(cp), 0)} {
		b, _ := NewTask(st, "0-0", &MemoryEmitter{})
		if err := b.Restore(bad); !errors.Is(err, ErrBadCheckpoint) || b.Offset() != -1 {
			t.Errorf("restore %q: %v, offset %d", clip(bad), err, b.Offset())
		}
	}
	for n := 4; n < len(cp); n++ {
		b, _ := NewTask(st, "0-0", &MemoryEmitter{})
		if err := b.Restore(cp[:n]); err == nil {
			t.Fatalf("a checkpoint cut at %d of %d bytes restored without error", n, len(cp))
		}
	}
	b, _ := NewTask(st, "0-0", &MemoryEmitter{})
	if err := b.Restore(cp); err != nil || b.Offset() != a.Offset() {
		t.Errorf("restore: %v, offset %d want %d", err, b.Offset(), a.Offset())
	}
}

// Hopping and session windows checkpoint and restore too: a run split by a restore publishes what an
// uninterrupted run publishes.
func TestRestoreEveryWindowKind(t *testing.T) {
	hop, _ := Hopping(100*time.Millisecond, 30*time.Millisecond)
	sess, _ := Session(7 * time.Millisecond)
	in := workload(5000)
	for _, w := range []Window{hop, sess} {
		st := csvStage(windowed(t, WindowedConfig{Window: w, Grace: 20 * time.Millisecond, Aggregation: Count(), Output: "o"}))
		_, refOut := run(t, st, in)
		a, out := run(t, st, in[:2345])
		cp, _ := a.Checkpoint()
		b, _ := NewTask(st, "0-0", out)
		if err := b.Restore(cp); err != nil {
			t.Fatal(err)
		}
		feed(t, b, in[2345:], 2345*100)
		if g, w := joinLines(results(t, out)), joinLines(results(t, refOut)); g != w {
			t.Errorf("%v: a restored run publishes %d results, the uninterrupted one %d, not the same", w, len(out.Out), len(refOut.Out))
		}
		if len(refOut.Out) < 100 {
			t.Errorf("%v: only %d results", w, len(refOut.Out))
		}
	}
}

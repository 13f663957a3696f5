package stream

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// memTopics is a set of topics in memory, each of n partitions, a message's offset its index: what the
// stages see of Kafka, with the producer's key-hash partitioner choosing partitions.
type memTopics struct {
	n int
	m map[string][][][]byte
}

func (mt *memTopics) Emit(topic string, key, value []byte) error {
	if mt.m[topic] == nil {
		mt.m[topic] = make([][][]byte, mt.n)
	}
	p := producer.DefaultPartitioner{}.Partition(key, mt.n)
	mt.m[topic][p] = append(mt.m[topic][p], append([]byte(nil), value...))
	return nil
}

// memPipeline runs stages over memTopics, one task per stage and partition, in random interleavings; with
// crashes, a task is now and then replaced by a new one restored from its last checkpoint (what a task killed
// and restarted elsewhere does), and the output it had published since is published again.
func memPipeline(t *testing.T, mt *memTopics, stages []Stage, crashes bool, seed uint64) {
	t.Helper()
	type slot struct {
		stage Stage
		part  int
		task  *Task
		ckpt  []byte
	}
	var slots []*slot
	for _, st := range stages {
		for p := range mt.n {
			task, err := NewTask(st, "0-"+string(rune('0'+p)), mt)
			if err != nil {
				t.Fatal(err)
			}
			slots = append(slots, &slot{stage: st, part: p, task: task})
		}
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	restarts := 0
	for idle := 0; idle < 3; {
		progressed := false
		for _, i := range rng.Perm(len(slots)) {
			s := slots[i]
			msgs := mt.m[s.stage.Input]
			if msgs == nil {
				continue
			}
			part := msgs[s.part]
			off := max(s.task.Offset(), 0)
			for n := rng.IntN(40); n > 0 && off < int64(len(part)); n-- {
				if err := s.task.Process(off, off+1, part[off]); err != nil {
					t.Fatal(err)
				}
				off++
				progressed = true
			}
			switch r := rng.IntN(10); {
			case r < 3:
				ck, err := s.task.Checkpoint()
				if err != nil {
					t.Fatal(err)
				}
				s.ckpt = append([]byte(nil), ck...)
			case r == 3 && crashes:
				task, err := NewTask(s.stage, s.task.Partition(), mt)
				if err != nil {
					t.Fatal(err)
				}
				if s.ckpt != nil {
					if err := task.Restore(s.ckpt); err != nil {
						t.Fatal(err)
					}
				}
				s.task = task
				restarts++
			}
		}
		if progressed {
			idle = 0
		} else {
			idle++
		}
	}
	t.Logf("%d stage tasks, %d restarts from checkpoints", len(slots), restarts)
}

// ctrStages is the pipeline of `kafka stream-ctr` (join_stage.go) on topics impressions and clicks.
func ctrStages(t *testing.T, window, grace time.Duration) []Stage {
	t.Helper()
	rep, err := Repartition(RepartitionConfig{Output: "ctr-events"})
	if err != nil {
		t.Fatal(err)
	}
	join, err := CTRJoin(CTRJoinConfig{Window: window, Grace: grace, Output: "ctr-by-item"})
	if err != nil {
		t.Fatal(err)
	}
	rates, err := CTRRates(CTRRatesConfig{Output: "ctr"})
	if err != nil {
		t.Fatal(err)
	}
	return []Stage{
		{Input: "impressions", Key: CTRKey, Time: CTRTime, Processors: []ProcessorFactory{rep}},
		{Input: "clicks", Key: CTRKey, Time: CTRTime, Processors: []ProcessorFactory{rep}},
		{Input: "ctr-events", Key: CTRKey, Time: CTRTime, Processors: []ProcessorFactory{join}},
		{Input: "ctr-by-item", Key: DecisionKey, Time: DecisionTime, Processors: []ProcessorFactory{rates}},
	}
}

// publishWorkload publishes a workload keyed by impression id, then a tick to every partition of both topics.
func publishWorkload(t *testing.T, mt *memTopics, w CTRWorkload) {
	t.Helper()
	imps, clicks, err := w.Generate()
	if err != nil {
		t.Fatal(err)
	}
	var last int64
	for _, e := range append(append([]CTREvent(nil), imps...), clicks...) {
		last = max(last, e.Time)
		topic := "impressions"
		if e.Kind == Click {
			topic = "clicks"
		}
		mt.Emit(topic, []byte(e.ID), []byte(e.String()))
	}
	for _, k := range TickKeys(mt.n) {
		mt.Emit("impressions", k, TickLine(Impression, k, last+time.Hour.Milliseconds()))
		mt.Emit("clicks", k, TickLine(Click, k, last+time.Hour.Milliseconds()))
	}
}

// lastRates reads the output topic as a table: the last line of each item.
func lastRates(t *testing.T, mt *memTopics, topic string) (map[string]Rate, int) {
	t.Helper()
	out := map[string]Rate{}
	lines := 0
	for _, part := range mt.m[topic] {
		for _, l := range part {
			item, r, err := ParseRateLine(l)
			if err != nil {
				t.Fatal(err)
			}
			out[item] = r
			lines++
		}
	}
	return out, lines
}

// The pipeline of `kafka stream-ctr` as tasks: impressions and clicks repartitioned into one topic by the
// join key, joined per partition, the decisions repartitioned by item and counted. The rates equal the
// workload's known ones exactly, also when tasks are killed and restored from their checkpoints at random (§6;
// the package doc's guarantees: exactly-once state, at-least-once output, and a rates stage that counts an
// impression once however often it is published).
func TestCTRPipelineTasksExact(t *testing.T) {
	w := DefaultCTRWorkload(30)
	want := w.Expected()
	var imps int64
	for _, r := range want {
		imps += r.Impressions
	}
	for _, crashes := range []bool{false, true} {
		for seed := range uint64(3) {
			mt := &memTopics{n: 4, m: map[string][][][]byte{}}
			publishWorkload(t, mt, w)
			memPipeline(t, mt, ctrStages(t, time.Duration(w.Window)*time.Millisecond,
				time.Duration(w.Disorder)*time.Millisecond), crashes, seed)
			got, lines := lastRates(t, mt, "ctr")
			checkRates(t, 4, got, want)
			var decided int
			for _, part := range mt.m["ctr-by-item"] {
				decided += len(part)
			}
			if !crashes && (int64(decided) != imps || int64(lines) != imps) {
				t.Errorf("without crashes: %d decisions and %d rate lines, want %d each", decided, lines, imps)
			}
			if crashes && int64(decided) < imps {
				t.Errorf("with crashes: %d decisions < %d impressions", decided, imps)
			}
			t.Logf("crashes %v seed %d: %d impressions, %d decisions published, %d rate lines", crashes, seed, imps, decided, lines)
		}
	}
}

func TestCTRStagesRefuseBadConfig(t *testing.T) {
	if _, err := CTRJoin(CTRJoinConfig{Window: 0, Output: "x"}); err == nil {
		t.Error("a zero window was accepted")
	}
	for _, bad := range []string{"", "../x", "a b", "x/y"} {
		if _, err := CTRJoin(CTRJoinConfig{Window: time.Second, Output: bad}); err == nil {
			t.Errorf("join output %q accepted", bad)
		}
		if _, err := CTRRates(CTRRatesConfig{Output: bad}); err == nil {
			t.Errorf("rates output %q accepted", bad)
		}
		if _, err := Repartition(RepartitionConfig{Output: bad}); err == nil {
			t.Errorf("repartition output %q accepted", bad)
		}
	}
	keys := TickKeys(6)
	for i, k := range keys {
		if p := (producer.DefaultPartitioner{}).Partition(k, 6); p != i {
			t.Errorf("tick key %q goes to partition %d, want %d", k, p, i)
		}
	}
}

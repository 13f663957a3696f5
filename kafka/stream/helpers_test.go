package stream

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// msg is one test input: "key,time-ms[,value]".
type msg struct {
	key string
	t   int64
	v   int64
}

func (m msg) payload() []byte {
	return []byte(m.key + "," + strconv.FormatInt(m.t, 10) + "," + strconv.FormatInt(m.v, 10))
}

// csvStage is a stage over "key,time,value" payloads with the given processors.
func csvStage(ps ...ProcessorFactory) Stage {
	return Stage{Input: "in", Key: KeyField(',', 0), Time: TimeField(',', 1), Processors: ps}
}

func mustWindow(t testing.TB, w Window, err error) Window {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func tumbling(t testing.TB, d time.Duration) Window {
	w, err := Tumbling(d)
	return mustWindow(t, w, err)
}

func windowed(t testing.TB, cfg WindowedConfig) ProcessorFactory {
	t.Helper()
	f, err := Windowed(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// run feeds payloads to a new task of st and returns the task and what it published.
func run(t testing.TB, st Stage, payloads [][]byte) (*Task, *MemoryEmitter) {
	t.Helper()
	out := &MemoryEmitter{}
	task, err := NewTask(st, "0-0", out)
	if err != nil {
		t.Fatal(err)
	}
	feed(t, task, payloads, 0)
	return task, out
}

// feed processes payloads as consecutive messages of 100 bytes each, the first at offset from.
func feed(t testing.TB, task *Task, payloads [][]byte, from int64) {
	t.Helper()
	for i, p := range payloads {
		off := from + int64(i)*100
		if err := task.Process(off, off+100, p); err != nil {
			t.Fatal(err)
		}
	}
}

func payloads(ms []msg) [][]byte {
	out := make([][]byte, len(ms))
	for i, m := range ms {
		out[i] = m.payload()
	}
	return out
}

// results parses what an emitter holds, as "F start end key=value" strings.
func results(t testing.TB, e *MemoryEmitter) []string {
	t.Helper()
	var out []string
	for _, m := range e.Out {
		r, err := ParseResult(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Key) != string(r.Key) {
			t.Errorf("result %q published with key %q", m.Value, m.Key)
		}
		out = append(out, fmt.Sprintf("%c %d-%d %s=%d", r.Kind, r.Start, r.End, r.Key, r.Value))
	}
	return out
}

func joinLines(s []string) string { return strings.Join(s, "\n") }

func newSetIterator(set []byte) *message.Iterator { it := message.NewIterator(set, 0); return &it }

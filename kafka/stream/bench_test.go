package stream

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// The speed of §6's "window-based counting" on one task: 200-byte messages (the paper's size, §5) of 1,000
// keys, 100 per millisecond of event time, counted in tumbling windows of one second (100,000 messages, 1,000
// results each). Each op is one message. The sub-benchmarks run over the same fetched bytes:
//
//	iterate  what a consumer does with a fetched set: find each message and check its CRC (§3.3)
//	count    the same, then the task: key and time parsed from the payload, the window's count updated,
//	         closed windows published (to an emitter that only counts)
//
// go test ./kafka/stream -run '^$' -bench TumblingCount -benchtime 5000000x
func BenchmarkTumblingCount(b *testing.B) {
	const perSet = 1500 // one 300 KB fetch
	set, span := benchSet(perSet)
	b.Run("iterate", func(b *testing.B) {
		b.SetBytes(int64(len(set) / perSet))
		b.ReportAllocs()
		it := message.NewIterator(set, 0)
		n := 0
		for range b.N {
			if !it.Next() {
				it.Reset(set, 0)
				it.Next()
			}
			if !it.Message().Valid() {
				b.Fatal("bad CRC")
			}
			n += len(it.Message().Payload())
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
	})
	b.Run("count", func(b *testing.B) {
		// Every pass over the set moves event time on by the set's span, so that windows keep closing: the
		// time parsed from the payload plus base.
		var base int64
		timeOf := TimeField(',', 1)
		st := Stage{Input: "in", Key: KeyField(',', 0), Time: func(p []byte) (int64, error) {
			t, err := timeOf(p)
			return t + base, err
		}}
		f, err := Windowed(WindowedConfig{Window: mustWindowB(Tumbling(time.Second)), Aggregation: Count(), Output: "counts"})
		if err != nil {
			b.Fatal(err)
		}
		st.Processors = []ProcessorFactory{f}
		out := &countingEmitter{}
		task, err := NewTask(st, "0-0", out)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(set) / perSet))
		b.ReportAllocs()
		it := message.NewIterator(set, 0)
		b.ResetTimer()
		for range b.N {
			if !it.Next() {
				it.Reset(set, 0)
				it.Next()
				base += span
			}
			m := it.Message()
			if !m.Valid() {
				b.Fatal("bad CRC")
			}
			if err := task.Process(it.Offset(), it.NextOffset(), m.Payload()); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
		rep := task.Report()
		if rep.Skips() != 0 || rep.Late != 0 || rep.Read != int64(b.N) || (b.N > 300000 && out.n == 0) {
			b.Fatalf("report %v, %d results published", rep, out.n)
		}
	})
}

// countingEmitter counts what it is given and keeps nothing.
type countingEmitter struct{ n int }

func (c *countingEmitter) Emit(string, []byte, []byte) error { c.n++; return nil }

// benchSet is n 200-byte messages "key-NNN,<ms>,<padding>" (magic 0, as the hot paths' sets), 1,000 keys, 100
// messages per millisecond; span is the event time the set covers.
func benchSet(n int) (set []byte, span int64) {
	var p []byte
	for i := range n {
		p = fmt.Appendf(p[:0], "key-%03d,", (i*7919)%1000)
		p = strconv.AppendInt(p, int64(i/100), 10)
		p = append(p, ',')
		for len(p) < 200 {
			p = append(p, 'x')
		}
		set = message.AppendV0(set, p)
	}
	return set, int64((n + 99) / 100)
}

func mustWindowB(w Window, err error) Window {
	if err != nil {
		panic(err)
	}
	return w
}

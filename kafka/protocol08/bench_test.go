package protocol08

import (
	"bytes"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// BenchmarkAppender is a Kafka protocol fetch's work per message of the log:
// a 200-byte message of the paper's format re-framed as a 0.8 entry (offset,
// size, a CRC over the new header and the value). The 0.7 fetch sends the
// file's bytes as they are; this is what the Kafka protocol's costs beyond it.
func BenchmarkAppender(b *testing.B) {
	var log []byte
	for range 1000 {
		log = message.AppendV1(log, message.CodecNone, bytes.Repeat([]byte("x"), 200))
	}
	var a Appender
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	for b.Loop() {
		a.Reset(0, 0, 1<<30)
		it := message.NewIterator(log, 0)
		for it.Next() {
			a.Add(it.Message())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
}

// BenchmarkConvert08To07 is a Kafka protocol produce's work per message
// before the log's own append: a 0.8 entry with a 200-byte value checked
// (its CRC) and re-framed as the paper's message (a CRC of the payload).
func BenchmarkConvert08To07(b *testing.B) {
	var set []byte
	for i := range 1000 {
		set = AppendEntry(set, int64(i), nil, bytes.Repeat([]byte("x"), 200))
	}
	var out []byte
	b.SetBytes(int64(len(set)))
	b.ReportAllocs()
	for b.Loop() {
		out, _, _ = Convert08To07(out[:0], set)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
}

// BenchmarkEntries is a Kafka protocol reader's work per fetched entry:
// a 200-byte value's entry walked and its CRC checked (protocols.Fetch08's
// loop). BenchmarkIterator07 is the same for the paper's format.
func BenchmarkEntries(b *testing.B) {
	var set []byte
	for i := range 1000 {
		set = AppendEntry(set, int64(i), nil, bytes.Repeat([]byte("x"), 200))
	}
	b.SetBytes(int64(len(set)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		Entries(set, true, func(e Entry) error { n += len(e.Value); return nil })
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
}

func BenchmarkIterator07(b *testing.B) {
	var log []byte
	for range 1000 {
		log = message.AppendV1(log, message.CodecNone, bytes.Repeat([]byte("x"), 200))
	}
	b.SetBytes(int64(len(log)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		it := message.NewIterator(log, 0)
		for it.Next() {
			if it.Message().Valid() { // as NextChecked checks
				n += len(it.Message().Payload())
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/msg")
}

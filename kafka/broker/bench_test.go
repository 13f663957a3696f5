package broker_test

import (
	"bufio"
	"fmt"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// BenchmarkFetchLoopback measures the consumer's path of §3.1 "efficient
// transfer": a broker on loopback serving FETCHes of 300 KB from a ~20 MB
// log of 200-byte messages (in the page cache), with sendfile from the
// segment file to the socket. One op is one 300 KB fetch, read whole by the
// client, which then walks the messages to find where to fetch next.
func BenchmarkFetchLoopback(b *testing.B) {
	tb := startBroker(b, nil) // 0.7's defaults: socket.send.buffer=102400
	l, err := tb.Logs().GetOrCreate("bench", 0)
	if err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 200)
	var set []byte
	for range 50 {
		set = message.AppendV0(set, payload)
	}
	for l.LogEndOffset() < 20<<20 {
		if _, err := l.Append(set); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	end := l.HighWaterMark()
	const fetchSize = 300 << 10

	cl := dial(b, tb.Addr())
	req := protocol.FetchRequest{Topic: "bench", Partition: 0, MaxSize: fetchSize}
	var out, in []byte
	var it message.Iterator
	b.SetBytes(fetchSize)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if req.Offset+fetchSize > end {
			req.Offset = 0
		}
		out = req.AppendTo(out[:0])
		if _, err := cl.c.Write(out); err != nil {
			b.Fatal(err)
		}
		code, set, buf, err := protocol.ReadResponse(cl.r, in)
		in = buf
		if err != nil || code != protocol.ErrNone || len(set) != fetchSize {
			b.Fatalf("fetch at %d: code %v, %d bytes, %v", req.Offset, code, len(set), err)
		}
		it.Reset(set, req.Offset)
		for it.Next() {
		}
		req.Offset += int64(it.Consumed())
	}
}

// BenchmarkProduceLoopback measures the producer's path: PRODUCE requests of
// batch 200-byte messages sent over loopback without waiting for an answer
// (§5), through a buffered writer as a producer library would. One op is one
// request; the throughput in messages/s is reported as msgs/s. The log uses
// the default flush policy (fsync every 500 messages, on the log's flusher).
func BenchmarkProduceLoopback(b *testing.B) {
	for _, batch := range []int{1, 50} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			tb := startBroker(b, nil)
			cl := dial(b, tb.Addr())
			payload := make([]byte, 200)
			var set []byte
			for range batch {
				set = message.AppendV0(set, payload)
			}
			req := protocol.ProduceRequest{Topic: "bench", Partition: 0, Messages: set}
			frame := req.AppendTo(nil)
			w := bufio.NewWriterSize(cl.c, 64<<10)
			cl.sync() // create the connection's state before timing
			b.SetBytes(int64(len(set)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := w.Write(frame); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				b.Fatal(err)
			}
			cl.sync() // the broker has appended everything
			b.StopTimer()
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "msgs/s")
			l, ok := tb.Logs().Get("bench", 0)
			if !ok || l.LogEndOffset() != int64(b.N)*int64(len(set)) {
				b.Fatalf("log end %d, want %d", l.LogEndOffset(), int64(b.N)*int64(len(set)))
			}
		})
	}
}

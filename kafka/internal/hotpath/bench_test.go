package hotpath

import "testing"

// BenchmarkHotPath times one Op.Do of every path (make bench; names such as
// BenchmarkHotPath/log/append-batch50), with the bytes and messages it
// moves. A path whose other side works asynchronously (a broker appending
// what was produced) is timed until it has taken everything (Op.Settle).
func BenchmarkHotPath(b *testing.B) {
	for _, p := range Paths() {
		b.Run(p.Name, func(b *testing.B) {
			op := open(b, p)
			b.SetBytes(p.Bytes)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if err := op.Do(); err != nil {
					b.Fatal(err)
				}
			}
			if err := op.Settle(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N*p.Messages)/b.Elapsed().Seconds(), "msgs/s")
		})
	}
}

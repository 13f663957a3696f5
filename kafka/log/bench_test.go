package log

import (
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// BenchmarkRead measures what a fetch costs the log: a binary search, a
// Chunk and its release (the broker then sendfiles the chunk), and the same
// with the bytes copied out through ReadAt, 300 KB per fetch (fetch.size).
func BenchmarkRead(b *testing.B) {
	cfg := DefaultConfig()
	cfg.FileSize = 4 << 20
	l, err := Open(b.TempDir(), cfg, false)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	set := makeSet(0, 50, 200)
	for l.LogEndOffset() < 64<<20 {
		if _, err := l.Append(set); err != nil {
			b.Fatal(err)
		}
	}
	if err := l.Flush(); err != nil {
		b.Fatal(err)
	}
	const fetch = 300 << 10
	end := l.FlushedEnd()
	b.Run("chunk", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(fetch)
		off := int64(0)
		for b.Loop() {
			c, err := l.Read(off, fetch)
			if err != nil {
				b.Fatal(err)
			}
			c.Release()
			if off += c.Len; off >= end {
				off = 0
			}
		}
	})
	b.Run("copy", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(fetch)
		buf := make([]byte, fetch)
		off := int64(0)
		for b.Loop() {
			c, err := l.Read(off, fetch)
			if err != nil {
				b.Fatal(err)
			}
			n, err := c.ReadAt(buf)
			c.Release()
			if err != nil {
				b.Fatal(err)
			}
			it := message.NewIterator(buf[:n], off)
			for it.Next() {
			}
			if off += int64(it.Consumed()); off >= end {
				off = 0
			}
		}
	})
}

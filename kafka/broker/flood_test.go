package broker_test

import (
	"bytes"
	"compress/gzip"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// A compressed flood: 25 connections at once each send one gzip wrapper of under 64 KiB (so it does not ask
// the request memory budget) that inflates to one valid 60 MiB message. The broker checks each wrapper as it
// inflates it (message.ValidateWholeDeep), holding no inner set, so its heap grows by a few MiB, not by 25 ×
// 60 MiB; every set is appended whole.
func TestCompressedFloodStaysWithinAFewMiB(t *testing.T) {
	if testing.Short() {
		t.Skip("inflates 1.5 GB of gzip (skipped with -short)")
	}
	inner := message.AppendV0(nil, make([]byte, 60<<20-message.HeaderSizeV0)) // one message of zeros
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(inner)
	zw.Close()
	wrapper := message.AppendV1(nil, message.CodecGzip, buf.Bytes())
	if len(wrapper) > 64<<10 {
		t.Fatalf("the wrapper is %d bytes, want under 64 KiB", len(wrapper))
	}
	inflated := len(inner)
	inner = nil

	tb := startBroker(t, nil)
	const conns = 25
	clients := make([]*client, conns)
	for i := range clients {
		clients[i] = dial(t, tb.Addr())
	}
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	peak := base.HeapInuse
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse)
		}
	}()
	start := time.Now()
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.produce("flood", 0, wrapper)
			cl.sync()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	close(stop)
	<-sampled
	grew := int64(peak) - int64(base.HeapInuse)
	t.Logf("%d wrappers of %d bytes inflating to %d MiB each checked in %v: heap in use %d MiB before, at most %d MiB during (+%d MiB)",
		conns, len(wrapper), inflated>>20, took.Round(time.Millisecond), base.HeapInuse>>20, peak>>20, grew>>20)
	if grew > 32<<20 {
		t.Errorf("the heap grew by %d MiB checking %d compressed wrappers at once, want under 32 MiB (each inflates to %d MiB)", grew>>20, conns, inflated>>20)
	}
	tb.Flush("flood", 0)
	code, offs := clients[0].offsets("flood", 0, protocol.OffsetsLatest, 1)
	if code != protocol.ErrNone || len(offs) != 1 || offs[0] != int64(conns*len(wrapper)) {
		t.Errorf("after the flood the log ends at %v (%v), want %d: every wrapper appended", offs, code, conns*len(wrapper))
	}
}

package consumer

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/message/messagetest"
)

func testPart(s *Stream, name string) *ownedPartition {
	p := &ownedPartition{topic: s.topic, name: name, stream: s, committed: -1}
	p.consumed.Store(-1)
	return p
}

func TestStreamOrderAndOffsets(t *testing.T) {
	s := newStream("c-0", "t", 4, -1)
	p := testPart(s, "0-0")
	set := messagetest.PlainSet("m", 3)
	s.queue <- &chunk{part: p, set: set[:len(set)-2], base: 100} // the last message cut short: dropped
	if !s.Next() || string(s.Message().Payload) != "m0" || s.Message().Offset != 100 {
		t.Fatalf("first message %+v err %v", s.Message(), s.Err())
	}
	if p.consumed.Load() != s.Message().NextOffset {
		t.Fatalf("consumed %d, want %d", p.consumed.Load(), s.Message().NextOffset)
	}
	if !s.Next() || string(s.Message().Payload) != "m1" || s.Message().Partition != "0-0" || s.Message().Topic != "t" {
		t.Fatalf("second message %+v", s.Message())
	}
	if s.Poll() {
		t.Fatalf("Poll with an empty queue returned %+v", s.Message())
	}
	if s.Err() != nil {
		t.Fatalf("Poll: %v", s.Err())
	}
	want := 100 + int64(2*message.SizeV0(2))
	if s.Message().NextOffset != want || p.consumed.Load() != want {
		t.Fatalf("next offset %d consumed %d, want %d", s.Message().NextOffset, p.consumed.Load(), want)
	}
}

func TestStreamDropsOldGeneration(t *testing.T) {
	s := newStream("c-0", "t", 4, 50*time.Millisecond)
	p := testPart(s, "0-0")
	s.queue <- &chunk{part: p, set: messagetest.PlainSet("old", 2), gen: 0}
	if !s.Next() || string(s.Message().Payload) != "old0" {
		t.Fatalf("got %q", s.Message().Payload)
	}
	// A rebalance: the rest of the current chunk and everything queued are dropped.
	s.queue <- &chunk{part: p, set: messagetest.PlainSet("queued", 1), gen: 0}
	s.reset(1)
	s.queue <- &chunk{part: p, set: messagetest.PlainSet("stale", 1), gen: 0} // a fetcher of the old generation
	s.queue <- &chunk{part: p, set: messagetest.PlainSet("new", 1), gen: 1}
	if !s.Next() || string(s.Message().Payload) != "new0" {
		t.Fatalf("after reset got %q, err %v", s.Message().Payload, s.Err())
	}
	if s.Next() {
		t.Fatalf("unexpected %q", s.Message().Payload)
	}
	if !errors.Is(s.Err(), ErrConsumerTimeout) {
		t.Fatalf("err %v, want ErrConsumerTimeout", s.Err())
	}
	// A timeout is not final.
	s.queue <- &chunk{part: p, set: messagetest.PlainSet("later", 1), gen: 1}
	if !s.Next() || string(s.Message().Payload) != "later0" {
		t.Fatalf("after timeout got %q, err %v", s.Message().Payload, s.Err())
	}
}

func TestStreamEnd(t *testing.T) {
	s := newStream("c-0", "t", 1, -1)
	done := make(chan bool)
	go func() { done <- s.Next() }()
	time.Sleep(10 * time.Millisecond)
	s.end(nil)
	if <-done || s.Err() != nil {
		t.Fatalf("Next after a clean end: err %v", s.Err())
	}
	f := newStream("c-1", "t", 1, -1)
	f.end(fmt.Errorf("%w: test", ErrRebalanceFailed))
	if f.Next() || !errors.Is(f.Err(), ErrRebalanceFailed) {
		t.Fatalf("Next after a failed rebalance: err %v", f.Err())
	}
}

func TestStreamChecksumIsReportedAndSkipped(t *testing.T) {
	s := newStream("c-0", "t", 2, -1)
	p := testPart(s, "1-3")
	set := messagetest.PlainSet("x", 3)
	set[message.SizeV0(2)+message.HeaderSizeV0] ^= 0xff // corrupt the second payload
	s.queue <- &chunk{part: p, set: set, base: 0}
	if !s.Next() {
		t.Fatal(s.Err())
	}
	if s.Next() || !errors.Is(s.Err(), ErrChecksum) {
		t.Fatalf("corrupt message: Next err %v", s.Err())
	}
	if !s.Next() || string(s.Message().Payload) != "x2" {
		t.Fatalf("after the corrupt message got %q err %v", s.Message().Payload, s.Err())
	}
}

func TestStreamCompressedOffsets(t *testing.T) {
	s := newStream("c-0", "t", 2, -1)
	p := testPart(s, "0-0")
	inner := messagetest.PlainSet("z", 3)
	w, err := message.Compress(message.CodecGzip, inner)
	if err != nil {
		t.Fatal(err)
	}
	set := append(messagetest.PlainSet("plain", 1), w...)
	s.queue <- &chunk{part: p, set: set, base: 1000}
	wrapOff := int64(1000 + message.SizeV0(len("plain0")))
	wrapEnd := 1000 + int64(len(set))
	want := []struct {
		payload   string
		off, next int64
	}{
		{"plain0", 1000, wrapOff}, {"z0", wrapOff, wrapOff}, {"z1", wrapOff, wrapOff}, {"z2", wrapOff, wrapEnd},
	}
	for _, w := range want {
		if !s.Next() {
			t.Fatal(s.Err())
		}
		m := s.Message()
		if string(m.Payload) != w.payload || m.Offset != w.off || m.NextOffset != w.next {
			t.Fatalf("got %q at %d next %d, want %+v", m.Payload, m.Offset, m.NextOffset, w)
		}
	}
}

func TestStreamNextAllocs(t *testing.T) {
	s := newStream("c-0", "t", 1, -1)
	p := testPart(s, "0-0")
	set := messagetest.PlainSet("payload-", 1000)
	c := &chunk{part: p, set: set}
	s.queue <- c
	if !s.Next() {
		t.Fatal(s.Err())
	}
	allocs := testing.AllocsPerRun(100, func() {
		if !s.Poll() {
			s.queue <- c
			s.Next()
		}
	})
	if allocs != 0 {
		t.Fatalf("Next allocates %.1f times per message", allocs)
	}
}

func BenchmarkStreamNext(b *testing.B) {
	s := newStream("c-0", "t", 1, -1)
	p := testPart(s, "0-0")
	payload := make([]byte, 200) // the paper's message size (§5)
	var set []byte
	for range 1000 {
		set = message.AppendV0(set, payload)
	}
	c := &chunk{part: p, set: set}
	b.SetBytes(int64(message.SizeV0(len(payload))))
	b.ReportAllocs()
	for b.Loop() {
		if !s.Poll() {
			s.queue <- c
			s.Next()
		}
	}
}

func TestGroupConfigFromProperties(t *testing.T) {
	cfg, err := GroupConfigFromProperties(map[string]string{"groupid": "g", "zk.connect": "localhost:2181",
		"zk.synctime.ms": "300", "autooffset.reset": "largest", "fetch.size": "1024", "autocommit.enable": "false"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.rebalanceBackoff() != 300*time.Millisecond || cfg.AutoOffsetReset != "largest" || cfg.FetchSize != 1024 ||
		cfg.AutoCommitEnable || cfg.RebalanceRetriesMax != 4 || cfg.QueuedChunksMax != 10 || cfg.ConsumerTimeoutMs != -1 {
		t.Fatalf("config %+v", cfg)
	}
	for _, bad := range []map[string]string{
		{"zk.connect": "x"},
		{"groupid": "a/b", "zk.connect": "x"},
		{"groupid": "g"},
		{"groupid": "g", "zk.connect": "x", "autooffset.reset": "middle"},
		{"groupid": "g", "zk.connect": "x", "fetch.size": "zero"},
	} {
		if _, err := GroupConfigFromProperties(bad); !errors.Is(err, ErrBadGroupConfig) {
			t.Errorf("%v: err %v, want ErrBadGroupConfig", bad, err)
		}
	}
}

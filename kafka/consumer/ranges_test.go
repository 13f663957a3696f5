package consumer

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// readAll reads n messages with it and checks that message i's payload is
// payloadN(first+i).
func readAll(t *testing.T, it *PartitionIterator, first, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := range n {
		if !it.Next(ctx) {
			t.Fatalf("message %d: %v", first+i, it.Err())
		}
		if !bytes.Equal(it.Payload(), payloadN(first+i)) {
			t.Fatalf("message %d: payload %q", first+i, it.Payload())
		}
	}
}

// rangesOn returns an iterator over b's log from offset 0 in fetchSize-byte
// ranges, depth in flight, and its consumer (closed at the test's end).
func rangesOn(t *testing.T, b *memBroker, fetchSize int32, depth int) (*PartitionIterator, *SimpleConsumer) {
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	t.Cleanup(func() { c.Close() })
	it := NewPartitionIterator(c, "t", 0, 0, fetchSize)
	it.InFlight = depth
	return it, c
}

// TestRangesKeepDepthInFlight: with InFlight 3 the iterator asks for the
// log as consecutive 1,000-byte ranges, each once, while two more are on
// their way; every message comes whole and in order although each range
// but the last ends inside a message (21-byte messages: 1,000 = 47×21 + 13).
func TestRangesKeepDepthInFlight(t *testing.T) {
	b := &memBroker{log: setOf(0, 1000)} // 21,000 bytes
	it, c := rangesOn(t, b, 1000, 3)
	readAll(t, it, 0, 1000)
	b.mu.Lock()
	defer b.mu.Unlock()
	for off := int64(0); off < 21000; off += 1000 {
		if b.asked[off] != 1 {
			t.Fatalf("range at %d asked %d times, want once (asked: %v)", off, b.asked[off], b.asked)
		}
	}
	// The 21 ranges, and at most the two sent ahead of the last.
	if b.fetches < 21 || b.fetches > 23 {
		t.Fatalf("%d fetches served, want 21 to 23", b.fetches)
	}
	if len(c.ranges) != 2 {
		t.Fatalf("%d ranges in flight after a full answer, want 2", len(c.ranges))
	}
}

// TestRangesTopUpByHalfTheDepth: with 10 in flight (the tools' depth, tuning.RangesInFlight), the
// nine ranges ahead of the one being read are topped up only once no more
// than four are left, five requests in one write: after each FetchRange
// 9, 8, 7, 6, 5, then 9 again, never fewer than five ahead. Topping up
// after every answer (9, 9, 9, ...) or losing the depth fails it; every
// range is still asked once.
func TestRangesTopUpByHalfTheDepth(t *testing.T) {
	b := &memBroker{log: setOf(0, 2000)} // 42,000 bytes: 42 ranges of 1,000
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	t.Cleanup(func() { c.Close() })
	want := []int{9, 8, 7, 6, 5, 9, 8, 7, 6, 5, 9, 8, 7, 6, 5, 9}
	var got []int
	var buf []byte
	for i := range want {
		var err error
		if buf, err = c.FetchRange(buf[:0], "t", 0, int64(i)*1000, 1000, 10); err != nil {
			t.Fatalf("range %d: %v", i, err)
		}
		if len(buf) != 1000 {
			t.Fatalf("range %d: %d bytes, want 1000", i, len(buf))
		}
		got = append(got, len(c.ranges))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ranges ahead after each FetchRange: %v, want %v", got, want)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for off, n := range b.asked {
		if n != 1 {
			t.Fatalf("range at %d asked %d times, want once", off, n)
		}
	}
}

// TestRangesAcrossSegments: an answer cut at a segment's end (every 651
// bytes, 31 messages, here) leaves a gap before the ranges asked after it:
// their answers are dropped, the next range starts at the cut, and no
// message is lost, doubled or split wrongly.
func TestRangesAcrossSegments(t *testing.T) {
	b := &memBroker{log: setOf(0, 1000), segment: 31 * 21}
	it, _ := rangesOn(t, b, 500, 4)
	readAll(t, it, 0, 1000)
	b.mu.Lock()
	defer b.mu.Unlock()
	t.Logf("%d fetches for %d bytes in 500-byte ranges and %d-byte segments", b.fetches, len(b.log), b.segment)
	for seg := int64(0); seg < int64(len(b.log)); seg += b.segment {
		if b.asked[seg] == 0 {
			t.Fatalf("segment at %d never asked from its start (asked: %v)", seg, b.asked)
		}
	}
}

// TestRangesFollowAGrowingLog: at the flushed end the iterator waits, and
// the ranges it had asked beyond the end (answered "offset out of range")
// are asked again, so messages appended later arrive in order.
func TestRangesFollowAGrowingLog(t *testing.T) {
	b := &memBroker{log: setOf(0, 100)} // 2,100 bytes: two full 1,000-byte ranges, then 100 bytes
	it, _ := rangesOn(t, b, 1000, 3)
	it.MinBackoff, it.MaxBackoff = time.Millisecond, 5*time.Millisecond
	readAll(t, it, 0, 100)
	go func() {
		for i := 100; i < 400; i += 50 {
			time.Sleep(2 * time.Millisecond)
			b.append(setOf(i, i+50))
		}
	}()
	readAll(t, it, 100, 300)
}

// TestRangesStitchAMessageLargerThanARange: a 2,500-byte message read in
// 1,000-byte ranges comes whole (a single fetch would need a fetch size of
// 2,504, ErrMessageTooLarge otherwise), between the messages around it.
func TestRangesStitchAMessageLargerThanARange(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 2500)
	log := setOf(0, 10)
	log = message.AppendV0(log, big)
	log = append(log, setOf(11, 20)...)
	b := &memBroker{log: log}
	it, _ := rangesOn(t, b, 1000, 2)
	ctx := context.Background()
	for i := range 20 {
		if !it.Next(ctx) {
			t.Fatalf("message %d: %v", i, it.Err())
		}
		want := payloadN(i)
		if i == 10 {
			want = big
		}
		if !bytes.Equal(it.Payload(), want) {
			t.Fatalf("message %d: %d bytes %.20q", i, len(it.Payload()), it.Payload())
		}
	}
}

// TestRangesRefuseWhatCannotBeAMessage: a range that starts with a length
// no message has is ErrNotMessageStart, not a wait for more bytes; a
// rewind (SeekTo) drops what was in flight and reads from there.
func TestRangesRefuseWhatCannotBeAMessage(t *testing.T) {
	log := setOf(0, 50)
	b := &memBroker{log: append([]byte{0, 0, 0, 1, 0}, log...)}
	it, c := rangesOn(t, b, 100, 3)
	if it.Next(context.Background()) || !errors.Is(it.Err(), ErrNotMessageStart) {
		t.Fatalf("a 1-byte length: %v, want ErrNotMessageStart", it.Err())
	}
	it.SeekTo(5)
	readAll(t, it, 0, 50)
	if _, err := c.FetchRange(nil, "t", 0, 1<<40, 100, 3); !errors.Is(err, protocol.ErrOffsetOutOfRange) {
		t.Fatalf("a range beyond the end: %v, want ErrOffsetOutOfRange", err)
	}
}

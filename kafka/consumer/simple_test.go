package consumer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// memBroker serves FETCH, MULTIFETCH and OFFSETS from an in-memory log of
// one partition whose first byte is at offset start, like the real broker:
// raw bytes from the offset, at most maxSize, cut anywhere.
type memBroker struct {
	mu      sync.Mutex
	start   int64
	log     []byte
	fetches int // FETCH requests served
	// segment, if set, is the length of the log's segments: an answer
	// stops at the end of its offset's segment, as the broker's does.
	segment int64
	asked   map[int64]int // FETCHes served per offset
}

func (b *memBroker) append(set []byte) {
	b.mu.Lock()
	b.log = append(b.log, set...)
	b.mu.Unlock()
}

func (b *memBroker) read(f protocol.FetchRequest) (protocol.ErrorCode, []byte) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if f.MaxSize < 0 {
		return protocol.ErrInvalidFetchSize, nil
	}
	if f.Offset < b.start || f.Offset > b.start+int64(len(b.log)) {
		return protocol.ErrOffsetOutOfRange, nil
	}
	if b.asked == nil {
		b.asked = map[int64]int{}
	}
	b.asked[f.Offset]++
	rest := b.log[f.Offset-b.start:]
	if b.segment > 0 {
		rest = rest[:min(int64(len(rest)), b.segment-(f.Offset-b.start)%b.segment)]
	}
	return protocol.ErrNone, bytes.Clone(rest[:min(len(rest), int(f.MaxSize))])
}

func (b *memBroker) serve(t testing.TB) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go b.handle(c)
		}
	}()
	return ln.Addr().String()
}

func (b *memBroker) handle(c net.Conn) {
	defer c.Close()
	var buf, out []byte
	for {
		id, body, nb, err := protocol.ReadRequest(c, buf, 0)
		if err != nil {
			return
		}
		buf = nb
		req, err := protocol.DecodeRequest(id, body)
		if err != nil {
			return
		}
		out = out[:0]
		switch r := req.(type) {
		case protocol.FetchRequest:
			b.mu.Lock()
			b.fetches++
			b.mu.Unlock()
			code, set := b.read(r)
			out = protocol.AppendResponseHeader(out, len(set), code)
			out = append(out, set...)
		case protocol.MultiFetchRequest:
			var payload []byte
			for _, f := range r.Fetches {
				code, set := b.read(f)
				payload = protocol.AppendResponseHeader(payload, len(set), code)
				payload = append(payload, set...)
			}
			out = protocol.AppendResponseHeader(out, len(payload), protocol.ErrNone)
			out = append(out, payload...)
		case protocol.OffsetsRequest:
			b.mu.Lock()
			offs := []int64{b.start + int64(len(b.log))}
			if r.Time == -2 {
				offs = []int64{b.start}
			}
			b.mu.Unlock()
			out = protocol.AppendOffsetsResponse(out, protocol.ErrNone, offs)
		default:
			return
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

func payloadN(i int) []byte { return []byte(fmt.Sprintf("message-%04d", i)) }

func setOf(from, to int) []byte {
	var s []byte
	for i := from; i < to; i++ {
		s = message.AppendV0(s, payloadN(i))
	}
	return s
}

func TestIteratorReadsAcrossPartialFetchesAndRewinds(t *testing.T) {
	b := &memBroker{start: 1000, log: setOf(0, 100)}
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	defer c.Close()
	// A fetch size that is not a multiple of the message size makes every
	// fetch end in the middle of a message.
	it := NewPartitionIterator(c, "t", 0, 1000, 50)
	ctx := context.Background()
	var offsets []int64
	for i := 0; i < 100; i++ {
		if !it.Next(ctx) {
			t.Fatalf("message %d: %v", i, it.Err())
		}
		if !bytes.Equal(it.Payload(), payloadN(i)) {
			t.Fatalf("message %d: got %q", i, it.Payload())
		}
		// §3.1: the next offset is offset + 4 + N (9 + payload for magic 0).
		if it.NextOffset() != it.Offset()+int64(message.SizeV0(len(payloadN(i)))) {
			t.Fatalf("message %d: offset %d next %d", i, it.Offset(), it.NextOffset())
		}
		offsets = append(offsets, it.Offset())
	}
	// §3.1: rewind to an earlier offset and re-consume.
	it.SeekTo(offsets[42])
	if !it.Next(ctx) || !bytes.Equal(it.Payload(), payloadN(42)) {
		t.Fatalf("after rewind: %q %v", it.Payload(), it.Err())
	}
	// Caught up: Poll says no without error; Next blocks until an append.
	it.SeekTo(offsets[99])
	if !it.Poll() || it.Poll() || it.Err() != nil {
		t.Fatalf("poll at end: err %v", it.Err())
	}
	go func() { time.Sleep(50 * time.Millisecond); b.append(setOf(100, 101)) }()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if !it.Next(cctx) || !bytes.Equal(it.Payload(), payloadN(100)) {
		t.Fatalf("blocking next: %q %v", it.Payload(), it.Err())
	}
	cctx2, cancel2 := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel2()
	if it.Next(cctx2) || !errors.Is(it.Err(), context.DeadlineExceeded) {
		t.Fatalf("next at end with a deadline: %v", it.Err())
	}
}

func TestIteratorStopsAtBadCRC(t *testing.T) {
	log := setOf(0, 10)
	bad := len(setOf(0, 6))
	log[bad+message.HeaderSizeV0] ^= 0xff // flip a payload byte of message 6
	b := &memBroker{log: log}
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	it := NewPartitionIterator(c, "t", 0, 0, 1000)
	n := 0
	for it.Next(context.Background()) {
		n++
	}
	if n != 6 || !errors.Is(it.Err(), ErrChecksum) || !errors.Is(it.Err(), message.ErrChecksum) {
		t.Fatalf("read %d messages then %v; want 6 then a CRC error", n, it.Err())
	}
	if want := fmt.Sprintf("offset %d", bad); !bytes.Contains([]byte(it.Err().Error()), []byte(want)) {
		t.Fatalf("error %q does not name %q", it.Err(), want)
	}
	// What a consumer would commit is the bad message's own offset, not
	// the one after it: nothing is passed over unseen (§3.3).
	if it.NextOffset() != int64(bad) {
		t.Fatalf("NextOffset after the bad message %d, want its offset %d", it.NextOffset(), bad)
	}
}

func TestFetchReportsMessageLargerThanFetchSize(t *testing.T) {
	b := &memBroker{log: message.AppendV0(nil, make([]byte, 500))}
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	_, err := c.Fetch("t", 0, 0, 100)
	if !errors.Is(err, ErrMessageTooLarge) || !bytes.Contains([]byte(err.Error()), []byte("509 bytes")) {
		t.Fatalf("got %v, want ErrMessageTooLarge naming 509 bytes", err)
	}
	it := NewPartitionIterator(c, "t", 0, 0, 100)
	if it.Next(context.Background()) || !errors.Is(it.Err(), ErrMessageTooLarge) {
		t.Fatalf("iterator: %v", it.Err())
	}
	if _, err := c.Fetch("t", 0, 1000, 100); !errors.Is(err, protocol.ErrOffsetOutOfRange) {
		t.Fatalf("fetch past the end: %v", err)
	}
}

func TestOffsetsAndMultiFetch(t *testing.T) {
	b := &memBroker{start: 64, log: setOf(0, 3)}
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	if o, err := c.LatestOffset("t", 0); err != nil || o != 64+int64(len(b.log)) {
		t.Fatalf("latest: %d %v", o, err)
	}
	if o, err := c.EarliestOffset("t", 0); err != nil || o != 64 {
		t.Fatalf("earliest: %d %v", o, err)
	}
	res, err := c.MultiFetch([]protocol.FetchRequest{
		{Topic: "t", Offset: 64, MaxSize: 1000},
		{Topic: "t", Offset: 1, MaxSize: 1000},
		{Topic: "t", Offset: 64, MaxSize: 5},
	})
	if err != nil || len(res) != 3 {
		t.Fatalf("multifetch: %v %v", res, err)
	}
	if !bytes.Equal(res[0].Set, b.log) || !errors.Is(res[1].Err, protocol.ErrOffsetOutOfRange) || !errors.Is(res[2].Err, ErrMessageTooLarge) {
		t.Fatalf("multifetch results: %q / %v / %v", res[0].Set, res[1].Err, res[2].Err)
	}
}

func TestIteratorUnpacksCompressedWrappers(t *testing.T) {
	w, err := message.Compress(message.CodecGzip, setOf(0, 3))
	if err != nil {
		t.Fatal(err)
	}
	log := append(append(setOf(10, 11), w...), setOf(11, 12)...)
	b := &memBroker{log: log}
	it := NewPartitionIterator(NewSimpleConsumer(b.serve(t), 5*time.Second), "t", 0, 0, 1000)
	wrapAt := int64(len(setOf(10, 11)))
	wrapEnd := wrapAt + int64(len(w))
	want := []struct {
		p         string
		off, next int64
	}{
		{"message-0010", 0, wrapAt},
		{"message-0000", wrapAt, wrapAt}, // docs/PROTOCOL.md §2: inner messages replay the wrapper...
		{"message-0001", wrapAt, wrapAt},
		{"message-0002", wrapAt, wrapEnd}, // ...except the last
		{"message-0011", wrapEnd, int64(len(log))},
	}
	for i, w := range want {
		if !it.Poll() {
			t.Fatalf("message %d: %v", i, it.Err())
		}
		if string(it.Payload()) != w.p || it.Offset() != w.off || it.NextOffset() != w.next {
			t.Fatalf("message %d: %q %d %d, want %+v", i, it.Payload(), it.Offset(), it.NextOffset(), w)
		}
	}
}

func TestIteratorAllocatesNothingPerMessage(t *testing.T) {
	b := &memBroker{log: setOf(0, 2000)}
	c := NewSimpleConsumer(b.serve(t), 0)
	it := NewPartitionIterator(c, "t", 0, 0, 300*1024)
	ctx := context.Background()
	if !it.Next(ctx) {
		t.Fatal(it.Err())
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if !it.Next(ctx) {
			t.Fatal(it.Err())
		}
	})
	if allocs != 0 {
		t.Fatalf("%.2f allocations per message", allocs)
	}
	// The same with byte ranges in flight (ranges.go), 1,000-byte ranges so
	// that the 1,000 messages measured span 21 of them, each ending inside a
	// message.
	it = NewPartitionIterator(c, "t", 0, 0, 1000)
	it.InFlight = 3
	for range 100 { // the buffer reaches its size
		if !it.Next(ctx) {
			t.Fatal(it.Err())
		}
	}
	allocs = testing.AllocsPerRun(1000, func() {
		if !it.Next(ctx) {
			t.Fatal(it.Err())
		}
	})
	if allocs != 0 {
		t.Fatalf("byte ranges: %.2f allocations per message", allocs)
	}
}

// TestFetchAtAnOffsetInsideAMessage: the broker sends bytes from any offset
// (§3.1: offsets are byte positions), so a fetch from inside a message gets
// bytes that are not a header. That is ErrNotMessageStart, naming the
// offset and what was read, not ErrMessageTooLarge ("raise the fetch
// size"), whether the bytes read as a length larger than any response
// (a reported "the first message is 1409376939 bytes"), an unknown magic, or
// a length too small.
func TestFetchAtAnOffsetInsideAMessage(t *testing.T) {
	// Message 0 (9-byte header, then the payload at offset 9) holds at
	// offset 12 the bytes 54 00 00 00 | 00: a magic-0 message of 4+0x54000000
	// bytes; at offset 17, 00 00 00 20 | 61: magic 97. Message 1 is 100 zeros.
	p0 := append([]byte("abc"), 0x54, 0, 0, 0, 0, 0, 0, 0, 0x20, 0x61, 'x', 'y', 'z')
	log := message.AppendV0(nil, p0)
	start1 := int64(len(log))
	log = message.AppendV0(log, make([]byte, 100))
	b := &memBroker{log: log}
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	for _, tc := range []struct {
		offset int64
		want   string
	}{
		{12, "read as a 1409286148-byte message of magic 0 (consumer: offset does not start a message: no message is larger"},
		{17, "read as a 36-byte message of magic 97 (consumer: offset does not start a message: message: unknown magic 97"},
		{start1 + 9 + 10, "read as a 4-byte message of magic 0 (consumer: offset does not start a message: message: corrupt message: length 0"},
	} {
		_, err := c.Fetch("t", 0, tc.offset, 300<<10)
		if !errors.Is(err, ErrNotMessageStart) || errors.Is(err, ErrMessageTooLarge) {
			t.Fatalf("fetch at %d: %v, want ErrNotMessageStart and not ErrMessageTooLarge", tc.offset, err)
		}
		want := fmt.Sprintf("offset %d does not start a message", tc.offset)
		if !bytes.Contains([]byte(err.Error()), []byte(want)) || !bytes.Contains([]byte(err.Error()), []byte(tc.want)) {
			t.Fatalf("fetch at %d: %q, want it to say %q and %q", tc.offset, err, want, tc.want)
		}
		t.Logf("fetch at %d: %v", tc.offset, err)
	}
	// The message boundaries still read, and a real oversized message is
	// still ErrMessageTooLarge.
	if set, err := c.Fetch("t", 0, 0, 300<<10); err != nil || !bytes.Equal(set, log) {
		t.Fatalf("fetch at 0: %d bytes, %v", len(set), err)
	}
	if _, err := c.Fetch("t", 0, start1, 50); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("fetch of the 109-byte message with 50 bytes: %v, want ErrMessageTooLarge", err)
	}
	it := NewPartitionIterator(c, "t", 0, 12, 300<<10)
	if it.Next(context.Background()) || !errors.Is(it.Err(), ErrNotMessageStart) {
		t.Fatalf("iterator from 12: %v, want ErrNotMessageStart", it.Err())
	}
	res, err := c.MultiFetch([]protocol.FetchRequest{{Topic: "t", Offset: 17, MaxSize: 1000}, {Topic: "t", Offset: 0, MaxSize: 1000}})
	if err != nil || !errors.Is(res[0].Err, ErrNotMessageStart) || res[1].Err != nil {
		t.Fatalf("multifetch: %v, %v", res, err)
	}
}

// TestFetchAhead: a full answer sends the fetch that follows it at once,
// and that fetch is answered once, to the Fetch that asks for it; any other
// request first drops its answer and gets its own.
func TestFetchAhead(t *testing.T) {
	b := &memBroker{log: setOf(0, 100)} // 21-byte messages
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	defer c.Close()
	served := func() int { b.mu.Lock(); defer b.mu.Unlock(); return b.fetches }
	// 1000 bytes hold 47 whole messages (987 bytes): the next fetch is at 987.
	set, err := c.FetchAhead("t", 0, 0, 1000)
	if err != nil || !bytes.Equal(set, b.log[:1000]) || !c.inFlight || c.ahead.Offset != 987 {
		t.Fatalf("FetchAhead at 0: %d bytes, %v, ahead %v at %d (want 1000 bytes and 987 ahead)", len(set), err, c.inFlight, c.ahead.Offset)
	}
	set, err = c.Fetch("t", 0, 987, 1000)
	if err != nil || !bytes.Equal(set, b.log[987:1987]) || served() != 2 || c.inFlight {
		t.Fatalf("the fetch sent ahead: %d bytes, %v, %d fetches served (want 1000 bytes, 2)", len(set), err, served())
	}
	// An answer shorter than the fetch size (caught up) sends nothing ahead.
	if set, err = c.FetchAhead("t", 0, 1974, 1000); err != nil || len(set) != 126 || c.inFlight {
		t.Fatalf("FetchAhead at the end: %v, ahead %v", err, c.inFlight)
	}
	// A fetch at another offset, then OFFSETS, after an unused fetch ahead.
	c.FetchAhead("t", 0, 0, 1000)
	if set, err = c.Fetch("t", 0, 42, 42); err != nil || !bytes.Equal(set, b.log[42:84]) {
		t.Fatalf("fetch after an unused fetch ahead: %q, %v", set, err)
	}
	c.FetchAhead("t", 0, 0, 1000)
	if o, err := c.LatestOffset("t", 0); err != nil || o != int64(len(b.log)) {
		t.Fatalf("offsets after an unused fetch ahead: %d, %v", o, err)
	}
	if served() != 8 { // 3, then 2 + the one at 42, then 2
		t.Fatalf("%d fetches served, want 8", served())
	}
	// A fetch ahead whose connection broke is asked again.
	c.FetchAhead("t", 0, 0, 1000)
	c.conn.Close()
	if set, err = c.Fetch("t", 0, 987, 1000); err != nil || !bytes.Equal(set, b.log[987:1987]) {
		t.Fatalf("fetch ahead on a broken connection: %d bytes, %v", len(set), err)
	}
}

// TestIteratorFetchesAhead: a partition read in order takes every full
// fetch's successor from a fetch sent ahead, and asks for each offset once.
func TestIteratorFetchesAhead(t *testing.T) {
	b := &memBroker{log: setOf(0, 1000)}
	c := NewSimpleConsumer(b.serve(t), 5*time.Second)
	defer c.Close()
	it := NewPartitionIterator(c, "t", 0, 0, 1000)
	for i := range 1000 {
		if !it.Next(context.Background()) || !bytes.Equal(it.Payload(), payloadN(i)) {
			t.Fatalf("message %d: %q, %v", i, it.Payload(), it.Err())
		}
	}
	b.mu.Lock()
	served := b.fetches
	b.mu.Unlock()
	whole := 1000 / message.SizeV0(len(payloadN(0))) * message.SizeV0(len(payloadN(0)))
	if want := (len(b.log) + whole - 1) / whole; served != want || it.Fetches() != int64(want) {
		t.Fatalf("%d fetches served, %d made, want %d (one per %d bytes)", served, it.Fetches(), want, whole)
	}
}

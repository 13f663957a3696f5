package message

import (
	"errors"
	"fmt"
	"testing"
)

// PlainPrefix takes the whole uncompressed messages with right CRCs at the
// start of a set and stops at the first message it leaves to the full
// checks. The bytes, with their arithmetic:
//
//	V0 "ab":   4 length + 1 magic + 4 CRC + 2 = 11 bytes, at 0
//	V1 "xyz":  4 + 1 magic + 1 attributes 0 + 4 CRC + 3 = 13 bytes, at 11
//	V0 "":     4 + 1 + 4 + 0 = 9 bytes, at 24 (shorter than a V1 header: left to Next)
func TestPlainPrefixFixedBytes(t *testing.T) {
	set := AppendV0(nil, []byte("ab"))
	set = AppendV1(set, CodecNone, []byte("xyz"))
	if len(set) != 24 {
		t.Fatalf("set is %d bytes, want 11 + 13 = 24", len(set))
	}
	if n := PlainPrefix(set); n != 24 {
		t.Fatalf("PlainPrefix = %d, want 24", n)
	}
	withEmpty := AppendV0(append([]byte(nil), set...), nil)
	if n := PlainPrefix(withEmpty); n != 24 {
		t.Fatalf("before an empty V0 message: %d, want 24", n)
	}
	for cut := 0; cut < 24; cut++ { // a partial tail stops it at the last whole message
		want := 0
		if cut >= 11 {
			want = 11
		}
		if n := PlainPrefix(set[:cut]); n != want {
			t.Fatalf("PlainPrefix of the first %d bytes = %d, want %d", cut, n, want)
		}
	}
	for i := range set { // any flipped bit stops it at (or before) the message it is in
		bad := append([]byte(nil), set...)
		bad[i] ^= 0x10
		limit := 0
		if i >= 11 {
			limit = 11
		}
		if n := PlainPrefix(bad); n > limit {
			t.Fatalf("a bit flipped at byte %d: PlainPrefix = %d, beyond %d", i, n, limit)
		}
	}
	wrapped, err := AppendCompressed(append([]byte(nil), set[:11]...), CodecGzip, set[11:])
	if err != nil {
		t.Fatal(err)
	}
	if n := PlainPrefix(wrapped); n != 11 {
		t.Fatalf("before a wrapper: %d, want 11", n)
	}
}

// The deep iterator hands out the runs that PlainPrefix checked by their
// lengths alone, plainChunk bytes at a time, and everything else through
// the full checks: over a set of several chunks with a wrapper, an empty
// message and a bad CRC inside, it yields what a walk with Iterator,
// Valid and Unpack yields, with the same offsets, stops at the bad
// message with Resume at its offset, and goes on after SkipBad.
func TestDeepIteratorPlainRunsAcrossChunks(t *testing.T) {
	payload := func(i int) []byte { return fmt.Appendf(make([]byte, 0, 200), "%0200d", i) }
	var set []byte
	var badAt int
	for i := range 400 { // 400 × 209 bytes: about 5 chunks
		switch i {
		case 120:
			inner := AppendV0(AppendV0(nil, payload(1000)), payload(1001))
			set, _ = AppendCompressed(set, CodecSnappy, inner)
		case 200:
			set = AppendV0(set, nil)
		case 300:
			badAt = len(set)
			set = AppendV0(set, payload(i))
			set[badAt+HeaderSizeV0] ^= 1
		default:
			set = AppendV1(set, CodecNone, payload(i))
		}
	}
	// The reference: Iterator, Valid, Unpack; every message's offset and
	// next offset, up to the bad one.
	type seen struct {
		payload   string
		off, next int64
	}
	var want []seen
	it := NewIterator(set, 1000)
	for it.Next() && it.Offset() != 1000+int64(badAt) {
		m := it.Message()
		if !m.Valid() {
			t.Fatalf("reference: message at %d invalid", it.Offset())
		}
		if m.Codec() == CodecNone {
			want = append(want, seen{string(m.Payload()), it.Offset(), it.NextOffset()})
			continue
		}
		inner, err := Unpack(nil, m)
		if err != nil {
			t.Fatal(err)
		}
		in := NewIterator(inner, 0)
		for in.Next() {
			next := it.Offset()
			if in.Remaining() == 0 {
				next = it.NextOffset()
			}
			want = append(want, seen{string(in.Message().Payload()), it.Offset(), next})
		}
	}
	d := NewDeepIterator(set, 1000)
	for i, w := range want {
		if !d.Next() {
			t.Fatalf("message %d: Next false, %v", i, d.Err())
		}
		if got := (seen{string(d.Message().Payload()), d.Offset(), d.NextOffset()}); got != w || d.Resume() != w.next {
			t.Fatalf("message %d: %.12q at %d next %d resume %d, want %.12q at %d next %d", i, got.payload, got.off, got.next, d.Resume(), w.payload, w.off, w.next)
		}
	}
	if d.Next() || !errors.Is(d.Err(), ErrChecksum) {
		t.Fatalf("at the bad message: Next went on, err %v", d.Err())
	}
	if d.Resume() != 1000+int64(badAt) {
		t.Fatalf("Resume after the bad message = %d, want its offset %d", d.Resume(), 1000+badAt)
	}
	if !d.SkipBad() {
		t.Fatal("SkipBad refused a CRC mismatch")
	}
	rest := 0
	for d.Next() {
		rest++
	}
	if d.Err() != nil || rest != 99 || d.Resume() != 1000+int64(len(set)) {
		t.Fatalf("after SkipBad: %d messages, err %v, resume %d; want 99, nil, %d", rest, d.Err(), d.Resume(), 1000+len(set))
	}
}

// The hot path is real and never hands out an unchecked message: after the
// first Next of a set of plain messages, NextChecked (lengths only) takes
// the rest of the first plainChunk bytes on its own, and it stops in front
// of a message whose CRC is wrong, which Next then reports.
// 100 V1 messages of 200 bytes are 210 bytes each: the first chunk of
// 16,384 bytes ends at the first boundary at or past it, 79 × 210 = 16,590,
// so NextChecked takes messages 1..78 after Next took message 0.
func TestNextCheckedTakesOnlyCheckedRuns(t *testing.T) {
	payload := make([]byte, 200)
	var set []byte
	for range 100 {
		set = AppendV1(set, CodecNone, payload)
	}
	d := NewDeepIterator(set, 0)
	if !d.Next() {
		t.Fatal(d.Err())
	}
	taken := 0
	for d.NextChecked() {
		taken++
	}
	if taken != 78 {
		t.Fatalf("NextChecked took %d messages after the first Next, want 78 (79 in the first chunk)", taken)
	}
	for n := 79; d.Next(); n++ { // the next chunk is checked by Next, then handed out the same way
		if n >= 100 {
			t.Fatal("more messages than the set holds")
		}
	}
	bad := append([]byte(nil), set...)
	bad[40*210+HeaderSizeV1] ^= 1 // a payload byte of message 40
	d = NewDeepIterator(bad, 0)
	d.Next()
	taken = 0
	for d.NextChecked() {
		taken++
	}
	if taken != 39 {
		t.Fatalf("NextChecked took %d messages, want the 39 before the bad one", taken)
	}
	if d.Next() || !errors.Is(d.Err(), ErrChecksum) || d.Resume() != 40*210 {
		t.Fatalf("at the bad message: err %v, resume %d; want ErrChecksum at %d", d.Err(), d.Resume(), 40*210)
	}
}

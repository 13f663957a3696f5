package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
)

func buildSet(n, size int) []byte {
	var set []byte
	payload := make([]byte, size)
	for i := 0; i < n; i++ {
		for j := range payload {
			payload[j] = byte(i + j)
		}
		set = AppendV0(set, payload)
	}
	return set
}

// §3.1/§5: a magic-0 message costs 9 bytes on top of its payload.
func TestV0Layout(t *testing.T) {
	payload := []byte("hello")
	m := AppendV0(nil, payload)
	if len(m) != 9+len(payload) || SizeV0(len(payload)) != len(m) {
		t.Fatalf("size %d, want %d", len(m), 9+len(payload))
	}
	if n := binary.BigEndian.Uint32(m); n != uint32(1+4+len(payload)) {
		t.Fatalf("N = %d", n)
	}
	if m[4] != MagicV0 {
		t.Fatalf("magic %d", m[4])
	}
	if crc := binary.BigEndian.Uint32(m[5:9]); crc != crc32.ChecksumIEEE(payload) {
		t.Fatalf("crc %08x", crc)
	}
	msg := Message(m)
	if !bytes.Equal(msg.Payload(), payload) || !msg.Valid() || msg.Codec() != CodecNone {
		t.Fatalf("view: payload %q valid %v codec %v", msg.Payload(), msg.Valid(), msg.Codec())
	}
}

func TestV1Layout(t *testing.T) {
	payload := []byte("zipped?")
	m := Message(AppendV1(nil, CodecGzip, payload))
	if len(m) != HeaderSizeV1+len(payload) {
		t.Fatalf("size %d", len(m))
	}
	if m.Magic() != MagicV1 || m.Codec() != CodecGzip || !m.Valid() || !bytes.Equal(m.Payload(), payload) {
		t.Fatalf("magic %d codec %v valid %v payload %q", m.Magic(), m.Codec(), m.Valid(), m.Payload())
	}
}

// §3.1: offsets are increasing byte positions, not consecutive ids.
func TestIteratorOffsets(t *testing.T) {
	set := buildSet(10, 100)
	it := NewIterator(set, 1000)
	want := int64(1000)
	n := 0
	for it.Next() {
		if it.Offset() != want {
			t.Fatalf("message %d at offset %d, want %d", n, it.Offset(), want)
		}
		if it.NextOffset() != want+109 {
			t.Fatalf("next offset %d", it.NextOffset())
		}
		if !it.Message().Valid() {
			t.Fatalf("message %d invalid", n)
		}
		want = it.NextOffset()
		n++
	}
	if n != 10 || it.Err() != nil || it.Remaining() != 0 {
		t.Fatalf("n=%d err=%v remaining=%d", n, it.Err(), it.Remaining())
	}
}

// A fetch may end in the middle of a message: every cut point yields the
// whole messages before it, no error, and the rest as Remaining.
func TestIteratorPartialTail(t *testing.T) {
	set := buildSet(3, 20) // 29 bytes each
	for cut := 0; cut <= len(set); cut++ {
		it := NewIterator(set[:cut], 0)
		n := 0
		for it.Next() {
			n++
		}
		if it.Err() != nil {
			t.Fatalf("cut %d: %v", cut, it.Err())
		}
		if want := cut / 29; n != want || it.Consumed() != want*29 || it.Remaining() != cut-want*29 {
			t.Fatalf("cut %d: n=%d consumed=%d remaining=%d", cut, n, it.Consumed(), it.Remaining())
		}
	}
}

func TestCorruption(t *testing.T) {
	good := buildSet(3, 20)
	cases := []struct {
		name   string
		mangle func([]byte)
		valid  int
		want   error
	}{
		{"crc flip", func(b []byte) { b[29+9] ^= 0xff }, 29, ErrChecksum},
		{"bad magic", func(b []byte) { b[29+4] = 7 }, 29, ErrBadMagic},
		{"zero length", func(b []byte) { binary.BigEndian.PutUint32(b[58:], 0) }, 58, ErrCorrupt},
		{"negative length", func(b []byte) { binary.BigEndian.PutUint32(b[0:], 0xfffffff0) }, 0, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bytes.Clone(good)
			c.mangle(b)
			valid, _, err := Validate(b)
			if !errors.Is(err, c.want) || valid != c.valid {
				t.Fatalf("valid=%d err=%v, want %d %v", valid, err, c.valid, c.want)
			}
		})
	}
	// A huge length is a partial tail to Validate, a truncation to ValidateWhole.
	b := bytes.Clone(good)
	binary.BigEndian.PutUint32(b[29:], 1<<30)
	if valid, n, err := Validate(b); err != nil || valid != 29 || n != 1 {
		t.Fatalf("huge N: valid=%d n=%d err=%v", valid, n, err)
	}
	if _, err := ValidateWhole(b); !errors.Is(err, ErrTruncated) {
		t.Fatalf("ValidateWhole huge N: %v", err)
	}
	if n, err := ValidateWhole(good); err != nil || n != 3 {
		t.Fatalf("ValidateWhole good: %d %v", n, err)
	}
}

// docs/PROTOCOL.md §2: inner messages of a wrapper report the wrapper's start as next
// offset, the last one the offset after it, so a mid-wrapper commit replays it.
func TestDeepIteratorCompressed(t *testing.T) {
	inner := buildSet(3, 10)
	w, err := Compress(CodecGzip, inner)
	if err != nil {
		t.Fatal(err)
	}
	set := AppendV0(nil, []byte("plain"))
	wOff := int64(len(set))
	set = append(set, w...)
	end := int64(len(set))
	d := NewDeepIterator(set, 0)
	var nexts []int64
	var payloads [][]byte
	for d.Next() {
		nexts = append(nexts, d.NextOffset())
		payloads = append(payloads, bytes.Clone(d.Message().Payload()))
	}
	if d.Err() != nil {
		t.Fatal(d.Err())
	}
	want := []int64{wOff, wOff, wOff, end}
	if len(nexts) != 4 {
		t.Fatalf("got %d messages", len(nexts))
	}
	for i := range want {
		if nexts[i] != want[i] {
			t.Fatalf("next offsets %v, want %v", nexts, want)
		}
	}
	if string(payloads[0]) != "plain" || len(payloads[3]) != 10 {
		t.Fatalf("payloads %q", payloads)
	}
	// A flipped byte in the compressed payload fails the wrapper's CRC.
	set[len(set)-1] ^= 1
	d = NewDeepIterator(set, 0)
	for d.Next() {
	}
	if !errors.Is(d.Err(), ErrChecksum) {
		t.Fatalf("err %v", d.Err())
	}
	// Codec bits 3 name no codec in any Kafka version (snappy, 2, is
	// supported: see compress_test.go).
	if _, err := Compress(Codec(3), inner); !errors.Is(err, ErrUnsupportedCodec) {
		t.Fatalf("codec 3: %v", err)
	}
}

// The hot path allocates nothing per message.
func TestIteratorAllocs(t *testing.T) {
	set := buildSet(100, 200)
	allocs := testing.AllocsPerRun(10, func() {
		it := NewIterator(set, 0)
		for it.Next() {
			_ = it.Message().Valid()
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per iteration of 100 messages", allocs)
	}
	buf := make([]byte, 0, 64*1024)
	p := make([]byte, 200)
	allocs = testing.AllocsPerRun(10, func() {
		buf = buf[:0]
		for i := 0; i < 50; i++ {
			buf = AppendV0(buf, p)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations appending 50 messages", allocs)
	}
}

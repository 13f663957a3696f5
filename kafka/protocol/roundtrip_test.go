package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// frame encodes req and checks the frame's size and id fields, returning the
// body.
func frame(t *testing.T, req Request) []byte {
	t.Helper()
	b := req.AppendTo(nil)
	if len(b) < 6 {
		t.Fatalf("%T encoded to %d bytes", req, len(b))
	}
	size := int(b[0])<<24 | int(b[1])<<16 | int(b[2])<<8 | int(b[3])
	if size != len(b)-4 {
		t.Fatalf("%T: size field %d, frame has %d bytes after it", req, size, len(b)-4)
	}
	if id := int16(b[4])<<8 | int16(b[5]); id != req.RequestID() {
		t.Fatalf("%T: id %d, want %d", req, id, req.RequestID())
	}
	return b[6:]
}

func TestProduceRoundTrip(t *testing.T) {
	for _, p := range []ProduceRequest{
		{Topic: "test", Partition: 3, Messages: []byte{0, 0, 0, 6, 0, 1, 2, 3, 4, 'x'}},
		{Topic: "", Partition: RandomPartition, Messages: []byte{}},
		{Topic: "a.b_c-d", Partition: 0, Messages: bytes.Repeat([]byte{7}, 1000)},
	} {
		body := frame(t, p)
		got, err := noDecoder.Produce(body)
		if err != nil {
			t.Fatalf("noDecoder.Produce(%+v): %v", p, err)
		}
		if got.Topic != p.Topic || got.Partition != p.Partition || !bytes.Equal(got.Messages, p.Messages) {
			t.Fatalf("round trip: got %+v, want %+v", got, p)
		}
		// §3.1: the message set is not copied: it is a window on the body.
		if len(got.Messages) > 0 && &got.Messages[0] != &body[len(body)-len(p.Messages)] {
			t.Fatal("Messages does not alias the request body")
		}
	}
}

// A PRODUCE framed in place (AppendProduceHeader, the set appended by the
// caller, Finish) after bytes already in the buffer: the fixed bytes, and
// the same bytes as AppendTo.
func TestProduceFramedInPlace(t *testing.T) {
	dst := []byte("prev")
	dst, f := AppendProduceHeader(dst, "t", 2)
	dst = append(dst, "ab"...)
	dst = append(dst, 'c') // the set may arrive in pieces
	dst = f.Finish(dst)
	want := []byte("prev" +
		"\x00\x00\x00\x10" + // size: 2 id + 3 topic + 4 partition + 4 set size + 3 set = 16
		"\x00\x00" + // id 0, PRODUCE
		"\x00\x01t" + // topic: int16 length 1, "t"
		"\x00\x00\x00\x02" + // partition 2
		"\x00\x00\x00\x03" + // set size 3
		"abc") // the set, not interpreted here
	if !bytes.Equal(dst, want) {
		t.Fatalf("framed in place:\n%x\nwant\n%x", dst, want)
	}
	if viaAppendTo := (ProduceRequest{Topic: "t", Partition: 2, Messages: []byte("abc")}).AppendTo([]byte("prev")); !bytes.Equal(viaAppendTo, want) {
		t.Fatalf("AppendTo:\n%x\nwant\n%x", viaAppendTo, want)
	}
}

func TestFetchRoundTrip(t *testing.T) {
	for _, f := range []FetchRequest{
		{Topic: "test", Partition: 1, Offset: 1 << 40, MaxSize: 300 << 10},
		{Topic: "x", Partition: -7, Offset: -1, MaxSize: -1}, // semantically bad, syntactically fine
	} {
		got, err := noDecoder.Fetch(frame(t, f))
		if err != nil || got != f {
			t.Fatalf("Fetch: got %+v, %v; want %+v", got, err, f)
		}
	}
}

func TestMultiFetchRoundTrip(t *testing.T) {
	for _, m := range []MultiFetchRequest{
		{Fetches: []FetchRequest{{Topic: "a", Partition: 0, Offset: 10, MaxSize: 100}, {Topic: "bb", Partition: 2, Offset: 0, MaxSize: 1}}},
		{Fetches: []FetchRequest{}},
	} {
		got, err := noDecoder.MultiFetch(frame(t, m))
		if err != nil || !reflect.DeepEqual(got, m) {
			t.Fatalf("MultiFetch: got %+v, %v; want %+v", got, err, m)
		}
	}
}

func TestMultiProduceRoundTrip(t *testing.T) {
	m := MultiProduceRequest{Produces: []ProduceRequest{
		{Topic: "a", Partition: 0, Messages: []byte("set one")},
		{Topic: "b", Partition: -1, Messages: []byte{}},
		{Topic: "a", Partition: 1, Messages: []byte("set three")},
	}}
	got, err := noDecoder.MultiProduce(frame(t, m))
	if err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("MultiProduce: got %+v, %v; want %+v", got, err, m)
	}
}

func TestOffsetsRoundTrip(t *testing.T) {
	for _, o := range []OffsetsRequest{
		{Topic: "test", Partition: 0, Time: OffsetsLatest, MaxNumOffsets: 1},
		{Topic: "test", Partition: 5, Time: 1700000000000, MaxNumOffsets: 100},
	} {
		got, err := noDecoder.Offsets(frame(t, o))
		if err != nil || got != o {
			t.Fatalf("Offsets: got %+v, %v; want %+v", got, err, o)
		}
	}
	offs := []int64{1 << 33, 536870912, 0}
	resp := AppendOffsetsResponse(nil, ErrNone, offs)
	code, payload, _, err := ReadResponse(bytes.NewReader(resp), nil)
	if err != nil || code != ErrNone {
		t.Fatalf("ReadResponse: %v, %v", code, err)
	}
	got, err := DecodeOffsetsResponse(payload)
	if err != nil || !reflect.DeepEqual(got, offs) {
		t.Fatalf("DecodeOffsetsResponse: got %v, %v; want %v", got, err, offs)
	}
	if _, err := DecodeOffsetsResponse([]byte{0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("count 2 with one offset: %v, want ErrMalformed", err)
	}
}

func TestMultiFetchResponse(t *testing.T) {
	sets := [][]byte{[]byte("first set"), {}, []byte("third")}
	codes := []ErrorCode{ErrNone, ErrOffsetOutOfRange, ErrNone}
	var payload []byte
	for i, s := range sets {
		payload = AppendResponseHeader(payload, len(s), codes[i])
		payload = append(payload, s...)
	}
	resp := AppendResponseHeader(nil, len(payload), ErrNone)
	resp = append(resp, payload...)
	code, p, _, err := ReadResponse(bufio.NewReader(bytes.NewReader(resp)), nil)
	if err != nil || code != ErrNone {
		t.Fatalf("ReadResponse: %v %v", code, err)
	}
	n := 0
	err = DecodeMultiFetchResponse(p, func(i int, code ErrorCode, set []byte) error {
		if i != n || code != codes[i] || !bytes.Equal(set, sets[i]) {
			t.Errorf("part %d: code %v set %q; want part %d code %v set %q", i, code, set, n, codes[n], sets[n])
		}
		n++
		return nil
	})
	if err != nil || n != len(sets) {
		t.Fatalf("DecodeMultiFetchResponse: %d parts, %v", n, err)
	}
	// A part claiming more bytes than remain is malformed, not a panic.
	bad := AppendResponseHeader(nil, 100, ErrNone)
	if err := DecodeMultiFetchResponse(bad, func(int, ErrorCode, []byte) error { return nil }); !errors.Is(err, ErrMalformed) {
		t.Fatalf("truncated part: %v, want ErrMalformed", err)
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	good := ProduceRequest{Topic: "t", Partition: 0, Messages: []byte("abc")}.AppendTo(nil)[6:]
	cases := []struct {
		name string
		id   int16
		body []byte
	}{
		{"empty produce", RequestProduce, nil},
		{"trailing garbage", RequestProduce, append(append([]byte{}, good...), 0)},
		{"truncated set", RequestProduce, good[:len(good)-1]},
		{"negative topic length", RequestFetch, []byte{0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"negative set size", RequestProduce, []byte{0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xfe}},
		{"negative count", RequestMultiFetch, []byte{0x80, 0x00}},
		{"count beyond body", RequestMultiProduce, []byte{0x7f, 0xff, 0, 0}},
		{"short offsets", RequestOffsets, []byte{0, 1, 'x', 0, 0, 0, 0}},
	}
	for _, c := range cases {
		if _, err := DecodeRequest(c.id, c.body); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", c.name, err)
		}
	}
	if _, err := DecodeRequest(42, nil); !errors.Is(err, ErrUnknownRequest) { // 5-9 are replication's
		t.Errorf("id 42: err = %v, want ErrUnknownRequest", err)
	}
}

func TestErrorCode(t *testing.T) {
	if ErrNone.Err() != nil {
		t.Fatal("ErrNone.Err() != nil")
	}
	var err error = ErrOffsetOutOfRange
	if !errors.Is(err, ErrOffsetOutOfRange) || ErrOffsetOutOfRange.Err() == nil {
		t.Fatal("ErrOffsetOutOfRange is not an error")
	}
	for c := ErrUnknown; c <= ErrInvalidFetchSize+1; c++ {
		if c.Error() == "" {
			t.Fatalf("code %d has no message", c)
		}
	}
}

// Encoders append to the caller's buffer and decoders slice into the body:
// no allocation per request on the hot path.
func TestNoAllocs(t *testing.T) {
	set := bytes.Repeat([]byte{1}, 200*50)
	p := ProduceRequest{Topic: "test", Partition: 0, Messages: set}
	mf := MultiFetchRequest{Fetches: []FetchRequest{{Topic: "test", MaxSize: 300 << 10}, {Topic: "test", Partition: 1}}}
	buf := make([]byte, 0, 64<<10)
	if n := testing.AllocsPerRun(100, func() { buf = p.AppendTo(buf[:0]) }); n != 0 {
		t.Errorf("ProduceRequest.AppendTo: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		b, f := AppendProduceHeader(buf[:0], "test", 0)
		buf = f.Finish(append(b, set...))
	}); n != 0 {
		t.Errorf("AppendProduceHeader and Finish: %v allocs", n)
	}
	var d Decoder
	body := p.AppendTo(nil)[6:]
	_, _ = d.Produce(body) // interns "test"
	if n := testing.AllocsPerRun(100, func() {
		if _, err := d.Produce(body); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Decoder.Produce: %v allocs", n)
	}
	mbody := mf.AppendTo(nil)[6:]
	_, _ = d.MultiFetch(mbody)
	if n := testing.AllocsPerRun(100, func() {
		if _, err := d.MultiFetch(mbody); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Decoder.MultiFetch: %v allocs", n)
	}
	stream := bytes.Repeat(p.AppendTo(nil), 101)
	r := bytes.NewReader(stream)
	rbuf := make([]byte, 0, 64<<10)
	if n := testing.AllocsPerRun(100, func() {
		var err error
		if _, _, rbuf, err = ReadRequest(r, rbuf, 0); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("ReadRequest: %v allocs", n)
	}
}

// noDecoder decodes without a Decoder's memory, as DecodeRequest does.
var noDecoder *Decoder

// TestDecoderTopics: a Decoder names each request's own topic whatever it
// named last (the one-entry check in front of the intern table), and
// alternating between interned topics allocates nothing.
func TestDecoderTopics(t *testing.T) {
	var d Decoder
	bodies := map[string][]byte{}
	for _, topic := range []string{"a", "b", "", "ab"} {
		bodies[topic] = ProduceRequest{Topic: topic, Partition: 1, Messages: []byte{9}}.AppendTo(nil)[6:]
	}
	for _, topic := range []string{"a", "a", "b", "a", "", "ab", "a", "", "b", "b", "ab"} {
		p, err := d.Produce(bodies[topic])
		if err != nil {
			t.Fatal(err)
		}
		if p.Topic != topic {
			t.Fatalf("decoded topic %q, want %q", p.Topic, topic)
		}
	}
	if n := testing.AllocsPerRun(100, func() {
		for _, topic := range []string{"a", "b", "ab"} {
			if _, err := d.Produce(bodies[topic]); err != nil {
				t.Fatal(err)
			}
		}
	}); n != 0 {
		t.Errorf("Decoder.Produce alternating topics: %v allocs", n)
	}
}

// TestProduceFastPath: Decoder.Produce's one-pass read of a well-formed
// body and the reader it falls back to accept the same bodies and read the
// same request from them: every truncation of a few bodies, and every
// value of each of their first 16 bytes and last 4.
func TestProduceFastPath(t *testing.T) {
	var bodies [][]byte
	for _, p := range []ProduceRequest{
		{Topic: "t", Partition: 3, Messages: bytes.Repeat([]byte{7}, 20)},
		{Topic: "", Partition: -1, Messages: nil},
		{Topic: "abcdefgh", Partition: 1 << 30, Messages: []byte{1, 2}},
	} {
		b := p.AppendTo(nil)[6:]
		for n := 0; n <= len(b)+2; n++ {
			bodies = append(bodies, append(b[:min(n, len(b)):min(n, len(b))], make([]byte, max(0, n-len(b)))...))
		}
		for i := range min(16, len(b)) {
			for v := range 256 {
				m := bytes.Clone(b)
				m[i] = byte(v)
				bodies = append(bodies, m)
				m = bytes.Clone(b)
				m[len(m)-1-i%4] = byte(v)
				bodies = append(bodies, m)
			}
		}
	}
	var d, slow Decoder
	for _, b := range bodies {
		got, err := d.Produce(b)
		want, werr := slow.produceSlow(b)
		if (err == nil) != (werr == nil) {
			t.Fatalf("body %x: Produce error %v, the reader's %v", b, err, werr)
		}
		if err != nil {
			continue
		}
		if got.Topic != want.Topic || got.Partition != want.Partition || !bytes.Equal(got.Messages, want.Messages) ||
			cap(got.Messages) != len(got.Messages) {
			t.Fatalf("body %x: Produce read %+v (cap %d), the reader %+v", b, got, cap(got.Messages), want)
		}
	}
}

package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestReadRequestStream(t *testing.T) {
	reqs := []Request{
		ProduceRequest{Topic: "t", Partition: 0, Messages: []byte("hello")},
		FetchRequest{Topic: "t", Offset: 5, MaxSize: 10},
		MultiFetchRequest{Fetches: []FetchRequest{{Topic: "t"}}},
		MultiProduceRequest{Produces: []ProduceRequest{{Topic: "u", Messages: []byte("x")}}},
		OffsetsRequest{Topic: "t", Time: OffsetsEarliest, MaxNumOffsets: 3},
		ProduceRequest{Topic: "big", Messages: bytes.Repeat([]byte("z"), 200<<10)}, // grows the buffer
	}
	var stream []byte
	for _, r := range reqs {
		stream = r.AppendTo(stream)
	}
	br := bufio.NewReaderSize(bytes.NewReader(stream), 1024)
	var buf []byte
	for i, want := range reqs {
		id, body, nb, err := ReadRequest(br, buf, 0)
		buf = nb
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		got, err := DecodeRequest(id, body)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if !bytes.Equal(got.AppendTo(nil), want.AppendTo(nil)) {
			t.Fatalf("request %d: got %+v, want %+v", i, got, want)
		}
	}
	if _, _, _, err := ReadRequest(br, buf, 0); err != io.EOF {
		t.Fatalf("after the last request: %v, want io.EOF", err)
	}
}

func TestReadRequestErrors(t *testing.T) {
	valid := FetchRequest{Topic: "t", MaxSize: 1}.AppendTo(nil)
	cases := []struct {
		name  string
		in    []byte
		max   int
		want  error
		isEOF bool
	}{
		{"too large", []byte{0x00, 0x10, 0x00, 0x01, 0, 0}, 1 << 20, ErrRequestTooLarge, false},
		{"too large default", []byte{0x7f, 0xff, 0xff, 0xff, 0, 0}, 0, ErrRequestTooLarge, false},
		{"negative size", []byte{0xff, 0xff, 0xff, 0xff, 0, 0}, 0, ErrMalformed, false},
		{"size below id", []byte{0, 0, 0, 1, 0}, 0, ErrMalformed, false},
		{"unknown id", []byte{0, 0, 0, 2, 0, 42}, 0, ErrUnknownRequest, false}, // 5-9 are replication's (docs/PROTOCOL.md §10)
		{"negative id", []byte{0, 0, 0, 2, 0xff, 0xff}, 0, ErrUnknownRequest, false},
		{"truncated size", []byte{0, 0}, 0, io.ErrUnexpectedEOF, false},
		{"truncated body", valid[:len(valid)-3], 0, io.ErrUnexpectedEOF, false},
		{"empty", nil, 0, io.EOF, true},
	}
	for _, c := range cases {
		_, _, _, err := ReadRequest(bytes.NewReader(c.in), nil, c.max)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		if c.isEOF != (err == io.EOF) {
			t.Errorf("%s: err = %v: clean EOF must be exactly io.EOF and only then", c.name, err)
		}
	}
	// A lying size field (100 MB announced, 10 bytes sent) must not allocate
	// 100 MB before the bytes arrive.
	lie := append([]byte{0x05, 0xf5, 0xe1, 0x00, 0, 0}, make([]byte, 10)...)
	_, _, buf, err := ReadRequest(bytes.NewReader(lie), nil, 0)
	if !errors.Is(err, io.ErrUnexpectedEOF) || cap(buf) > 1<<20 {
		t.Fatalf("lying size: err %v, buffer grew to %d bytes", err, cap(buf))
	}
}

func TestReadResponseErrors(t *testing.T) {
	for _, in := range [][]byte{
		{0, 0, 0, 1, 0, 0},          // size below the error code
		{0x7f, 0xff, 0xff, 0xff, 0}, // truncated header
		{0, 0, 0, 10, 0, 0, 1},      // truncated payload
	} {
		if _, _, _, err := ReadResponse(bytes.NewReader(in), nil); err == nil || err == io.EOF {
			t.Errorf("ReadResponse(%x): err = %v, want an error", in, err)
		}
	}
	resp := AppendResponseHeader(nil, 0, ErrInvalidFetchSize)
	code, payload, _, err := ReadResponse(bytes.NewReader(resp), nil)
	if err != nil || code != ErrInvalidFetchSize || len(payload) != 0 {
		t.Fatalf("empty error response: %v %q %v", code, payload, err)
	}
}

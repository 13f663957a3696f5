package broker_test

import (
	"bytes"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// smallBody is conn.go's smallRequestBytes, which is also its read buffer's size.
const smallBody = 64 << 10

// Small bodies are served where they lie in the connection's read buffer
// (conn.go readBody): requests of every size up to the largest small body,
// sent back to back so that they straddle the buffer's end, and sent a
// byte at a time so that every body is completed by a later read, are
// each appended whole and in order.
func TestSmallBodiesInPlace(t *testing.T) {
	tb := startBroker(t, nil)
	var want, stream []byte
	// Message sets whose PRODUCE requests are 50 bytes to smallRequestBytes.
	overhead := len(protocol.ProduceRequest{Topic: "inplace", Messages: nil}.AppendTo(nil)) - protocol.RequestHeaderSize
	for i, size := range []int{1, 17, 200, 1000, 4000, 20000, 60000, smallBody - overhead - 9, 3, 500} {
		set := messageSet(i, 1, size)
		want = append(want, set...)
		stream = protocol.ProduceRequest{Topic: "inplace", Messages: set}.AppendTo(stream)
	}
	if n := len(stream); n < 2*smallBody {
		t.Fatalf("the test's stream is %d bytes, want it to cross the %d-byte read buffer twice", n, smallBody)
	}
	cl := dial(t, tb.Addr())
	cl.write(stream) // all at once
	cl.sync()
	slow := dial(t, tb.Addr())
	for i := range stream[:20000] { // the first requests a byte per write
		slow.write(stream[i : i+1])
	}
	slow.write(stream[20000:])
	slow.sync()
	tb.Flush("inplace", 0)
	code, got := cl.fetch("inplace", 0, 0, 1<<20)
	if code != protocol.ErrNone || !bytes.Equal(got, append(append([]byte{}, want...), want...)) {
		t.Fatalf("fetch: code %v, %d bytes; want the 20 messages produced, twice the %d bytes", code, len(got), len(want))
	}
	payloads(t, got) // every CRC checks
}

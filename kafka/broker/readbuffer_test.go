package broker_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// bulk writes rounds writes of n one-message PRODUCEs of 200 bytes each to
// topic-0: 225 bytes and the topic's name a request (size 4 + type 2 +
// topic 2 + len(topic) + partition 4 + set size 4 + message 9 + 200), n of
// them in one write(2),
// faster than the broker reads them, so that its reads fill their room.
func bulk(cl *client, topic string, n, rounds int) {
	set := messageSet(0, 1, 200)
	var b []byte
	for range n {
		b = protocol.ProduceRequest{Topic: topic, Partition: 0, Messages: set}.AppendTo(b)
	}
	for range rounds {
		cl.write(b)
	}
}

// A producer of unanswered requests that outruns the 64 KiB read buffer gets
// the grown one (readbuffer.go), once, and every message sent before and
// after the change is appended; one that never fills it keeps its 64 KiB.
func TestReadBufferGrowsForAProducerThatOutrunsIt(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "0"})

	slow := dial(t, tb.Addr())
	paced(slow, "paced", 200)
	waitEnd(t, getLog(t, tb, "paced"), 200, 200, 10*time.Second)
	if grown, _ := tb.ReadBufferStats(); grown != 0 {
		t.Fatalf("%d read buffers grown after 200 paced 230-byte requests, want 0", grown)
	}

	fast := dial(t, tb.Addr())
	const n, rounds = 4096, 8 // 4096 × 230 bytes ("bulky"): 942,080 bytes a write
	bulk(fast, "bulky", n, rounds)
	waitEnd(t, getLog(t, tb, "bulky"), n*rounds, 200, 30*time.Second)
	bulk(fast, "bulky", n, rounds) // and after the change
	waitEnd(t, getLog(t, tb, "bulky"), 2*n*rounds, 200, 30*time.Second)
	if grown, refused := tb.ReadBufferStats(); grown != 1 || refused != 0 {
		t.Fatalf("read buffers grown %d, refused %d after %d bytes in writes of 942,080; want 1 and 0", grown, refused, 2*n*rounds*230)
	}
}

// The grown buffers are charged to queued.max.request.bytes within its
// reserve, an eighth: with a budget of 4 MiB (reserve 512 KiB) no 1 MiB
// buffer fits, the producer keeps 64 KiB and loses nothing.
func TestReadBufferGrowthWithinTheBudget(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "0",
		"max.socket.request.bytes": "1048576", "queued.max.request.bytes": "4194304"})
	fast := dial(t, tb.Addr())
	const n, rounds = 4096, 8
	bulk(fast, "bulky", n, rounds)
	waitEnd(t, getLog(t, tb, "bulky"), n*rounds, 200, 30*time.Second)
	grown, refused := tb.ReadBufferStats()
	if grown != 0 || refused == 0 {
		t.Fatalf("read buffers grown %d, refused %d with a 512 KiB reserve; want 0 and at least 1", grown, refused)
	}
	if s := tb.MemoryStats(); s.InUse != 0 {
		t.Fatalf("request memory in use %d after the requests were served, want 0", s.InUse)
	}
}

// A producer whose requests do not divide the 64 KiB buffer gets the grown
// one while it is still ahead of the broker: batches of 50 messages of 200
// bytes, 10,473 bytes a request (size 4 + type 2 + topic 2 + 7 + partition
// 4 + set size 4 + 50 × 209), sent in one write that stops inside the last
// request, so that the broker never finds its buffer empty and a full read
// almost never ends on a request's boundary. The part of a request read
// before the change is carried into the grown buffer: the log holds every
// message, each once, in the order sent.
func TestReadBufferGrowsInsideARequest(t *testing.T) {
	tb := startBroker(t, map[string]string{"produce.coalesce.max.us": "0"})
	const batches, batch = 401, 50 // 401 × 10,473 bytes: 4,199,673 bytes
	var stream, want []byte
	for i := range batches {
		set := messageSet(i*batch, batch, 200)
		want = append(want, set...)
		stream = protocol.ProduceRequest{Topic: "batched", Partition: 0, Messages: set}.AppendTo(stream)
	}
	if got := len(stream); got != batches*10473 {
		t.Fatalf("the test's stream is %d bytes, want %d", got, batches*10473)
	}
	cl := dial(t, tb.Addr())
	cut := len(stream) - 5000 // inside the last request
	cl.write(stream[:cut])
	l := getLog(t, tb, "batched")
	waitEnd(t, l, (batches-1)*batch, 200, 30*time.Second)
	if grown, refused := tb.ReadBufferStats(); grown != 1 || refused != 0 {
		t.Fatalf("read buffers grown %d, refused %d after %d bytes in requests of 10,473 with a request's start still buffered; want 1 and 0", grown, refused, cut)
	}
	cl.write(stream[cut:])
	waitEnd(t, l, batches*batch, 200, 30*time.Second)
	tb.Flush("batched", 0)
	var got []byte
	for off := int64(0); off < int64(len(want)); {
		code, part := cl.fetch("batched", 0, off, 1<<20)
		if code != protocol.ErrNone || len(part) == 0 {
			t.Fatalf("fetch at %d of %d: code %v, %d bytes", off, len(want), code, len(part))
		}
		_, used := payloads(t, part) // every CRC checks
		got = append(got, part[:used]...)
		off += int64(used)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the log holds %d bytes that differ from the %d sent", len(got), len(want))
	}
}

package producer

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// rawBroker accepts connections and hands every request to frames exactly
// as its bytes arrived, size field included. It reads nothing but the size
// field, so the comparison below does not depend on any decoder.
func rawBroker(t testing.TB, frames chan<- []byte) string {
	t.Helper()
	return listen(t, "127.0.0.1:0", func(c net.Conn) {
		for {
			var size [4]byte
			if _, err := io.ReadFull(c, size[:]); err != nil {
				return
			}
			frame := make([]byte, 4+int(binary.BigEndian.Uint32(size[:])))
			copy(frame, size[:])
			if _, err := io.ReadFull(c, frame[4:]); err != nil {
				t.Errorf("raw broker: request cut short: %v", err)
				return
			}
			frames <- frame
		}
	})
}

func nextFrame(t *testing.T, frames <-chan []byte) []byte {
	t.Helper()
	select {
	case f := <-frames:
		return f
	case <-time.After(10 * time.Second):
		t.Fatal("no request reached the broker")
		return nil
	}
}

// set is what the producer is expected to put in a PRODUCE for msgs, in
// its default format (magic 1, as 0.7 writes).
func set(msgs ...string) []byte {
	var s []byte
	for _, m := range msgs {
		s = message.Append(s, DefaultConfig().Magic, []byte(m))
	}
	return s
}

// TestProducerSendsTheEncodersBytes checks that every request the producers
// write is byte for byte what protocol's encoder (ProduceRequest.AppendTo,
// MultiProduceRequest.AppendTo) makes of the same input: one encoder per
// request, whichever way the producer frames it.
func TestProducerSendsTheEncodersBytes(t *testing.T) {
	frames := make(chan []byte, 10)
	addr := rawBroker(t, frames)
	cfg := DefaultConfig()
	cfg.BrokerList = brokerList(0, addr)
	p, err := NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	gz := cfg
	gz.Compression = message.CodecGzip
	pz, err := NewSync(gz)
	if err != nil {
		t.Fatal(err)
	}
	defer pz.Close()
	compressed, err := message.Compress(message.CodecGzip, set("one", "two"))
	if err != nil {
		t.Fatal(err)
	}
	big := string(bytes.Repeat([]byte{0xa5}, 70000)) // the request buffer grows mid-set

	cases := []struct {
		name string
		send func() error
		want protocol.Request
	}{
		{"Send, broker picks the partition",
			func() error { return p.Send("topic1", -1, []byte("a"), []byte("hello")) },
			protocol.ProduceRequest{Topic: "topic1", Partition: -1, Messages: set("a", "hello")}},
		{"Send to partition 3",
			func() error { return p.Send("topic1", 3, []byte("x")) },
			protocol.ProduceRequest{Topic: "topic1", Partition: 3, Messages: set("x")}},
		{"Send of nothing",
			func() error { return p.Send("t", 0) },
			protocol.ProduceRequest{Topic: "t", Partition: 0}},
		{"Send of a large message",
			func() error { return p.Send("t", 0, []byte("small"), []byte(big)) },
			protocol.ProduceRequest{Topic: "t", Partition: 0, Messages: set("small", big)}},
		{"SendSet passes the set as is",
			func() error { return p.SendSet("t", 1, []byte("not a message set")) },
			protocol.ProduceRequest{Topic: "t", Partition: 1, Messages: []byte("not a message set")}},
		{"Send, gzip wrapper",
			func() error { return pz.Send("z", 0, []byte("one"), []byte("two")) },
			protocol.ProduceRequest{Topic: "z", Partition: 0, Messages: compressed}},
		{"MultiSend",
			func() error {
				return p.MultiSend(0, []protocol.ProduceRequest{
					{Topic: "x", Partition: 0, Messages: set("A")},
					{Topic: "y", Partition: 1, Messages: set("B", "C")}})
			},
			protocol.MultiProduceRequest{Produces: []protocol.ProduceRequest{
				{Topic: "x", Partition: 0, Messages: set("A")},
				{Topic: "y", Partition: 1, Messages: set("B", "C")}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.send(); err != nil {
				t.Fatal(err)
			}
			got, want := nextFrame(t, frames), c.want.AppendTo(nil)
			if !bytes.Equal(got, want) {
				t.Fatalf("the producer sent\n%x\nthe encoder makes\n%x", got, want)
			}
		})
	}
}

// TestAsyncProducerSendsTheEncodersBytes: a batch of the async producer is
// one MULTIPRODUCE, its sets in the order their first message was queued.
func TestAsyncProducerSendsTheEncodersBytes(t *testing.T) {
	frames := make(chan []byte, 10)
	cfg := DefaultConfig()
	cfg.BrokerList = brokerList(0, rawBroker(t, frames))
	a, err := NewAsync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	for _, m := range []struct {
		topic string
		msg   string
	}{{"a", "a1"}, {"b", "b1"}, {"a", "a2"}} {
		if err := a.Send(m.topic, 0, []byte(m.msg)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	want := protocol.MultiProduceRequest{Produces: []protocol.ProduceRequest{
		{Topic: "a", Partition: 0, Messages: set("a1", "a2")},
		{Topic: "b", Partition: 0, Messages: set("b1")}}}.AppendTo(nil)
	if got := nextFrame(t, frames); !bytes.Equal(got, want) {
		t.Fatalf("the async producer sent\n%x\nthe encoder makes\n%x", got, want)
	}
}

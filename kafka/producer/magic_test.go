package producer

import (
	"bytes"
	"errors"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// Kafka 0.7 writes magic 1 for every message, wrappers and what they hold
// (docs/PROTOCOL.md §2); so does our producer unless message.magic=0.
func TestDefaultFormatIsMagic1(t *testing.T) {
	reqs := make(chan protocol.Request, 10)
	p := newTestProducer(t, brokerList(0, fakeBroker(t, reqs)))
	msgs := [][]byte{[]byte("a"), []byte("hello")}
	if err := p.Send("t", 0, msgs...); err != nil {
		t.Fatal(err)
	}
	r := (<-reqs).(protocol.ProduceRequest)
	// 10 bytes of overhead per magic-1 message: 11 + 15.
	if want := message.Size(message.MagicV1, 1) + message.Size(message.MagicV1, 5); len(r.Messages) != want || want != 26 {
		t.Fatalf("set is %d bytes, want %d", len(r.Messages), want)
	}
	it := message.NewIterator(r.Messages, 0)
	for i := 0; it.Next(); i++ {
		m := it.Message()
		if m.Magic() != message.MagicV1 || m.Codec() != message.CodecNone || !m.Valid() || !bytes.Equal(m.Payload(), msgs[i]) {
			t.Fatalf("message %d: magic %d codec %v payload %q", i, m.Magic(), m.Codec(), m.Payload())
		}
	}
}

// With a codec the inner messages take the configured format; the wrapper
// is magic 1 in both (its attributes hold the codec). compressed.topics
// limits compression to the topics it names.
func TestCompressedTopicsAndInnerFormat(t *testing.T) {
	for _, magic := range []byte{message.MagicV0, message.MagicV1} {
		reqs := make(chan protocol.Request, 10)
		cfg, err := ConfigFromProperties(map[string]string{
			"broker.list":       brokerList(0, fakeBroker(t, reqs)),
			"compression.codec": "2",
			"compressed.topics": " logs ,audit",
			"message.magic":     string('0' + magic),
		})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Magic != magic || len(cfg.CompressedTopics) != 2 || cfg.CompressedTopics[0] != "logs" {
			t.Fatalf("parsed %+v", cfg)
		}
		p, err := NewSync(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for _, topic := range []string{"logs", "other"} {
			if err := p.Send(topic, 0, []byte("x"), []byte("y")); err != nil {
				t.Fatal(err)
			}
			r := (<-reqs).(protocol.ProduceRequest)
			d := message.NewDeepIterator(r.Messages, 0)
			n := 0
			for ; d.Next(); n++ {
				if d.Message().Magic() != magic {
					t.Fatalf("%s: message %d has magic %d, want %d", topic, n, d.Message().Magic(), magic)
				}
			}
			first := message.Message(r.Messages)
			compressed := first.Magic() == message.MagicV1 && first.Codec() == message.CodecSnappy
			if n != 2 || d.Err() != nil || compressed != (topic == "logs") {
				t.Fatalf("%s: %d messages (%v), compressed=%v", topic, n, d.Err(), compressed)
			}
		}
	}
	for _, bad := range []map[string]string{
		{"broker.list": "0:h:1", "message.magic": "2"},
		{"broker.list": "0:h:1", "compressed.topics": "ok,bad/name"},
		{"broker.list": "0:h:1", "compression.codec": "3"},
	} {
		if _, err := ConfigFromProperties(bad); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%v: err %v, want ErrBadConfig", bad, err)
		}
	}
}

// The set of a batch to a replicated topic is built in a buffer of its exact size (figure 6's producer: 50
// messages of 200 bytes, 10,450 bytes), not grown and copied as it fills, and once given back (setPool) the
// next set reuses it: no allocation per batch.
func TestEncodeSetRecycled(t *testing.T) {
	for _, magic := range []byte{message.MagicV0, message.MagicV1} {
		cfg := DefaultConfig()
		cfg.Magic = magic
		p := &SyncProducer{cfg: cfg}
		msgs := make([][]byte, 50)
		for i := range msgs {
			msgs[i] = make([]byte, 200)
		}
		set := p.encodeSet("t", msgs)
		if want := 50 * message.Size(magic, 200); len(set) != want || cap(set) != want {
			t.Errorf("magic %d: set of %d bytes, capacity %d; want both %d", magic, len(set), cap(set), want)
		}
		if n := testing.AllocsPerRun(100, func() { p.encodeSet("t", msgs) }); n != 1 {
			t.Errorf("magic %d: %.1f allocations per set of 50 not given back, want 1", magic, n)
		}
		p.sets.put(set)
		if n := testing.AllocsPerRun(100, func() { p.sets.put(p.encodeSet("t", msgs)) }); n != 0 {
			t.Errorf("magic %d: %.1f allocations per set of 50 given back, want 0", magic, n)
		}
	}
}

package producer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// listen accepts connections on addr ("127.0.0.1:0" for a free port) until
// the test ends, serving each on its own goroutine, and returns the address.
func listen(t testing.TB, addr string, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
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
			go func() {
				defer c.Close()
				serve(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// fakeBroker accepts connections and hands every decoded request to reqs
// (nil: it reads and discards).
func fakeBroker(t testing.TB, reqs chan<- protocol.Request) string {
	t.Helper()
	return fakeBrokerOn(t, "127.0.0.1:0", reqs)
}

// fakeBrokerOn is fakeBroker on a given address.
func fakeBrokerOn(t testing.TB, addr string, reqs chan<- protocol.Request) string {
	t.Helper()
	return listen(t, addr, func(c net.Conn) {
		if reqs == nil {
			io.Copy(io.Discard, c)
			return
		}
		var buf []byte
		for {
			id, body, nb, err := protocol.ReadRequest(c, buf, 0)
			if err != nil {
				return
			}
			buf = nb
			req, err := protocol.DecodeRequest(id, bytes.Clone(body))
			if err != nil {
				t.Errorf("broker: decode request %d: %v", id, err)
				return
			}
			reqs <- req
		}
	})
}

func brokerList(id int, addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("%d:%s:%s", id, host, port)
}

func newTestProducer(t testing.TB, list string) *SyncProducer {
	return newTestProducerMagic(t, list, message.MagicV1)
}

// newTestProducerMagic is newTestProducer writing format magic (message.magic).
func newTestProducerMagic(t testing.TB, list string, magic byte) *SyncProducer {
	cfg := DefaultConfig()
	cfg.BrokerList = list
	cfg.Magic = magic
	return newTestProducerConfig(t, cfg)
}

// newTestProducerConfig is a SyncProducer for cfg, closed when the test ends.
func newTestProducerConfig(t testing.TB, cfg Config) *SyncProducer {
	p, err := NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestSendIsOneProduceWithTheWholeBatch(t *testing.T) {
	reqs := make(chan protocol.Request, 10)
	p := newTestProducerMagic(t, brokerList(0, fakeBroker(t, reqs)), message.MagicV0) // magic 1: magic_test.go
	msgs := [][]byte{[]byte("a"), []byte("hello"), bytes.Repeat([]byte{7}, 300)}
	if err := p.Send("topic1", -1, msgs...); err != nil {
		t.Fatal(err)
	}
	if err := p.Send("topic1", 3, []byte("x")); err != nil {
		t.Fatal(err)
	}
	r := (<-reqs).(protocol.ProduceRequest)
	if r.Topic != "topic1" || r.Partition != -1 {
		t.Fatalf("got topic %q partition %d, want topic1 -1", r.Topic, r.Partition)
	}
	// docs/PROTOCOL.md §2: 9 bytes of overhead per magic-0 message.
	want := 0
	for _, m := range msgs {
		want += message.SizeV0(len(m))
	}
	if len(r.Messages) != want {
		t.Fatalf("set is %d bytes, want %d", len(r.Messages), want)
	}
	it := message.NewIterator(r.Messages, 0)
	for i := 0; it.Next(); i++ {
		m := it.Message()
		if !m.Valid() || m.Magic() != message.MagicV0 || !bytes.Equal(m.Payload(), msgs[i]) {
			t.Fatalf("message %d: valid=%v magic=%d payload %q", i, m.Valid(), m.Magic(), m.Payload())
		}
	}
	r = (<-reqs).(protocol.ProduceRequest)
	if r.Partition != 3 {
		t.Fatalf("explicit partition: got %d, want 3", r.Partition)
	}
}

func TestMultiSendAndCompression(t *testing.T) {
	reqs := make(chan protocol.Request, 10)
	addr := fakeBroker(t, reqs)
	cfg := DefaultConfig()
	cfg.BrokerList = brokerList(5, addr)
	cfg.Compression = message.CodecGzip
	p, err := NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Send("t", 0, []byte("one"), []byte("two")); err != nil {
		t.Fatal(err)
	}
	r := (<-reqs).(protocol.ProduceRequest)
	it := message.NewIterator(r.Messages, 0)
	if !it.Next() || it.Message().Codec() != message.CodecGzip || !it.Message().Valid() {
		t.Fatalf("want one valid gzip wrapper, got %x", r.Messages)
	}
	inner, err := message.Decompress(it.Message())
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := message.Validate(inner); n != 2 || err != nil {
		t.Fatalf("inner set: %d messages, %v", n, err)
	}
	a := message.AppendV0(nil, []byte("A"))
	b := message.AppendV0(nil, []byte("B"))
	if err := p.MultiSend(5, []protocol.ProduceRequest{{Topic: "x", Partition: 0, Messages: a}, {Topic: "y", Partition: 1, Messages: b}}); err != nil {
		t.Fatal(err)
	}
	mp := (<-reqs).(protocol.MultiProduceRequest)
	if len(mp.Produces) != 2 || mp.Produces[1].Topic != "y" || !bytes.Equal(mp.Produces[1].Messages, b) {
		t.Fatalf("multiproduce decoded as %+v", mp)
	}
}

func TestBadInputsAreRefusedBeforeSending(t *testing.T) {
	p := newTestProducer(t, brokerList(0, fakeBroker(t, nil)))
	for _, topic := range []string{"", "..", "a/b", "x y", string(make([]byte, 300))} {
		if err := p.Send(topic, -1, []byte("m")); !errors.Is(err, ErrInvalidTopic) {
			t.Errorf("topic %q: got %v, want ErrInvalidTopic", topic, err)
		}
	}
	if err := p.Send("t", -1, make([]byte, 1000001)); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("huge message: got %v", err)
	}
	for _, list := range []string{"", "host:9092", "a:h:1", "0:h:99999", "0:h:1,0:h:2"} {
		if _, err := ParseBrokerList(list); !errors.Is(err, ErrBadConfig) {
			t.Errorf("broker.list %q: got %v, want ErrBadConfig", list, err)
		}
	}
	bs, err := ParseBrokerList("2:localhost:9093, 1:::1:9092")
	if err != nil || len(bs) != 2 || bs[1].Host != "::1" || bs[1].Port != 9092 {
		t.Errorf("ParseBrokerList: %+v %v", bs, err)
	}
}

func TestSendReconnectsAfterBrokerRestart(t *testing.T) {
	reqs := make(chan protocol.Request, 10)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	p := newTestProducer(t, brokerList(0, addr))
	go func() {
		c, err := ln.Accept()
		if err == nil {
			c.Close() // drop the first connection at once
		}
		ln.Close()
	}()
	_ = p.Send("t", -1, []byte("lost"))
	ln.Close()
	// A new "broker" on the same port.
	ln2, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("port %s not reusable: %v", addr, err)
	}
	ln2.Close()
	fakeBrokerOn(t, addr, reqs)
	// The first send after the restart may still go to the dead connection
	// (no acknowledgements, paper §5); the next ones reconnect.
	for i := 0; i < 5; i++ {
		if err := p.Send("t", -1, []byte("after")); err != nil {
			t.Fatal(err)
		}
	}
	r := (<-reqs).(protocol.ProduceRequest)
	if !bytes.Contains(r.Messages, []byte("after")) {
		t.Fatalf("got %q", r.Messages)
	}
}

func TestPartitioner(t *testing.T) {
	var p DefaultPartitioner
	for n := 1; n < 20; n++ {
		k := []byte(fmt.Sprintf("key-%d", n))
		a, b := p.Partition(k, n), p.Partition(k, n)
		if a != b || a < 0 || a >= n {
			t.Fatalf("key %q over %d partitions: %d then %d", k, n, a, b)
		}
		if r := p.Partition(nil, n); r < 0 || r >= n {
			t.Fatalf("random over %d: %d", n, r)
		}
	}
	seen := map[int]bool{}
	for i := 0; i < 200; i++ {
		seen[p.Partition(nil, 4)] = true
	}
	if len(seen) != 4 {
		t.Fatalf("random partitioner reached only %v of 4", seen)
	}
}

func TestSendAllocatesNothing(t *testing.T) {
	p := newTestProducer(t, brokerList(0, fakeBroker(t, nil)))
	batch := make([][]byte, 50)
	for i := range batch {
		batch[i] = make([]byte, 200)
	}
	if err := p.Send("perf", -1, batch...); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(200, func() {
		if err := p.Send("perf", -1, batch...); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("Send allocated %.1f times per call, want 0", allocs)
	}
}

// SendKeyedEach: one request per partition, each with its messages in the caller's order across keys (§3.3),
// every key on the partition SendKeyed picks for it.
func TestSendKeyedEachKeepsOrderWithinAPartition(t *testing.T) {
	reqs := [2]chan protocol.Request{make(chan protocol.Request, 10), make(chan protocol.Request, 10)}
	list := brokerList(0, fakeBroker(t, reqs[0])) + "," + brokerList(1, fakeBroker(t, reqs[1]))
	p := newTestProducer(t, list)
	var keys, msgs [][]byte
	want := [2][]string{}
	for i := range 12 {
		k := []byte(fmt.Sprintf("k%d", i%5))
		m := fmt.Sprintf("%s-%d", k, i)
		keys, msgs = append(keys, k), append(msgs, []byte(m))
		b := DefaultPartitioner{}.Partition(k, 2)
		want[b] = append(want[b], m)
	}
	if len(want[0]) == 0 || len(want[1]) == 0 {
		t.Fatalf("the keys do not reach both brokers: %v", want)
	}
	if err := p.SendKeyedEach("t", keys, msgs); err != nil {
		t.Fatal(err)
	}
	for b := range reqs {
		r := (<-reqs[b]).(protocol.ProduceRequest)
		var got []string
		it := message.NewIterator(r.Messages, 0)
		for it.Next() {
			got = append(got, string(it.Message().Payload()))
		}
		if fmt.Sprint(got) != fmt.Sprint(want[b]) {
			t.Errorf("broker %d: one request %v, want %v", b, got, want[b])
		}
		select {
		case r := <-reqs[b]:
			t.Errorf("broker %d: a second request %v", b, r)
		default:
		}
	}
	if err := p.SendKeyedEach("t", keys, msgs[:3]); !errors.Is(err, ErrBadConfig) {
		t.Errorf("12 keys for 3 messages: %v, want ErrBadConfig", err)
	}
}

// An acknowledged produce to a 0.7 topic retries a retriable code (56: the broker's storage refused the
// set, and may recover; docs/PROTOCOL.md §10) on the same broker, message.send.max.retries times, and then
// reports the code; a code that is not retriable is reported at once.
func TestAckedProduceToA07TopicRetriesRetriableCodes(t *testing.T) {
	var failFirst int
	var code protocol.ErrorCode
	f := startFakeLeader(t, func(_ string, copy int) protocol.ErrorCode {
		if copy <= failFirst {
			return code
		}
		return protocol.ErrNone
	})
	cfg := DefaultConfig()
	cfg.MetadataBrokerList = "7:" + f.ln.Addr().String()
	cfg.RequiredAcks, cfg.MessageSendMaxRetries, cfg.RetryBackoff = 1, 3, time.Millisecond
	p, err := NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	count := func(pl string) int {
		n := 0
		for _, g := range f.log() {
			if g == pl {
				n++
			}
		}
		return n
	}
	failFirst, code = 2, protocol.ErrKafkaStorage
	if err := p.Send("seven", 0, []byte("a")); err != nil || count("a") != 3 {
		t.Errorf("two storage errors then success: %v after %d copies, want nil after 3", err, count("a"))
	}
	failFirst = 10
	err = p.Send("seven", 0, []byte("b"))
	if !errors.Is(err, ErrNotAcknowledged) || !errors.Is(err, protocol.ErrKafkaStorage) || count("b") != 4 {
		t.Errorf("storage errors throughout: %v after %d copies, want ErrNotAcknowledged and code 56 after 4 (1 + 3 retries)", err, count("b"))
	}
	code = protocol.ErrMessageSizeTooLarge
	if err := p.Send("seven", 0, []byte("c")); !errors.Is(err, protocol.ErrMessageSizeTooLarge) || count("c") != 1 {
		t.Errorf("a code that is not retriable: %v after %d copies, want it at once", err, count("c"))
	}
}

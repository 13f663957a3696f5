package broker_test

import (
	"bufio"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

// client08 speaks the Kafka protocol (package protocol08) to a broker.
type client08 struct {
	t    testing.TB
	c    net.Conn
	r    *bufio.Reader
	corr int32
}

func dial08(t testing.TB, addr net.Addr) *client08 {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &client08{t: t, c: c, r: bufio.NewReader(c)}
}

// call sends a request and, unless noAnswer, reads its answer's body.
func (cl *client08) call(key, version int16, body []byte, noAnswer bool) []byte {
	cl.t.Helper()
	cl.corr++
	req := protocol08.AppendRequest(nil, protocol08.Header{APIKey: key, APIVersion: version, CorrelationID: cl.corr, ClientID: "test"}, body)
	if _, err := cl.c.Write(req); err != nil {
		cl.t.Fatalf("write %s: %v", protocol08.KeyName(key), err)
	}
	if noAnswer {
		return nil
	}
	cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	corr, resp, err := protocol08.ReadResponse(cl.r, 1<<26)
	if err != nil {
		cl.t.Fatalf("%s: reading the answer: %v", protocol08.KeyName(key), err)
	}
	if corr != cl.corr {
		cl.t.Fatalf("%s: correlation id %d, want %d", protocol08.KeyName(key), corr, cl.corr)
	}
	return resp
}

func (cl *client08) produce(acks int16, topic string, set []byte) protocol08.ProduceResult {
	cl.t.Helper()
	body := protocol08.AppendProduceBody(nil, acks, 1000, []protocol08.ProducePart{{Topic: topic, Partition: 0, Set: set}})
	if acks == 0 {
		cl.call(protocol08.KeyProduce, 0, body, true)
		return protocol08.ProduceResult{}
	}
	res, err := protocol08.DecodeProduceResponse(cl.call(protocol08.KeyProduce, 0, body, false))
	if err != nil || len(res) != 1 {
		cl.t.Fatalf("Produce answer %+v, %v", res, err)
	}
	return res[0]
}

type kv struct {
	off        int64
	key, value string
	null       bool
}

func (cl *client08) fetch(topic string, offset int64, maxBytes int32) (protocol08.FetchResult, []kv) {
	cl.t.Helper()
	body := protocol08.AppendFetchBody(nil, 0, 0, []protocol08.FetchPart{{Topic: topic, Partition: 0, Offset: offset, MaxBytes: maxBytes}})
	res, err := protocol08.DecodeFetchResponse(cl.call(protocol08.KeyFetch, 0, body, false))
	if err != nil || len(res) != 1 {
		cl.t.Fatalf("Fetch answer %+v, %v", res, err)
	}
	var got []kv
	err = protocol08.Entries(res[0].Set, true, func(e protocol08.Entry) error {
		got = append(got, kv{e.Offset, string(e.Key), string(e.Value), e.Key == nil})
		return nil
	})
	if err != nil {
		cl.t.Fatal(err)
	}
	return res[0], got
}

func (cl *client08) offsets(topic string, time int64) protocol08.OffsetsResult {
	cl.t.Helper()
	body := protocol08.AppendOffsetsBody(nil, []protocol08.OffsetsPart{{Topic: topic, Partition: 0, Time: time, MaxOffsets: 10}})
	res, err := protocol08.DecodeOffsetsResponse(cl.call(protocol08.KeyOffsets, 0, body, false))
	if err != nil || len(res) != 1 {
		cl.t.Fatalf("Offsets answer %+v, %v", res, err)
	}
	return res[0]
}

func entries08(first int64, kvs ...string) []byte {
	var set []byte
	for i := 0; i < len(kvs); i += 2 {
		var key []byte
		if kvs[i] != "" {
			key = []byte(kvs[i])
		}
		set = protocol08.AppendEntry(set, first+int64(i/2), key, []byte(kvs[i+1]))
	}
	return set
}

// gzip08 is a 0.8 gzip message holding set.
func gzip08(t testing.TB, set []byte) []byte {
	w, err := message.Compress(message.CodecGzip, set)
	if err != nil {
		t.Fatal(err)
	}
	return protocol08.AppendEntryCodec(nil, 0, message.CodecGzip, message.Message(w).Payload())
}

// Keys come back; offsets count messages, a wrapper's inner ones each; a
// fetch in the middle of a wrapper starts at the offset asked; the ends are
// reported as 0.8 did.
func TestKafka08ProduceFetchOffsets(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "1"})
	cl := dial08(t, tb.Addr())
	if r := cl.produce(1, "t", entries08(0, "k1", "v1", "", "v2", "k3", "v3")); r.Error != 0 || r.Offset != 0 {
		t.Fatalf("first Produce: %+v, want offset 0", r)
	}
	if r := cl.produce(-1, "t", gzip08(t, entries08(0, "k4", "v4", "k5", "v5"))); r.Error != 0 || r.Offset != 3 {
		t.Fatalf("gzip Produce: %+v, want offset 3", r)
	}
	cl.produce(0, "t", entries08(0, "k6", "v6")) // acks 0: no answer
	cl.offsets("t", protocol08.Latest)           // served after it: a round trip
	tb.Flush("t", 0)

	res, got := cl.fetch("t", 0, 1<<20)
	want := []kv{{0, "k1", "v1", false}, {1, "", "v2", true}, {2, "k3", "v3", false}, {3, "k4", "v4", false}, {4, "k5", "v5", false}, {5, "k6", "v6", false}}
	if res.Error != 0 || res.HighWatermark != 6 || !equalKV(got, want) {
		t.Fatalf("Fetch from 0: error %d, hw %d, %+v; want hw 6, %+v", res.Error, res.HighWatermark, got, want)
	}
	if _, got := cl.fetch("t", 4, 1<<20); !equalKV(got, want[4:]) {
		t.Errorf("Fetch from 4, inside the gzip wrapper (3, 4): %+v, want %+v", got, want[4:])
	}
	if _, got := cl.fetch("t", 0, 30); len(got) != 1 || got[0].off != 0 {
		t.Errorf("Fetch with max_bytes 30: %+v, want the first message alone", got)
	}
	if res, got := cl.fetch("t", 6, 1<<20); res.Error != 0 || len(got) != 0 || res.HighWatermark != 6 {
		t.Errorf("Fetch at the end: error %d, %d messages, hw %d; want none, hw 6", res.Error, len(got), res.HighWatermark)
	}
	if res, _ := cl.fetch("t", 7, 1<<20); res.Error != protocol.ErrOffsetOutOfRange {
		t.Errorf("Fetch past the end: error %d, want OFFSET_OUT_OF_RANGE (1)", res.Error)
	}
	if o := cl.offsets("t", protocol08.Latest); o.Error != 0 || len(o.Offsets) != 1 || o.Offsets[0] != 6 {
		t.Errorf("Offsets latest: %+v, want [6]", o)
	}
	if o := cl.offsets("t", protocol08.Earliest); o.Error != 0 || len(o.Offsets) != 1 || o.Offsets[0] != 0 {
		t.Errorf("Offsets earliest: %+v, want [0]", o)
	}
	if o := cl.offsets("t", 1); o.Error != 0 || len(o.Offsets) != 0 {
		t.Errorf("Offsets at 1 ms after 1970, before the first segment: %+v, want none", o)
	}
}

func equalKV(a, b []kv) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// One log, both protocols, one port: what a 0.7 client writes a Kafka
// protocol client reads (null keys), and what the latter writes with keys the
// former reads, key and all (message.KeyValue).
func TestKafka08AndPaperShareTheLog(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "1"})
	c07 := dial(t, tb.Addr())
	c07.produce("both", 0, message.AppendV0(message.AppendV0(nil, []byte("paper-1")), []byte("paper-2")))
	c07.sync()
	c08 := dial08(t, tb.Addr())
	c08.produce(1, "both", entries08(0, "key-3", "kafka-3"))
	tb.Flush("both", 0)

	if _, got := c08.fetch("both", 0, 1<<20); !equalKV(got, []kv{{0, "", "paper-1", true}, {1, "", "paper-2", true}, {2, "key-3", "kafka-3", false}}) {
		t.Errorf("Kafka protocol fetch: %+v", got)
	}
	code, set := c07.fetch("both", 0, 0, 1<<20)
	if code != 0 {
		t.Fatalf("0.7 fetch: error %d", code)
	}
	var keys, values []string
	it := message.NewIterator(set, 0)
	for it.Next() {
		k, v, err := it.Message().KeyValue()
		if err != nil || !it.Message().Valid() {
			t.Fatalf("message at %d: %v (CRC valid %v)", it.Offset(), err, it.Message().Valid())
		}
		keys, values = append(keys, string(k)), append(values, string(v))
	}
	if len(values) != 3 || values[2] != "kafka-3" || keys[2] != "key-3" || keys[0] != "" {
		t.Errorf("0.7 fetch: keys %q values %q", keys, values)
	}
}

// Bad input closes one connection or gets an error code; the broker goes on
// and nothing is written.
func TestKafka08BadInput(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "1"})
	for name, raw := range map[string][]byte{
		"truncated header":     {0, 0, 0, 4, 0, 3, 0, 0},
		"client_id 32767":      {0, 0, 0, 12, 0, 3, 0, 0, 0, 0, 0, 1, 0x7f, 0xff, 0, 0},
		"metadata count -1":    append(protocol08.AppendRequest(nil, protocol08.Header{APIKey: 3, CorrelationID: 1}, nil), 0xff, 0xff, 0xff, 0xff),
		"metadata v5":          protocol08.AppendRequest(nil, protocol08.Header{APIKey: 3, APIVersion: 5, CorrelationID: 1}, []byte{0, 0, 0, 0}),
		"unknown key 42":       protocol08.AppendRequest(nil, protocol08.Header{APIKey: 42, CorrelationID: 1}, nil),
		"produce partitions":   protocol08.AppendRequest(nil, protocol08.Header{APIKey: 0, CorrelationID: 1}, []byte{0, 1, 0, 0, 3, 0xe8, 0, 0, 0, 1, 0, 1, 'x', 0x7f, 0xff, 0xff, 0xff}),
		"fetch topic count -1": protocol08.AppendRequest(nil, protocol08.Header{APIKey: 1, CorrelationID: 1}, []byte{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}),
	} {
		// Lengths in the frame are fixed up where the test appended to it.
		if len(raw) >= 4 {
			n := len(raw) - 4
			raw[0], raw[1], raw[2], raw[3] = byte(n>>24), byte(n>>16), byte(n>>8), byte(n)
		}
		cl := dial(t, tb.Addr())
		cl.write(raw)
		if !cl.closedByBroker() {
			t.Errorf("%s: connection still open", name)
		}
	}
	cl := dial08(t, tb.Addr())
	// A corrupt message (a flipped bit in the value) is answered with
	// CORRUPT_MESSAGE (2) and appends nothing.
	bad := entries08(0, "k", "value")
	bad[len(bad)-1] ^= 1
	if r := cl.produce(1, "bad", bad); r.Error != protocol.ErrInvalidMessage {
		t.Errorf("corrupt message: %+v, want error 2", r)
	}
	// ApiVersions of a version not served: UNSUPPORTED_VERSION with the list.
	code, served, err := protocol08.DecodeAPIVersionsResponse(cl.call(protocol08.KeyAPIVersions, 3, nil, false))
	if err != nil || code != 35 || len(served) != len(protocol08.Served) {
		t.Errorf("ApiVersions v3: error %d, %d apis, %v; want 35 and the list", code, len(served), err)
	}
	if o := cl.offsets("bad", protocol08.Latest); o.Error != 0 || len(o.Offsets) != 1 || o.Offsets[0] != 0 {
		t.Errorf("after the corrupt produce, Offsets latest of bad: %+v, want [0]", o)
	}
	// Offsets answers the flushed end, which an unflushed append would not move: the log itself must be empty.
	if l, ok := tb.Logs().Get("bad", 0); ok && l.LogEndOffset() != 0 {
		t.Errorf("the corrupt produce wrote %d bytes to bad-0", l.LogEndOffset())
	}
}

// Offsets committed through the Kafka protocol outlive a restart of the broker that keeps them, and a
// group that committed nothing reads -1.
func TestKafka08CommittedOffsetsSurviveRestart(t *testing.T) {
	tb := startBroker(t, nil)
	commit := func(cl *client08, group, topic string, off int64, md string) {
		t.Helper()
		// OffsetCommit v1: group, generation -1, consumer "", one topic, one partition, offset, timestamp -1, metadata.
		body := []byte{0, byte(len(group))}
		body = append(body, group...)
		body = append(body, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 1, 0, byte(len(topic)))
		body = append(body, topic...)
		body = append(body, 0, 0, 0, 1, 0, 0, 0, 0)
		body = binary.BigEndian.AppendUint64(body, uint64(off))
		body = append(body, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0, byte(len(md)))
		body = append(body, md...)
		resp := cl.call(protocol08.KeyOffsetCommit, 1, body, false)
		// [topic [partition error]]: the error is the last two bytes.
		if code := binary.BigEndian.Uint16(resp[len(resp)-2:]); code != 0 {
			t.Fatalf("OffsetCommit: error %d", code)
		}
	}
	fetch := func(cl *client08, group, topic string) (int64, string) {
		t.Helper()
		body := []byte{0, byte(len(group))}
		body = append(body, group...)
		body = append(body, 0, 0, 0, 1, 0, byte(len(topic)))
		body = append(body, topic...)
		body = append(body, 0, 0, 0, 1, 0, 0, 0, 0)
		resp := cl.call(protocol08.KeyOffsetFetch, 1, body, false)
		// 4 topics + 2+len topic + 4 partitions + 4 partition, then offset, metadata, error.
		at := 4 + 2 + len(topic) + 4 + 4
		off := int64(binary.BigEndian.Uint64(resp[at:]))
		n := int(binary.BigEndian.Uint16(resp[at+8:]))
		if code := binary.BigEndian.Uint16(resp[at+10+n:]); code != 0 {
			t.Fatalf("OffsetFetch: error %d", code)
		}
		return off, string(resp[at+10 : at+10+n])
	}
	cl := dial08(t, tb.Addr())
	commit(cl, "g 1", "t", 42, "first")
	commit(cl, "g 1", "t", 43, "")
	commit(cl, "g2", "t", 7, "-")
	if off, md := fetch(cl, "g 1", "t"); off != 43 || md != "" {
		t.Errorf("before the restart: %d %q, want 43 \"\"", off, md)
	}
	tb.Stop()
	tb.Restart()
	cl = dial08(t, tb.Addr())
	if off, md := fetch(cl, "g 1", "t"); off != 43 || md != "" {
		t.Errorf("after the restart: g 1 at %d %q, want 43 \"\"", off, md)
	}
	if off, md := fetch(cl, "g2", "t"); off != 7 || md != "-" {
		t.Errorf("after the restart: g2 at %d %q, want 7 \"-\"", off, md)
	}
	if off, _ := fetch(cl, "nobody", "t"); off != -1 {
		t.Errorf("a group that committed nothing: %d, want -1", off)
	}
}

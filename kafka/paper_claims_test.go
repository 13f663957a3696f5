// Tests of the claims of the NetDB'11 paper's §3.1 ("simple storage",
// "efficient transfer", "stateless broker") and §3.3 ("Delivery
// Guarantees"), one sentence of the paper each, against a real broker
// running in-process (kafka/broker/brokertest) and spoken to over TCP with
// our producer and consumer. The helpers are in helpers_test.go, so that
// this file holds the claims and nothing else.
package kafka_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// §3.1 "Simple storage" and §5: "each message had an overhead of 9 bytes in Kafka".
// A segment holds exactly payload + 9 bytes per message, and the log's end
// offset is that byte count.
func TestPaper_NineBytesOfOverheadPerMessage(t *testing.T) {
	tb := startBroker(t, nil)
	p, c := newProducer(t, tb), newConsumer(t, tb)
	const n, size, batch = 1000, 200, 50
	msgs := make([][]byte, 0, batch)
	for i := 0; i < n; i += batch {
		msgs = msgs[:0]
		for j := i; j < i+batch; j++ {
			msgs = append(msgs, payload(j, size))
		}
		if err := p.Send("overhead", 0, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	waitLatest(t, c, "overhead", 0, n*(size+9))
	var onDisk int64
	for _, f := range segmentFiles(t, filepath.Join(tb.Dir, "overhead-0")) {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		onDisk += st.Size()
	}
	if perMsg := float64(onDisk-n*size) / n; perMsg != 9 {
		t.Fatalf("%d bytes on disk for %d messages of %d bytes: %.2f bytes of overhead each, want 9", onDisk, n, size, perMsg)
	}
}

// §3.1: "a message stored in Kafka doesn’t have an explicit message id.
// Instead, each message is addressed by its logical offset in the log ...
// message ids are increasing but not consecutive. To compute the id of the
// next message, we have to add the length of the current message to its id."
func TestPaper_OffsetsAreIncreasingNonConsecutiveBytePositions(t *testing.T) {
	tb := startBroker(t, nil)
	p, c := newProducer(t, tb), newConsumer(t, tb)
	var want int64
	for i := 0; i < 100; i++ {
		m := payload(i, 10+i*7%90)
		want += int64(message.SizeV0(len(m)))
		if err := p.Send("ids", 0, m); err != nil {
			t.Fatal(err)
		}
	}
	waitLatest(t, c, "ids", 0, want)
	recs := readAll(t, c, "ids", 0, 0, 1000)
	if len(recs) != 100 {
		t.Fatalf("read %d messages, want 100", len(recs))
	}
	for i, r := range recs {
		if r.next != r.off+4+int64(1+4+len(r.payload)) {
			t.Fatalf("message %d at %d: next %d is not offset + 4 + N", i, r.off, r.next)
		}
		if i > 0 && (r.off != recs[i-1].next || r.off-recs[i-1].off <= 1) {
			t.Fatalf("message %d at %d after %d: offsets must increase by the message length", i, r.off, recs[i-1].off)
		}
	}
	// The offset is a byte position: a fetch can start at any message.
	mid := recs[57]
	set, err := c.Fetch("ids", 0, mid.off, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if it := message.NewIterator(set, mid.off); !it.Next() || !bytes.Equal(it.Message().Payload(), mid.payload) {
		t.Fatalf("fetch at offset %d did not start with message 57", mid.off)
	}
}

// §3.1: "A message is only exposed to the consumers after it is flushed."
// With a flush every 100 messages and no timer, 10 messages stay invisible;
// at the 100th they all appear.
func TestPaper_OnlyFlushedMessagesAreVisible(t *testing.T) {
	tb := startBroker(t, map[string]string{
		"log.flush.interval": "100", "log.default.flush.interval.ms": "3600000"})
	c := newConsumer(t, tb)
	// One raw connection: the broker serves a connection's requests in
	// order, so the OFFSETS answer proves the PRODUCE before it was appended.
	conn, err := net.Dial("tcp", tb.HostPort())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msgs := make([][]byte, 100)
	var set []byte
	for i := range msgs {
		msgs[i] = payload(i, 50)
		set = message.AppendV0(set, msgs[i])
	}
	first := len(set) / 10 // 10 messages
	req := protocol.ProduceRequest{Topic: "flush", Partition: 0, Messages: set[:first]}.AppendTo(nil)
	req = protocol.OffsetsRequest{Topic: "flush", Partition: 0, Time: -1, MaxNumOffsets: 1}.AppendTo(req)
	req = protocol.FetchRequest{Topic: "flush", Partition: 0, Offset: 0, MaxSize: 1 << 20}.AppendTo(req)
	if _, err := conn.Write(req); err != nil {
		t.Fatal(err)
	}
	code, resp, _, err := protocol.ReadResponse(conn, nil)
	if err != nil || code != protocol.ErrNone {
		t.Fatalf("offsets: %v %v", code, err)
	}
	if offs, err := protocol.DecodeOffsetsResponse(resp); err != nil || len(offs) != 1 || offs[0] != 0 {
		t.Fatalf("latest offset after 10 unflushed messages: %v %v, want [0]", offs, err)
	}
	code, resp, _, err = protocol.ReadResponse(conn, nil)
	if err != nil || code != protocol.ErrNone || len(resp) != 0 {
		t.Fatalf("fetch of unflushed messages: code %v, %d bytes, %v; want none", code, len(resp), err)
	}
	l, ok := tb.Logs().Get("flush", 0)
	if !ok || l.LogEndOffset() != int64(first) || l.FlushedEnd() != 0 {
		t.Fatalf("log: written end %d, flushed end %d; want %d and 0", l.LogEndOffset(), l.FlushedEnd(), first)
	}
	// The 100th message triggers the flush.
	if _, err := conn.Write(protocol.ProduceRequest{Topic: "flush", Partition: 0, Messages: set[first:]}.AppendTo(nil)); err != nil {
		t.Fatal(err)
	}
	waitLatest(t, c, "flush", 0, int64(len(set)))
	recs := readAll(t, c, "flush", 0, 0, 1<<20)
	if len(recs) != 100 {
		t.Fatalf("after the flush: %d messages visible, want 100", len(recs))
	}
}

// §3.1: "a broker doesn’t know whether all subscribers have consumed the
// message. Kafka solves this problem by using a simple time-based SLA for the
// retention policy. A message is automatically deleted if it has been
// retained in the broker longer than a certain period."
func TestPaper_OldSegmentsAreDeletedByTime(t *testing.T) {
	tb, c, end := retentionBroker(t, map[string]string{"log.retention.hours": "168"})
	files := segmentFiles(t, filepath.Join(tb.Dir, "old-0"))
	if len(files) < 5 {
		t.Fatalf("want several segments, got %d", len(files))
	}
	// Age the first three segments past the 7-day retention.
	old := time.Now().Add(-8 * 24 * time.Hour)
	for _, f := range files[:3] {
		if err := os.Chtimes(f, old, old); err != nil {
			t.Fatal(err)
		}
	}
	if n := tb.Logs().DeleteOldSegments(time.Now()); n != 3 {
		t.Fatalf("deleted %d segments, want the 3 old ones", n)
	}
	left := segmentFiles(t, filepath.Join(tb.Dir, "old-0"))
	if !slices.Equal(left, files[3:]) {
		t.Fatalf("segments left %v, want %v", left, files[3:])
	}
	start, _ := strconv.ParseInt(strings.TrimSuffix(filepath.Base(left[0]), ".kafka"), 10, 64)
	if e, err := c.EarliestOffset("old", 0); err != nil || e != start {
		t.Fatalf("earliest offset %d (%v), want %d", e, err, start)
	}
	if _, err := c.Fetch("old", 0, 0, 1000); !errors.Is(err, protocol.ErrOffsetOutOfRange) {
		t.Fatalf("fetch of deleted offset 0: %v, want offset out of range", err)
	}
	if recs := readAll(t, c, "old", 0, start, 1000); len(recs) == 0 || recs[len(recs)-1].next != end {
		t.Fatalf("the rest is no longer readable")
	}
}

// §3.1 retention, and 0.7's log.retention.size: the oldest segments go until
// the partition fits the size limit; the end offset does not move.
func TestPaper_OldSegmentsAreDeletedBySize(t *testing.T) {
	tb, c, end := retentionBroker(t, map[string]string{"log.retention.size": "5000"})
	before := segmentFiles(t, filepath.Join(tb.Dir, "old-0"))
	if n := tb.Logs().DeleteOldSegments(time.Now()); n == 0 {
		t.Fatal("nothing deleted although the partition is over its size limit")
	}
	l, _ := tb.Logs().Get("old", 0)
	if l.Size() > 5000+2000 || l.Size() < 5000-2000 {
		t.Fatalf("partition holds %d bytes after retention to 5000", l.Size())
	}
	after := segmentFiles(t, filepath.Join(tb.Dir, "old-0"))
	if !slices.Equal(after, before[len(before)-len(after):]) {
		t.Fatalf("retention did not delete a prefix: %v -> %v", before, after)
	}
	if latest, err := c.LatestOffset("old", 0); err != nil || latest != end {
		t.Fatalf("latest offset %d (%v) after retention, want %d", latest, err, end)
	}
}

// §3.1: "a consumer can deliberately rewind back to an old offset and
// re-consume data" — the broker keeps no consumer state, so a new
// connection starting at an old offset sees the same bytes.
func TestPaper_ConsumerCanRewindAndReread(t *testing.T) {
	tb := startBroker(t, nil)
	p, c := newProducer(t, tb), newConsumer(t, tb)
	var end int64
	for i := 0; i < 50; i++ {
		m := payload(i, 64)
		end += int64(message.SizeV0(len(m)))
		if err := p.Send("rewind", 0, m); err != nil {
			t.Fatal(err)
		}
	}
	waitLatest(t, c, "rewind", 0, end)
	first := readAll(t, c, "rewind", 0, 0, 700)
	it := consumer.NewPartitionIterator(c, "rewind", 0, 0, 700)
	for it.Poll() && it.NextOffset() < end {
	}
	it.SeekTo(first[10].off)
	for i := 10; i < len(first); i++ {
		if !it.Poll() || it.Offset() != first[i].off || !bytes.Equal(it.Payload(), first[i].payload) {
			t.Fatalf("re-read message %d: %q at %d, want %q at %d (%v)", i, it.Payload(), it.Offset(), first[i].payload, first[i].off, it.Err())
		}
	}
	other := consumer.NewSimpleConsumer(tb.HostPort(), 10*time.Second)
	defer other.Close()
	again := readAll(t, other, "rewind", 0, first[10].off, 10000)
	if len(again) != 40 || !bytes.Equal(again[0].payload, first[10].payload) {
		t.Fatalf("second consumer from offset %d read %d messages", first[10].off, len(again))
	}
}

// §3.3: "Kafka stores a CRC for each message in the log. If there is any I/O
// error on the broker, Kafka runs a recovery process to remove those messages
// with inconsistent CRCs."
func TestPaper_RecoveryRemovesCRCBadTail(t *testing.T) {
	tb := startBroker(t, nil)
	dir := tb.Dir
	p, c := newProducer(t, tb), newConsumer(t, tb)
	var msgs [][]byte
	for i := 0; i < 30; i++ {
		msgs = append(msgs, payload(i, 80))
	}
	good := setSize(msgs)
	if err := p.Send("recover", 0, msgs...); err != nil {
		t.Fatal(err)
	}
	waitLatest(t, c, "recover", 0, good)
	if err := tb.Stop(); err != nil {
		t.Fatalf("broker close: %v", err)
	}
	// Simulate a crash: no clean-shutdown marker, and a tail of one message
	// whose CRC does not match, one good message after it, and garbage.
	if err := os.Remove(filepath.Join(dir, ".kafka_cleanshutdown")); err != nil {
		t.Fatalf("clean shutdown left no marker: %v", err)
	}
	seg := filepath.Join(dir, "recover-0", "00000000000000000000.kafka")
	bad := message.AppendV0(nil, []byte("this message was torn by a crash"))
	bad[len(bad)-1] ^= 0x40
	tail := append(bad, message.AppendV0(nil, []byte("never reached"))...)
	tail = append(tail, 0, 0, 0, 99, 0, 1, 2)
	f, err := os.OpenFile(seg, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(tail)
	f.Close()

	tb.Restart() // same log.dir and port
	c2 := newConsumer(t, tb)
	if st, err := os.Stat(seg); err != nil || st.Size() != good {
		t.Fatalf("segment after recovery: %v bytes (%v), want %d", st.Size(), err, good)
	}
	if latest, err := c2.LatestOffset("recover", 0); err != nil || latest != good {
		t.Fatalf("latest after recovery %d (%v), want %d", latest, err, good)
	}
	recs := readAll(t, c2, "recover", 0, 0, 1<<20)
	if len(recs) != 30 {
		t.Fatalf("%d messages after recovery, want 30", len(recs))
	}
	// New messages go right after the last good one.
	p2 := newProducer(t, tb)
	if err := p2.Send("recover", 0, []byte("after")); err != nil {
		t.Fatal(err)
	}
	waitLatest(t, c2, "recover", 0, good+int64(message.SizeV0(5)))
	if recs := readAll(t, c2, "recover", 0, good, 1000); len(recs) != 1 || string(recs[0].payload) != "after" {
		t.Fatalf("after recovery the next message is %v", recs)
	}
}

// §3.3: "Kafka guarantees that messages from a single partition are
// delivered to a consumer in order." Sequence numbers sent in batches of
// varying sizes to three partitions come back in order in each.
func TestPaper_OrderIsKeptWithinAPartition(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "3"})
	p, c := newProducer(t, tb), newConsumer(t, tb)
	var ends [3]int64
	seq := [3]int{}
	for round := 0; round < 300; round++ {
		part := round % 3
		var batch [][]byte
		for k := 0; k < 1+round%17; k++ {
			batch = append(batch, payload(seq[part], 20+k))
			seq[part]++
		}
		ends[part] += setSize(batch)
		if err := p.Send("order", int32(part), batch...); err != nil {
			t.Fatal(err)
		}
	}
	for part := 0; part < 3; part++ {
		waitLatest(t, c, "order", int32(part), ends[part])
		recs := readAll(t, c, "order", int32(part), 0, 4096)
		if len(recs) != seq[part] {
			t.Fatalf("partition %d: %d messages, want %d", part, len(recs), seq[part])
		}
		for i, r := range recs {
			if n, _ := strconv.Atoi(string(r.payload[:8])); n != i {
				t.Fatalf("partition %d: message %d carries sequence number %d", part, i, n)
			}
		}
	}
}

// §3.3: every message carries a CRC and the broker checks it: a set with one
// bad message is refused whole, and the sets around it are kept.
func TestPaper_BrokerRefusesSetWithBadCRC(t *testing.T) {
	tb := startBroker(t, nil)
	p, c := newProducer(t, tb), newConsumer(t, tb)
	a := [][]byte{[]byte("a1"), []byte("a2"), []byte("a3")}
	var bad []byte
	for i := 0; i < 5; i++ {
		bad = message.AppendV0(bad, []byte(fmt.Sprintf("bad-set-%d", i)))
	}
	third := 2 * message.SizeV0(9)
	bad[third+message.HeaderSizeV0] ^= 1 // a payload byte of the third message
	if _, _, err := message.Validate(bad); !errors.Is(err, message.ErrChecksum) {
		t.Fatalf("test set is not corrupt: %v", err)
	}
	cc := [][]byte{[]byte("c1"), []byte("c2")}
	// One producer connection: the broker handles the three in order.
	if err := p.Send("crc", 0, a...); err != nil {
		t.Fatal(err)
	}
	if err := p.SendSet("crc", 0, bad); err != nil {
		t.Fatal(err)
	}
	if err := p.Send("crc", 0, cc...); err != nil {
		t.Fatal(err)
	}
	waitLatest(t, c, "crc", 0, setSize(a)+setSize(cc))
	var got []string
	for _, r := range readAll(t, c, "crc", 0, 0, 1000) {
		got = append(got, string(r.payload))
	}
	if want := []string{"a1", "a2", "a3", "c1", "c2"}; !slices.Equal(got, want) {
		t.Fatalf("log holds %q, want %q", got, want)
	}
}

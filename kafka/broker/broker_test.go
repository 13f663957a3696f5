package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

func TestProduceFetch(t *testing.T) {
	tb := startBroker(t, nil)
	cl := dial(t, tb.Addr())
	set1, set2 := messageSet(0, 10, 50), messageSet(10, 5, 50)
	cl.produce("test", 0, set1)
	cl.send(protocol.MultiProduceRequest{Produces: []protocol.ProduceRequest{
		{Topic: "test", Partition: 0, Messages: set2},
		{Topic: "other", Partition: 0, Messages: set1},
	}})
	cl.sync()

	// §3.1: nothing is visible before the flush.
	if code, b := cl.fetch("test", 0, 0, 1<<20); code != protocol.ErrNone || len(b) != 0 {
		t.Fatalf("fetch before flush: code %v, %d bytes; want 0 and nothing", code, len(b))
	}
	tb.Flush("test", 0)
	code, b := cl.fetch("test", 0, 0, 1<<20)
	if code != protocol.ErrNone || !bytes.Equal(b, append(append([]byte{}, set1...), set2...)) {
		t.Fatalf("fetch: code %v, %d bytes; want the 15 messages produced (%d bytes)", code, len(b), len(set1)+len(set2))
	}
	got, _ := payloads(t, b)
	if len(got) != 15 || got[0] != "00000000" || got[14] != "00000014" {
		t.Fatalf("payloads %v", got)
	}

	// A small maxSize cuts inside a message; the client keeps whole ones
	// and continues from the first byte it did not use.
	var all []string
	for off := int64(0); off < int64(len(b)); {
		code, part := cl.fetch("test", 0, off, 130)
		if code != protocol.ErrNone || len(part) == 0 {
			t.Fatalf("fetch at %d: code %v, %d bytes", off, code, len(part))
		}
		ps, used := payloads(t, part)
		all = append(all, ps...)
		off += int64(used)
	}
	if len(all) != 15 {
		t.Fatalf("small fetches returned %d messages, want 15", len(all))
	}

	// OFFSETS: latest is the flushed end, earliest the log start.
	if code, offs := cl.offsets("test", 0, protocol.OffsetsLatest, 10); code != protocol.ErrNone || len(offs) == 0 || offs[0] != int64(len(b)) {
		t.Fatalf("latest offsets: %v %v; want first %d", code, offs, len(b))
	}
	if code, offs := cl.offsets("test", 0, protocol.OffsetsEarliest, 10); code != protocol.ErrNone || len(offs) != 1 || offs[0] != 0 {
		t.Fatalf("earliest offsets: %v %v; want [0]", code, offs)
	}
	// The end of the log is a valid, empty fetch; past it is out of range.
	if code, part := cl.fetch("test", 0, int64(len(b)), 100); code != protocol.ErrNone || len(part) != 0 {
		t.Fatalf("fetch at the end: %v, %d bytes", code, len(part))
	}
	if code, part := cl.fetch("test", 0, int64(len(b))+1, 100); code != protocol.ErrOffsetOutOfRange || len(part) != 0 {
		t.Fatalf("fetch past the end: %v, %d bytes; want code 1 and nothing", code, len(part))
	}
}

func TestFetchErrorCodes(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "2", "max.socket.request.bytes": "1048576"})
	cl := dial(t, tb.Addr())
	set := messageSet(0, 100, 100)
	cl.produce("t", 1, set)
	cl.sync()
	tb.Flush("t", 1)
	cases := []struct {
		name   string
		f      protocol.FetchRequest
		code   protocol.ErrorCode
		nbytes int
	}{
		{"negative size", protocol.FetchRequest{Topic: "t", Partition: 1, MaxSize: -1}, protocol.ErrInvalidFetchSize, 0},
		{"huge size is capped", protocol.FetchRequest{Topic: "t", Partition: 1, MaxSize: math.MaxInt32}, protocol.ErrNone, len(set)},
		{"negative offset", protocol.FetchRequest{Topic: "t", Partition: 1, Offset: -5, MaxSize: 10}, protocol.ErrOffsetOutOfRange, 0},
		{"offset past end", protocol.FetchRequest{Topic: "t", Partition: 1, Offset: 1 << 40, MaxSize: 10}, protocol.ErrOffsetOutOfRange, 0},
		{"partition out of range", protocol.FetchRequest{Topic: "t", Partition: 2, MaxSize: 10}, protocol.ErrWrongPartition, 0},
		{"negative partition", protocol.FetchRequest{Topic: "t", Partition: -1, MaxSize: 10}, protocol.ErrWrongPartition, 0},
		{"invalid topic", protocol.FetchRequest{Topic: "../x", MaxSize: 10}, protocol.ErrWrongPartition, 0},
		{"not yet created", protocol.FetchRequest{Topic: "t", Partition: 0, MaxSize: 10}, protocol.ErrNone, 0},
		{"unknown topic", protocol.FetchRequest{Topic: "nobody", MaxSize: 10}, protocol.ErrNone, 0},
	}
	for _, c := range cases {
		cl.send(c.f)
		code, b := cl.response()
		if code != c.code || len(b) != c.nbytes {
			t.Errorf("%s: code %v, %d bytes; want %v, %d bytes", c.name, code, len(b), c.code, c.nbytes)
		}
	}
	if code, offs := cl.offsets("nobody", 0, protocol.OffsetsLatest, 5); code != protocol.ErrNone || len(offs) != 1 || offs[0] != 0 {
		t.Errorf("offsets of an unknown topic: %v %v; want [0]", code, offs)
	}
	if code, offs := cl.offsets("a/b", 0, protocol.OffsetsLatest, 5); code != protocol.ErrWrongPartition || len(offs) != 0 {
		t.Errorf("offsets of an invalid topic: %v %v; want code 3", code, offs)
	}
	if _, err := os.Stat(filepath.Join(tb.Dir, "nobody-0")); err == nil {
		t.Error("a fetch created a partition directory")
	}
}

func TestMultiFetch(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "3"})
	cl := dial(t, tb.Addr())
	sets := [][]byte{messageSet(0, 20, 80), messageSet(100, 7, 300)}
	cl.produce("m", 0, sets[0])
	cl.produce("m", 2, sets[1])
	cl.sync()
	tb.Flush("m", 0)
	tb.Flush("m", 2)
	cl.send(protocol.MultiFetchRequest{Fetches: []protocol.FetchRequest{
		{Topic: "m", Partition: 0, MaxSize: 1 << 20},
		{Topic: "m", Partition: 1, MaxSize: 1 << 20},            // exists, empty
		{Topic: "m", Partition: 2, Offset: 1 << 30, MaxSize: 5}, // out of range
		{Topic: "m", Partition: 2, MaxSize: 1 << 20},
		{Topic: "m", Partition: 0, MaxSize: -3},
	}})
	code, payload := cl.response()
	if code != protocol.ErrNone {
		t.Fatalf("MULTIFETCH code %v", code)
	}
	want := []struct {
		code protocol.ErrorCode
		set  []byte
	}{{0, sets[0]}, {0, nil}, {protocol.ErrOffsetOutOfRange, nil}, {0, sets[1]}, {protocol.ErrInvalidFetchSize, nil}}
	n := 0
	err := protocol.DecodeMultiFetchResponse(payload, func(i int, code protocol.ErrorCode, set []byte) error {
		if code != want[i].code || !bytes.Equal(set, want[i].set) {
			t.Errorf("part %d: code %v, %d bytes; want %v, %d bytes", i, code, len(set), want[i].code, len(want[i].set))
		}
		n++
		return nil
	})
	if err != nil || n != len(want) {
		t.Fatalf("decoded %d parts, err %v", n, err)
	}
	// The connection is still in step afterwards.
	if code, b := cl.fetch("m", 2, 0, 1<<20); code != 0 || !bytes.Equal(b, sets[1]) {
		t.Fatalf("FETCH after MULTIFETCH: %v, %d bytes", code, len(b))
	}
}

func TestRandomPartition(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "4"})
	cl := dial(t, tb.Addr())
	for i := range 200 {
		cl.produce("r", protocol.RandomPartition, messageSet(i, 1, 10))
	}
	cl.sync()
	used, total := 0, int64(0)
	for p := range 4 {
		if l, ok := tb.Logs().Get("r", p); ok {
			used++
			total += l.LogEndOffset()
		}
	}
	if used < 2 || total != 200*int64(len(messageSet(0, 1, 10))) {
		t.Fatalf("partition -1 spread 200 sets over %d partitions (%d bytes)", used, total)
	}
}

// Concurrent fetches of one segment file at different offsets must not
// disturb each other (docs/PROTOCOL.md §4: sendfile with an explicit offset).
func TestConcurrentFetchesSameFile(t *testing.T) {
	tb := startBroker(t, nil)
	cl := dial(t, tb.Addr())
	const n = 20000
	set := messageSet(0, n, 100)
	for off := 0; off < len(set); off += 100 * 109 {
		cl.produce("c", 0, set[off:min(off+100*109, len(set))])
	}
	cl.sync()
	tb.Flush("c", 0)
	l, _ := tb.Logs().Get("c", 0)
	if l.FlushedEnd() != int64(len(set)) {
		t.Fatalf("high-water mark %d, want %d", l.FlushedEnd(), len(set))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, tb.Addr())
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 50 {
				off := rng.Int64N(int64(len(set)))
				size := 1 + rng.Int32N(300<<10)
				c.send(protocol.FetchRequest{Topic: "c", Partition: 0, Offset: off, MaxSize: size})
				code, b := c.response()
				want := set[off:min(off+int64(size), int64(len(set)))]
				if code != protocol.ErrNone || !bytes.Equal(b, want) {
					errs <- fmt.Errorf("goroutine %d: fetch %d bytes at %d: code %v, got %d bytes, equal=%v",
						g, size, off, code, len(b), bytes.Equal(b, want))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestCleanShutdownMarker(t *testing.T) {
	tb := startBroker(t, nil)
	cl := dial(t, tb.Addr())
	cl.produce("s", 0, messageSet(0, 3, 10))
	cl.sync()
	marker := filepath.Join(tb.Dir, log.CleanShutdownFile)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("clean-shutdown marker present while running")
	}
	// Stop is Close, then a check that Serve returned nil.
	if err := tb.Stop(); err != nil {
		t.Fatalf("Close or Serve: %v", err)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("no clean-shutdown marker after Close: %v", err)
	}
	if !cl.closedByBroker() {
		t.Fatal("client connection still open after Close")
	}
	// The data survived: a new broker on the same log.dir serves it.
	tb.Restart()
	if l, ok := tb.Logs().Get("s", 0); !ok || l.FlushedEnd() != int64(len(messageSet(0, 3, 10))) {
		t.Fatalf("after restart: log found %v", ok)
	}
}

func TestServeStopsOnContextCancel(t *testing.T) {
	cfg := broker.DefaultConfig()
	cfg.Hostname, cfg.Port, cfg.LogDir = "127.0.0.1", 0, t.TempDir()
	b, err := broker.New(cfg, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx) }()
	cl := dial(t, b.Addr())
	cl.sync()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := os.Stat(filepath.Join(cfg.LogDir, log.CleanShutdownFile)); err != nil {
		t.Fatalf("no marker after cancel: %v", err)
	}
	if err := b.Close(); err != nil { // idempotent
		t.Fatal(err)
	}
}

func TestNewErrors(t *testing.T) {
	cfg := broker.DefaultConfig()
	cfg.Hostname, cfg.Port, cfg.LogDir = "127.0.0.1", 0, t.TempDir()
	b, err := broker.New(cfg, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	// The port is taken.
	cfg2 := cfg
	cfg2.LogDir = t.TempDir()
	_, port, _ := splitHostPort(b.Addr().String())
	cfg2.Port = port
	if b2, err := broker.New(cfg2, broker.Options{}); err == nil {
		b2.Close()
		t.Fatal("broker.New on a busy port succeeded")
	}
	cfg2.Port = 0
	cfg2.NumPartitions = 0
	if _, err := broker.New(cfg2, broker.Options{}); !errors.Is(err, broker.ErrConfig) {
		t.Fatalf("broker.New with num.partitions=0: %v, want ErrConfig", err)
	}
}

// In a MULTIPRODUCE each set stands alone: a corrupt one is refused whole,
// the others are appended, and the connection stays open.
func TestMultiProducePartialFailure(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "2"})
	cl := dial(t, tb.Addr())
	good := messageSet(0, 4, 30)
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1
	cl.send(protocol.MultiProduceRequest{Produces: []protocol.ProduceRequest{
		{Topic: "mp", Partition: 0, Messages: good},
		{Topic: "mp", Partition: 1, Messages: bad},
		{Topic: "mp", Partition: 0, Messages: good},
		{Topic: "bad/name", Partition: 0, Messages: good},
	}})
	cl.sync()
	l0, _ := tb.Logs().Get("mp", 0)
	if l0 == nil || l0.LogEndOffset() != 2*int64(len(good)) {
		t.Fatalf("partition 0 should hold the two good sets")
	}
	if l1, ok := tb.Logs().Get("mp", 1); ok && l1.LogEndOffset() != 0 {
		t.Fatalf("partition 1 holds %d bytes of a corrupt set", l1.LogEndOffset())
	}
	checkConfined(t, tb)
}

// A fetch asking for more than max.socket.request.bytes gets that many.
func TestFetchSizeCap(t *testing.T) {
	const limit = 64 << 10
	tb := startBroker(t, map[string]string{"max.socket.request.bytes": strconv.Itoa(limit)})
	l, err := tb.Logs().GetOrCreate("cap", 0)
	if err != nil {
		t.Fatal(err)
	}
	set := messageSet(0, 1000, 100)
	if _, err := l.Append(set); err != nil {
		t.Fatal(err)
	}
	tb.Flush("cap", 0)
	cl := dial(t, tb.Addr())
	code, b := cl.fetch("cap", 0, 0, math.MaxInt32)
	if code != protocol.ErrNone || !bytes.Equal(b, set[:limit]) {
		t.Fatalf("huge fetch: code %v, %d bytes; want the first %d bytes", code, len(b), limit)
	}
}

// The broker hands its logger to the log manager it creates: the log's
// lines arrive there, marked component=log.
func TestLoggerReachesTheLogManager(t *testing.T) {
	var buf brokertest.LogBuffer
	cfg := broker.DefaultConfig()
	cfg.Hostname, cfg.Port, cfg.LogDir = "127.0.0.1", 0, t.TempDir()
	b, err := broker.New(cfg, broker.Options{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Logs().GetOrCreate("t", 0); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="loaded logs" component=log`, `msg="created partition" component=log`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("the broker's logger got no %s:\n%s", want, buf.String())
		}
	}
}

// The broker's own lines name it in an attribute, component=broker, not in
// a "broker: " prefix of the message; the log manager's say component=log.
func TestLogLinesNameTheirComponent(t *testing.T) {
	var buf brokertest.LogBuffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	tb := brokertest.Start(t, 0, brokertest.Options{Logger: logger})
	cl := dial(t, tb.Addr())
	cl.write([]byte{0x7f, 0xff, 0xff, 0xff}) // a size past max.socket.request.bytes
	if !cl.closedByBroker() {
		t.Fatal("a request of 2 GiB did not close its connection")
	}
	if err := tb.Stop(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	for _, want := range []struct{ msg, component string }{
		{`msg=started`, "broker"}, {`msg="connection opened"`, "broker"}, {`msg="closing connection"`, "broker"},
		{`msg=stopped`, "broker"}, {`msg="loaded logs"`, "log"},
	} {
		found := false
		for _, l := range lines {
			found = found || strings.Contains(l, want.msg+" ") && strings.Contains(l, " component="+want.component+" ")
		}
		if !found {
			t.Errorf("no line with %s and component=%s in:\n%s", want.msg, want.component, buf.String())
		}
	}
	for _, l := range lines {
		if !strings.Contains(l, " component=") || strings.Contains(l, `msg="broker: `) || strings.Contains(l, `msg=broker:`) {
			t.Errorf("line without a component, or with the old prefix: %s", l)
		}
	}
}

// A client that closes while its fetch is being answered (a consumer
// closing with FetchAhead's next fetch in flight) makes the broker's write
// fail with ECONNRESET or EPIPE. The client went away; the broker logs it
// at debug level, as any client's close, and warns about nothing.
func TestClientClosingDuringAFetchIsNoWarning(t *testing.T) {
	for _, c := range []struct {
		name       string
		readHeader bool // read the answer's header first, so the close leaves bytes unread
	}{
		{"while the answer streams", true},
		{"before the answer", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs brokertest.LogBuffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			tb := brokertest.Start(t, 0, brokertest.Options{Logger: logger})
			cl := dial(t, tb.Addr())
			set := messageSet(0, 4000, 1000) // 4 MB: more than the sockets' buffers hold
			cl.produce("gone", 0, set)
			cl.sync()
			tb.Flush("gone", 0)
			// A small receive buffer, so the broker is still sending when
			// the client closes.
			cl.c.(*net.TCPConn).SetReadBuffer(4 << 10)
			cl.send(protocol.FetchRequest{Topic: "gone", Partition: 0, Offset: 0, MaxSize: int32(len(set))})
			if c.readHeader {
				var hdr [6]byte
				cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.ReadFull(cl.r, hdr[:]); err != nil {
					t.Fatalf("read the fetch answer's header: %v", err)
				}
			}
			cl.c.Close()
			waitUntil(t, func() bool { return tb.Connections() == 0 })
			if err := tb.Stop(); err != nil {
				t.Fatal(err)
			}
			out := logs.String()
			for _, l := range strings.Split(out, "\n") {
				if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") {
					t.Errorf("a client's close was logged as: %s", l)
				}
			}
			if !strings.Contains(out, `level=DEBUG msg="connection closed by client"`) {
				t.Errorf("no debug line for the client's close:\n%s", out)
			}
			if c.readHeader && !strings.Contains(out, "connection reset by peer") && !strings.Contains(out, "broken pipe") {
				t.Errorf("the close during the answer was not seen as a reset or a broken pipe:\n%s", out)
			}
		})
	}
}

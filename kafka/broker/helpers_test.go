package broker_test

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// startBroker starts a broker (brokertest: 127.0.0.1, a free port, log.dir
// in a fresh temporary directory) with the given server.properties
// overrides and no flush timer: the tests flush explicitly (tb.Flush).
func startBroker(t testing.TB, props map[string]string) *brokertest.Broker {
	t.Helper()
	p := map[string]string{"log.default.flush.interval.ms": "0"}
	maps.Copy(p, props)
	return brokertest.Start(t, 0, brokertest.Options{Props: p})
}

// checkConfined fails if anything exists next to log.dir, in the temporary
// directory brokertest made for it.
func checkConfined(t testing.TB, tb *brokertest.Broker) {
	t.Helper()
	parent := filepath.Dir(tb.Dir)
	err := filepath.Walk(parent, func(path string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if path != parent && path != tb.Dir && !strings.HasPrefix(path, tb.Dir+string(filepath.Separator)) {
			return fmt.Errorf("%s was written outside log.dir %s", path, tb.Dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// client is a minimal test client speaking the protocol.
type client struct {
	t   testing.TB
	c   net.Conn
	r   *bufio.Reader
	out []byte
	in  []byte
}

func dial(t testing.TB, addr net.Addr) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr.String())
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return &client{t: t, c: c, r: bufio.NewReaderSize(c, 256<<10)}
}

func (cl *client) send(r protocol.Request) {
	cl.t.Helper()
	cl.out = r.AppendTo(cl.out[:0])
	cl.write(cl.out)
}

func (cl *client) write(b []byte) {
	cl.t.Helper()
	if _, err := cl.c.Write(b); err != nil {
		cl.t.Fatalf("write: %v", err)
	}
}

func (cl *client) response() (protocol.ErrorCode, []byte) {
	cl.t.Helper()
	cl.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	code, payload, buf, err := protocol.ReadResponse(cl.r, cl.in)
	cl.in = buf
	if err != nil {
		cl.t.Fatalf("reading response: %v", err)
	}
	return code, payload
}

func (cl *client) produce(topic string, partition int32, set []byte) {
	cl.t.Helper()
	cl.send(protocol.ProduceRequest{Topic: topic, Partition: partition, Messages: set})
}

func (cl *client) fetch(topic string, partition int32, offset int64, maxSize int32) (protocol.ErrorCode, []byte) {
	cl.t.Helper()
	cl.send(protocol.FetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxSize: maxSize})
	return cl.response()
}

func (cl *client) offsets(topic string, partition int32, time int64, max int32) (protocol.ErrorCode, []int64) {
	cl.t.Helper()
	cl.send(protocol.OffsetsRequest{Topic: topic, Partition: partition, Time: time, MaxNumOffsets: max})
	code, payload := cl.response()
	offs, err := protocol.DecodeOffsetsResponse(payload)
	if err != nil {
		cl.t.Fatal(err)
	}
	return code, offs
}

// sync makes a round trip, so every request sent before it has been served
// (a connection's requests are served in order).
func (cl *client) sync() {
	cl.t.Helper()
	cl.offsets("sync", 0, protocol.OffsetsLatest, 1)
}

// closedByBroker reports whether the broker closed the connection.
func (cl *client) closedByBroker() bool {
	cl.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err := io.Copy(io.Discard, cl.r)
	return err == nil || errors.Is(err, net.ErrClosed) || isReset(err)
}

func isReset(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && strings.Contains(op.Err.Error(), "reset")
}

// messageSet builds n magic-0 messages of size payload bytes each, payload i
// starting with its index.
func messageSet(from, n, size int) []byte {
	var set []byte
	payload := make([]byte, size)
	for i := from; i < from+n; i++ {
		copy(payload, fmt.Sprintf("%08d", i))
		set = message.AppendV0(set, payload)
	}
	return set
}

// payloads decodes a fetched set into its payloads, keeping only whole
// messages; it returns the bytes of whole messages consumed.
func payloads(t testing.TB, set []byte) ([]string, int) {
	t.Helper()
	var out []string
	it := message.NewIterator(set, 0)
	for it.Next() {
		m := it.Message()
		if !m.Valid() {
			t.Fatalf("message at %d fails its CRC", it.Offset())
		}
		out = append(out, string(m.Payload()[:min(8, len(m.Payload()))]))
	}
	if it.Err() != nil {
		t.Fatalf("fetched set: %v", it.Err())
	}
	return out, it.Consumed()
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	var port int
	_, err = fmt.Sscan(p, &port)
	return host, port, err
}

// TestMain silences the default logger unless -v is given: the tests that
// call broker.New themselves with a nil Logger log through it, and so does
// LoadConfig.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

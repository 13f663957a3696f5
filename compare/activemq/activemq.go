// Package activemq is the compare.System adapter for Apache ActiveMQ, one of the two systems the paper's
// §5 measures Kafka against ("Apache ActiveMQ v5.4, a popular open-source implementation of JMS").
//
// It speaks STOMP 1.2 through our own client (package compare/stomp; no Go OpenWire/JMS client exists
// here), to a broker started by scripts/activemq.sh with the paper's settings:
//
//   - Producer test (§5, figure 4): persistent messages (persistent:true) stored in KahaDB, "the default
//     persistent message store", whose journal is written without fsync per message ("we configured all
//     systems' brokers to flush messages to their persistence store asynchronously"). One message per
//     SEND ("ActiveMQ and RabbitMQ don't seem to have an easy way to batch messages"), and no receipt
//     except on the last SEND: its RECEIPT tells us the broker holds every message, so the test's
//     elapsed time ends there, not when the last write returns.
//   - Consumer test (§5, figure 5): one subscription with ack:auto ("automatic acknowledgement mode") and
//     activemq.prefetchSize 1000 ("up to 1000 messages or about 200KB" per pull).
package activemq

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"kafkarepro/compare"
	"kafkarepro/compare/localsvc"
	"kafkarepro/compare/stomp"
)

// DefaultPrefetch is the consumer's activemq.prefetchSize when ConsumeSpec.PrefetchMessages is 0.
const DefaultPrefetch = 1000

// ErrSpec reports an unusable ProduceSpec or ConsumeSpec.
var ErrSpec = errors.New("activemq: bad spec")

// System is a connection point to one ActiveMQ broker. Produce and Consume each open their own STOMP
// connection.
type System struct {
	ep     compare.Endpoint
	addr   string
	server string // CONNECTED's server header, e.g. "ActiveMQ/5.17.2"
	// IdleTimeout fails a Produce or Consume when the broker sends nothing for this long (a hung broker;
	// a killed one resets the connection at once). Default 2 minutes.
	IdleTimeout time.Duration
}

var _ compare.System = (*System)(nil)

// New checks that the broker at ep answers STOMP and returns its adapter.
func New(ep compare.Endpoint) (*System, error) {
	host := ep.Host
	if host == "" {
		host = "127.0.0.1"
	}
	s := &System{ep: ep, addr: net.JoinHostPort(host, strconv.Itoa(ep.Port)), IdleTimeout: 2 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := stomp.Dial(ctx, s.addr, stomp.Options{})
	if err != nil {
		return nil, s.wrap("connect", err)
	}
	s.server = c.Server()
	if err := c.Disconnect(10 * time.Second); err != nil {
		return nil, s.wrap("disconnect", err)
	}
	return s, nil
}

// wrap names the broker and its log in an error.
func (s *System) wrap(what string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		err = fmt.Errorf("the broker closed the connection (stopped or crashed?): %w", err)
	}
	if s.ep.LogPath != "" {
		return fmt.Errorf("activemq: %s at %s: %w (server log %s)", what, s.addr, err, s.ep.LogPath)
	}
	return fmt.Errorf("activemq: %s at %s: %w", what, s.addr, err)
}

// Name implements compare.System.
func (s *System) Name() string { return "activemq" }

// Settings implements compare.System.
func (s *System) Settings() map[string]string {
	version := s.ep.Version
	if v, ok := strings.CutPrefix(s.server, "ActiveMQ/"); ok {
		version = v
	}
	return map[string]string{
		"system":           "Apache ActiveMQ",
		"server_version":   version,
		"protocol":         "STOMP 1.2 (stomp:// transport connector, transport.closeAsync=false)",
		"client":           "kafkarepro/compare/stomp (our own STOMP 1.2 client; no Go JMS/OpenWire client)",
		"persistence":      "persistent messages (persistent:true) in KahaDB, the default store",
		"flush":            "KahaDB journal written without per-message fsync (enableJournalDiskSyncs=false): the OS flushes asynchronously",
		"destination":      "queue /queue/<topic>",
		"produce":          "one message per SEND, no receipt except on the last; done at the last RECEIPT",
		"produce_batching": "none at the protocol level (Batch>1 only coalesces that many SENDs into one TCP write)",
		"ack":              "auto (STOMP ack:auto)",
		"prefetch":         "activemq.prefetchSize = ConsumeSpec.PrefetchMessages (default 1000 messages; ActiveMQ has no byte limit, PrefetchBytes unused)",
		"flow_control":     "producerFlowControl=false for queues; memory 256 MB (128 MB per queue), store 20 GB, heap 1 GB",
		"disk_bytes":       "allocated bytes of the KahaDB directory (journal, index, redo)",
	}
}

// payload is one message body of size bytes, reused for every message.
func payload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// Produce implements compare.System: spec.Messages persistent SENDs of spec.MessageSize bytes to
// /queue/<Topic>, the last one with a receipt.
func (s *System) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	if spec.Messages <= 0 || spec.MessageSize < 0 || spec.Topic == "" {
		return compare.Result{}, fmt.Errorf("%w: produce %d messages of %d bytes to topic %q", ErrSpec, spec.Messages, spec.MessageSize, spec.Topic)
	}
	c, err := stomp.Dial(ctx, s.addr, stomp.Options{})
	if err != nil {
		return compare.Result{}, s.wrap("produce: connect", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	batch := max(spec.Batch, 1)
	send := stomp.Frame{Command: stomp.CmdSend, Headers: []stomp.Header{
		{Key: stomp.HdrDestination, Value: "/queue/" + spec.Topic},
		{Key: stomp.HdrPersistent, Value: "true"},
	}, Body: payload(spec.MessageSize)}
	const receipt = "produced"
	start := time.Now()
	for i := range spec.Messages {
		last := i == spec.Messages-1
		if last {
			send.Headers = append(send.Headers, stomp.Header{Key: stomp.HdrReceipt, Value: receipt})
		}
		c.Buffer(&send)
		if last || (i+1)%batch == 0 {
			if err := c.Flush(); err != nil {
				return s.partial(ctx, spec, i, start, "produce", err)
			}
		}
		if spec.Sent != nil {
			spec.Sent.Add(1)
		}
	}
	// §5: the producer's time runs until the broker holds every message. ActiveMQ handles one
	// connection's frames in order, so the receipt of the last SEND comes after all are stored.
	_ = c.NetConn().SetReadDeadline(time.Now().Add(s.IdleTimeout))
	if err := c.AwaitReceipt(receipt); err != nil {
		return s.partial(ctx, spec, spec.Messages, start, "produce", err)
	}
	elapsed := time.Since(start)
	_ = c.Disconnect(10 * time.Second)
	n := int64(spec.Messages)
	return compare.Result{Messages: n, Bytes: n * int64(spec.MessageSize), Elapsed: elapsed}, nil
}

// partial reports how far a test got before it failed.
func (s *System) partial(ctx context.Context, spec compare.ProduceSpec, done int, start time.Time, what string, err error) (compare.Result, error) {
	if ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	r := compare.Result{Messages: int64(done), Bytes: int64(done) * int64(spec.MessageSize), Elapsed: time.Since(start)}
	return r, s.wrap(fmt.Sprintf("%s to /queue/%s failed after %d of %d messages", what, spec.Topic, done, spec.Messages), err)
}

// Consume implements compare.System: one ack:auto subscription to /queue/<Topic> with a prefetch of
// spec.PrefetchMessages (default 1000), until spec.Messages messages have arrived.
func (s *System) Consume(ctx context.Context, spec compare.ConsumeSpec) (compare.Result, error) {
	if spec.Messages <= 0 || spec.Topic == "" {
		return compare.Result{}, fmt.Errorf("%w: consume %d messages from topic %q", ErrSpec, spec.Messages, spec.Topic)
	}
	prefetch := spec.PrefetchMessages
	if prefetch <= 0 {
		prefetch = DefaultPrefetch
	}
	c, err := stomp.Dial(ctx, s.addr, stomp.Options{})
	if err != nil {
		return compare.Result{}, s.wrap("consume: connect", err)
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	start := time.Now()
	var got int64
	fail := func(err error) (compare.Result, error) {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		r := compare.Result{Messages: got, Bytes: got * int64(spec.MessageSize), Elapsed: time.Since(start)}
		return r, s.wrap(fmt.Sprintf("consume from /queue/%s failed after %d of %d messages", spec.Topic, got, spec.Messages), err)
	}
	if err := c.Subscribe("0", "/queue/"+spec.Topic, "auto",
		stomp.Header{Key: stomp.HdrActiveMQPrefetch, Value: strconv.Itoa(prefetch)}); err != nil {
		return fail(err)
	}
	nc := c.NetConn()
	for got < int64(spec.Messages) {
		_ = nc.SetReadDeadline(time.Now().Add(s.IdleTimeout))
		f, err := c.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				err = fmt.Errorf("no message for %v: %w", s.IdleTimeout, err)
			}
			return fail(err)
		}
		if f.Command != stomp.CmdMessage {
			continue // e.g. a RECEIPT
		}
		if spec.MessageSize > 0 && len(f.Body) != spec.MessageSize {
			return fail(fmt.Errorf("message %d has %d bytes, want %d", got, len(f.Body), spec.MessageSize))
		}
		got++
		if spec.Received != nil {
			spec.Received.Add(1)
		}
	}
	elapsed := time.Since(start)
	_ = c.Unsubscribe("0")
	_ = c.Disconnect(5 * time.Second)
	return compare.Result{Messages: got, Bytes: got * int64(spec.MessageSize), Elapsed: elapsed}, nil
}

// DiskBytes implements compare.System: the space of the KahaDB directory (DataDir/kahadb, or DataDir
// itself when it is the KahaDB directory).
func (s *System) DiskBytes() (int64, error) {
	if s.ep.DataDir == "" {
		return 0, fmt.Errorf("activemq: disk bytes: the endpoint has no data directory on this host")
	}
	dir := filepath.Join(s.ep.DataDir, "kahadb")
	if _, err := os.Stat(dir); err != nil {
		dir = s.ep.DataDir
	}
	return localsvc.DiskUsage(dir)
}

// Close implements compare.System; the adapter holds no connection between tests.
func (s *System) Close() error { return nil }

// Package activemq is the compare.System adapter for Apache ActiveMQ, one of the two systems the paper's
// §5 measures Kafka against: "Apache ActiveMQ v5.4 [1], a popular open-source implementation of JMS".
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
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/stomp"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// DefaultPrefetch is the consumer's activemq.prefetchSize when ConsumeSpec.PrefetchMessages is 0.
const DefaultPrefetch = 1000

// System is a connection point to one ActiveMQ broker. Produce and Consume each open their own STOMP
// connection.
type System struct {
	remote compare.Remote // names the broker and its log in errors
	server string         // CONNECTED's server header, e.g. "ActiveMQ/5.17.2"
	// IdleTimeout fails a Produce or Consume when the broker sends nothing for this long (a hung broker;
	// a killed one resets the connection at once). Default 2 minutes.
	IdleTimeout time.Duration
}

var _ compare.System = (*System)(nil)

// New checks that the broker at ep answers STOMP and returns its adapter.
func New(ep compare.Endpoint) (*System, error) {
	s := &System{remote: compare.NewRemote("activemq", "broker", ep), IdleTimeout: 2 * time.Minute}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := stomp.Dial(ctx, s.remote.Addr, stomp.Options{})
	if err != nil {
		return nil, s.remote.Wrap("connect", err)
	}
	s.server = c.Server()
	if err := c.Disconnect(10 * time.Second); err != nil {
		return nil, s.remote.Wrap("disconnect", err)
	}
	return s, nil
}

// Name implements compare.System.
func (s *System) Name() string { return "activemq" }

// Settings implements compare.System.
func (s *System) Settings() map[string]string {
	version := s.remote.Endpoint.Version
	if v, ok := strings.CutPrefix(s.server, "ActiveMQ/"); ok {
		version = v
	}
	return map[string]string{
		"system":           "Apache ActiveMQ",
		"server_version":   version,
		"protocol":         "STOMP 1.2 (stomp:// transport connector, transport.closeAsync=false)",
		"client":           "github.com/kafkarepro/kafkarepro/compare/stomp (our own STOMP 1.2 client; no Go JMS/OpenWire client)",
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

// connect opens the STOMP connection of one test; ending ctx closes it, which is how a cancelled test
// stops waiting for the broker. done closes it and stops watching ctx.
func (s *System) connect(ctx context.Context, test string) (c *stomp.Conn, done func(), err error) {
	c, err = stomp.Dial(ctx, s.remote.Addr, stomp.Options{})
	if err != nil {
		return nil, nil, s.remote.Wrap(test+": connect", err)
	}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	return c, func() { stop(); c.Close() }, nil
}

// Produce implements compare.System: spec.Messages persistent SENDs of spec.MessageSize bytes to
// /queue/<Topic>, the last one with a receipt.
func (s *System) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	if err := compare.CheckProduce(ErrSpec, spec); err != nil {
		return compare.Result{}, err
	}
	c, done, err := s.connect(ctx, "produce")
	if err != nil {
		return compare.Result{}, err
	}
	defer done()

	batch := max(spec.Batch, 1)
	send := stomp.Frame{Command: stomp.CmdSend, Headers: []stomp.Header{
		{Key: stomp.HdrDestination, Value: "/queue/" + spec.Topic},
		{Key: stomp.HdrPersistent, Value: "true"},
	}, Body: compare.Payload(spec.MessageSize)}
	const receipt = "produced"
	run := s.remote.BeginProduce(ctx, "/queue/"+spec.Topic, spec)
	for i := range spec.Messages {
		last := i == spec.Messages-1
		if last {
			send.Headers = append(send.Headers, stomp.Header{Key: stomp.HdrReceipt, Value: receipt})
		}
		c.Buffer(&send)
		if last || (i+1)%batch == 0 {
			if err := c.Flush(); err != nil {
				return run.Fail(err)
			}
		}
		run.Add()
	}
	// §5: the producer's time runs until the broker holds every message. ActiveMQ handles one
	// connection's frames in order, so the receipt of the last SEND comes after all are stored.
	_ = c.NetConn().SetReadDeadline(time.Now().Add(s.IdleTimeout))
	if err := c.AwaitReceipt(receipt); err != nil {
		return run.Fail(err)
	}
	r := run.Result()
	_ = c.Disconnect(10 * time.Second)
	return r, nil
}

// Consume implements compare.System: one ack:auto subscription to /queue/<Topic> with a prefetch of
// spec.PrefetchMessages (default 1000), until spec.Messages messages have arrived.
func (s *System) Consume(ctx context.Context, spec compare.ConsumeSpec) (compare.Result, error) {
	prefetch, err := compare.CheckConsume(ErrSpec, spec, DefaultPrefetch)
	if err != nil {
		return compare.Result{}, err
	}
	c, done, err := s.connect(ctx, "consume")
	if err != nil {
		return compare.Result{}, err
	}
	defer done()

	run := s.remote.BeginConsume(ctx, "/queue/"+spec.Topic, spec)
	if err := c.Subscribe("0", "/queue/"+spec.Topic, "auto",
		stomp.Header{Key: stomp.HdrActiveMQPrefetch, Value: strconv.Itoa(prefetch)}); err != nil {
		return run.Fail(err)
	}
	// The no-progress watchdog is the connection's read deadline, renewed before every frame.
	nc := c.NetConn()
	for !run.Complete() {
		_ = nc.SetReadDeadline(time.Now().Add(s.IdleTimeout))
		f, err := c.ReadFrame()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				err = fmt.Errorf("no message for %v: %w", s.IdleTimeout, err)
			}
			return run.Fail(err)
		}
		if f.Command != stomp.CmdMessage {
			continue // e.g. a RECEIPT
		}
		if err := run.Received(len(f.Body)); err != nil {
			return run.Fail(err)
		}
	}
	r := run.Result()
	_ = c.Unsubscribe("0")
	_ = c.Disconnect(5 * time.Second)
	return r, nil
}

// DiskBytes implements compare.System: the space of the KahaDB directory (DataDir/kahadb, or DataDir
// itself when it is the KahaDB directory).
func (s *System) DiskBytes() (int64, error) {
	return s.remote.DiskUsage("kahadb", localsvc.DiskUsage)
}

// Close implements compare.System; the adapter holds no connection between tests.
func (s *System) Close() error { return nil }

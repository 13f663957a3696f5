// Package rabbitmq is the compare.System adapter for RabbitMQ, the second system the paper's §5 measures
// Kafka against ("RabbitMQ v2.4, a messaging system known for its performance"). It speaks AMQP 0-9-1
// through github.com/rabbitmq/amqp091-go, RabbitMQ's own Go client, to a node started by
// scripts/rabbitmq.sh.
//
//   - Producer test (§5, figure 4): a durable classic queue and persistent messages (delivery mode 2),
//     one message per basic.publish, without publisher confirms: RabbitMQ then writes them to its store
//     asynchronously ("we configured all systems' brokers to flush messages to their persistence store
//     asynchronously"). Since nothing acknowledges a publish, the test ends when the queue's depth
//     (queue.declare-ok message count) shows every message enqueued.
//   - Consumer test (§5, figure 5): one consumer with automatic acknowledgement (no-ack) and basic.qos
//     prefetch 1000. RabbitMQ applies the prefetch count only to unacknowledged deliveries, so with
//     no-ack it pushes as fast as its credit flow and TCP allow; Settings says so.
package rabbitmq

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"kafkarepro/compare"
	"kafkarepro/compare/localsvc"
)

// DefaultPrefetch is the consumer's basic.qos prefetch count when ConsumeSpec.PrefetchMessages is 0.
const DefaultPrefetch = 1000

// ErrSpec reports an unusable ProduceSpec or ConsumeSpec.
var ErrSpec = errors.New("rabbitmq: bad spec")

// System is a connection point to one RabbitMQ node. Produce and Consume each open their own connection.
type System struct {
	ep      compare.Endpoint
	url     string
	version string // the server's "version" property
	// IdleTimeout fails a Produce (waiting for the queue depth) or a Consume when nothing progresses for
	// this long. Default 2 minutes.
	IdleTimeout time.Duration
}

var _ compare.System = (*System)(nil)

// New checks that the node at ep answers AMQP (as guest/guest on the default vhost) and returns its
// adapter.
func New(ep compare.Endpoint) (*System, error) {
	host := ep.Host
	if host == "" {
		host = "127.0.0.1"
	}
	u := url.URL{Scheme: "amqp", User: url.UserPassword("guest", "guest"), Host: net.JoinHostPort(host, strconv.Itoa(ep.Port)), Path: "/"}
	s := &System{ep: ep, url: u.String(), IdleTimeout: 2 * time.Minute}
	conn, err := s.dial()
	if err != nil {
		return nil, s.wrap("connect", err)
	}
	if v, ok := conn.Properties["version"].(string); ok {
		s.version = v
	}
	if err := conn.Close(); err != nil {
		return nil, s.wrap("close", err)
	}
	return s, nil
}

func (s *System) dial() (*amqp.Connection, error) {
	return amqp.DialConfig(s.url, amqp.Config{
		Heartbeat: 10 * time.Second, // notices a hung node; a killed one resets the connection at once
		Locale:    "en_US",
		Dial:      amqp.DefaultDial(30 * time.Second),
	})
}

// wrap names the node and its log in an error.
func (s *System) wrap(what string, err error) error {
	addr := net.JoinHostPort(s.ep.Host, strconv.Itoa(s.ep.Port))
	if s.ep.LogPath != "" {
		return fmt.Errorf("rabbitmq: %s at %s: %w (server log %s)", what, addr, err, s.ep.LogPath)
	}
	return fmt.Errorf("rabbitmq: %s at %s: %w", what, addr, err)
}

// Name implements compare.System.
func (s *System) Name() string { return "rabbitmq" }

// Settings implements compare.System.
func (s *System) Settings() map[string]string {
	version := s.version
	if version == "" {
		version = s.ep.Version
	}
	return map[string]string{
		"system":           "RabbitMQ",
		"server_version":   version,
		"protocol":         "AMQP 0-9-1",
		"client":           "github.com/rabbitmq/amqp091-go " + clientVersion(),
		"persistence":      "durable classic queue (version 1, not lazy), persistent messages (delivery mode 2)",
		"flush":            "no publisher confirms: the node writes its queue index and message store asynchronously (default fsync policy)",
		"destination":      "default exchange to the queue named <topic>",
		"produce":          "one message per basic.publish (one TCP write each); done when the queue depth reaches the count",
		"produce_batching": "none (AMQP 0-9-1 has no batch publish; Batch is ignored)",
		"ack":              "auto (basic.consume no-ack)",
		"prefetch":         "basic.qos prefetch = ConsumeSpec.PrefetchMessages (default 1000); RabbitMQ ignores it for no-ack consumers and has no byte limit (PrefetchBytes unused)",
		"flow_control":     "defaults: memory alarm at 40% of RAM, disk alarm below 50 MB free, credit flow",
		"disk_bytes":       "allocated bytes of the node's msg_stores directory (message stores and queue indexes; 200-byte messages are embedded in the index)",
	}
}

// clientVersion is the amqp091-go module version this binary was built with.
func clientVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == "github.com/rabbitmq/amqp091-go" {
				return d.Version
			}
		}
	}
	return "(version unknown)"
}

// payload is one message body of size bytes, reused for every message.
func payload(size int) []byte {
	b := make([]byte, size)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return b
}

// Produce implements compare.System: spec.Messages persistent publishes of spec.MessageSize bytes to the
// durable queue spec.Topic, then a wait until the queue holds them all.
func (s *System) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	if spec.Messages <= 0 || spec.MessageSize < 0 || spec.Topic == "" {
		return compare.Result{}, fmt.Errorf("%w: produce %d messages of %d bytes to topic %q", ErrSpec, spec.Messages, spec.MessageSize, spec.Topic)
	}
	conn, err := s.dial()
	if err != nil {
		return compare.Result{}, s.wrap("produce: connect", err)
	}
	defer conn.Close()
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	ch, err := conn.Channel()
	if err != nil {
		return compare.Result{}, s.wrap("produce: open channel", err)
	}
	q, err := ch.QueueDeclare(spec.Topic, true, false, false, false, nil)
	if err != nil {
		return compare.Result{}, s.wrap(fmt.Sprintf("produce: declare durable queue %q", spec.Topic), err)
	}
	target := q.Messages + spec.Messages

	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, Body: payload(spec.MessageSize)}
	start := time.Now()
	fail := func(done int, err error) (compare.Result, error) {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		} else if reason := lost(closed); reason != nil {
			err = fmt.Errorf("connection lost: %w (%v)", reason, err)
		}
		r := compare.Result{Messages: int64(done), Bytes: int64(done) * int64(spec.MessageSize), Elapsed: time.Since(start)}
		return r, s.wrap(fmt.Sprintf("produce to queue %q failed after %d of %d messages", spec.Topic, done, spec.Messages), err)
	}
	for i := range spec.Messages {
		if err := ch.Publish("", spec.Topic, false, false, msg); err != nil {
			return fail(i, err)
		}
		if spec.Sent != nil {
			spec.Sent.Add(1)
		}
	}
	// §5: the producer's time runs until the broker holds every message.
	last, lastChange := -1, time.Now()
	for {
		q, err := ch.QueueDeclarePassive(spec.Topic, true, false, false, false, nil)
		if err != nil {
			return fail(spec.Messages, fmt.Errorf("reading the queue depth: %w", err))
		}
		if q.Messages >= target {
			break
		}
		if q.Messages != last {
			last, lastChange = q.Messages, time.Now()
		} else if time.Since(lastChange) > s.IdleTimeout {
			return fail(spec.Messages, fmt.Errorf("queue depth stuck at %d of %d for %v", q.Messages, target, s.IdleTimeout))
		}
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	n := int64(spec.Messages)
	return compare.Result{Messages: n, Bytes: n * int64(spec.MessageSize), Elapsed: elapsed}, nil
}

// lost returns why the connection closed, waiting up to a second for amqp091-go to report it, or nil.
func lost(closed <-chan *amqp.Error) error {
	select {
	case e, ok := <-closed:
		if ok && e != nil {
			return e
		}
	case <-time.After(time.Second):
	}
	return nil
}

// Consume implements compare.System: one no-ack consumer on queue spec.Topic with basic.qos prefetch
// spec.PrefetchMessages (default 1000), until spec.Messages messages have arrived.
func (s *System) Consume(ctx context.Context, spec compare.ConsumeSpec) (compare.Result, error) {
	if spec.Messages <= 0 || spec.Topic == "" {
		return compare.Result{}, fmt.Errorf("%w: consume %d messages from topic %q", ErrSpec, spec.Messages, spec.Topic)
	}
	prefetch := spec.PrefetchMessages
	if prefetch <= 0 {
		prefetch = DefaultPrefetch
	}
	conn, err := s.dial()
	if err != nil {
		return compare.Result{}, s.wrap("consume: connect", err)
	}
	defer conn.Close()
	closed := conn.NotifyClose(make(chan *amqp.Error, 1))
	ch, err := conn.Channel()
	if err != nil {
		return compare.Result{}, s.wrap("consume: open channel", err)
	}
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return compare.Result{}, s.wrap(fmt.Sprintf("consume: basic.qos %d", prefetch), err)
	}
	start := time.Now()
	deliveries, err := ch.Consume(spec.Topic, "", true, false, false, false, nil)
	if err != nil {
		return compare.Result{}, s.wrap(fmt.Sprintf("consume: basic.consume on queue %q", spec.Topic), err)
	}
	var got int64
	fail := func(err error) (compare.Result, error) {
		r := compare.Result{Messages: got, Bytes: got * int64(spec.MessageSize), Elapsed: time.Since(start)}
		return r, s.wrap(fmt.Sprintf("consume from queue %q failed after %d of %d messages", spec.Topic, got, spec.Messages), err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var atTick int64
	var idle time.Duration
	for got < int64(spec.Messages) {
		select {
		case d, ok := <-deliveries:
			if !ok {
				if reason := lost(closed); reason != nil {
					return fail(fmt.Errorf("connection lost: %w", reason))
				}
				return fail(errors.New("the node closed the delivery stream (connection lost)"))
			}
			if spec.MessageSize > 0 && len(d.Body) != spec.MessageSize {
				return fail(fmt.Errorf("message %d has %d bytes, want %d", got, len(d.Body), spec.MessageSize))
			}
			got++
			if spec.Received != nil {
				spec.Received.Add(1)
			}
		case <-tick.C:
			if got != atTick {
				atTick, idle = got, 0
				continue
			}
			if idle += time.Second; idle >= s.IdleTimeout {
				return fail(fmt.Errorf("no message for %v", s.IdleTimeout))
			}
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	elapsed := time.Since(start)
	return compare.Result{Messages: got, Bytes: got * int64(spec.MessageSize), Elapsed: elapsed}, nil
}

// DiskBytes implements compare.System: the space of the node's message stores (DataDir/msg_stores, or
// DataDir itself when it has none).
func (s *System) DiskBytes() (int64, error) {
	if s.ep.DataDir == "" {
		return 0, fmt.Errorf("rabbitmq: disk bytes: the endpoint has no data directory on this host")
	}
	dir := filepath.Join(s.ep.DataDir, "msg_stores")
	if _, err := os.Stat(dir); err != nil {
		dir = s.ep.DataDir
	}
	return localsvc.DiskUsage(dir)
}

// Close implements compare.System; the adapter holds no connection between tests.
func (s *System) Close() error { return nil }

// Package rabbitmq is the compare.System adapter for RabbitMQ, the second system the paper's §5 measures
// Kafka against: "RabbitMQ v2.4 [16], a message system known for its performance". It speaks AMQP 0-9-1
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
	"net/url"
	"runtime/debug"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// DefaultPrefetch is the consumer's basic.qos prefetch count when ConsumeSpec.PrefetchMessages is 0.
const DefaultPrefetch = 1000

// System is a connection point to one RabbitMQ node. Produce and Consume each open their own connection.
type System struct {
	remote  compare.Remote // names the node and its log in errors
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
	remote := compare.NewRemote("rabbitmq", "node", ep)
	u := url.URL{Scheme: "amqp", User: url.UserPassword("guest", "guest"), Host: remote.Addr, Path: "/"}
	s := &System{remote: remote, url: u.String(), IdleTimeout: 2 * time.Minute}
	conn, err := s.dial()
	if err != nil {
		return nil, s.remote.Wrap("connect", err)
	}
	if v, ok := conn.Properties["version"].(string); ok {
		s.version = v
	}
	if err := conn.Close(); err != nil {
		return nil, s.remote.Wrap("close", err)
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

// Name implements compare.System.
func (s *System) Name() string { return "rabbitmq" }

// Settings implements compare.System.
func (s *System) Settings() map[string]string {
	version := s.version
	if version == "" {
		version = s.remote.Endpoint.Version
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

// connect opens the connection and channel of one test; closed reports why the connection closed.
func (s *System) connect(test string) (conn *amqp.Connection, ch *amqp.Channel, closed chan *amqp.Error, err error) {
	if conn, err = s.dial(); err != nil {
		return nil, nil, nil, s.remote.Wrap(test+": connect", err)
	}
	closed = conn.NotifyClose(make(chan *amqp.Error, 1))
	if ch, err = conn.Channel(); err != nil {
		conn.Close()
		return nil, nil, nil, s.remote.Wrap(test+": open channel", err)
	}
	return conn, ch, closed, nil
}

// Produce implements compare.System: spec.Messages persistent publishes of spec.MessageSize bytes to the
// durable queue spec.Topic, then a wait until the queue holds them all.
func (s *System) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	if err := compare.CheckProduce(ErrSpec, spec); err != nil {
		return compare.Result{}, err
	}
	conn, ch, closed, err := s.connect("produce")
	if err != nil {
		return compare.Result{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	q, err := ch.QueueDeclare(spec.Topic, true, false, false, false, nil)
	if err != nil {
		return compare.Result{}, s.remote.Wrap(fmt.Sprintf("produce: declare durable queue %q", spec.Topic), err)
	}
	target := q.Messages + spec.Messages

	msg := amqp.Publishing{DeliveryMode: amqp.Persistent, Body: compare.Payload(spec.MessageSize)}
	run := s.remote.BeginProduce(ctx, fmt.Sprintf("queue %q", spec.Topic), spec)
	fail := func(err error) (compare.Result, error) {
		if ctx.Err() == nil {
			if reason := lost(closed); reason != nil {
				err = fmt.Errorf("connection lost: %w (%v)", reason, err)
			}
		}
		return run.Fail(err)
	}
	for range spec.Messages {
		if err := ch.Publish("", spec.Topic, false, false, msg); err != nil {
			return fail(err)
		}
		run.Add()
	}
	// §5: the producer's time runs until the broker holds every message: poll the queue depth, and give
	// up when it stops growing.
	watch := compare.NewWatchdog(s.IdleTimeout)
	for {
		q, err := ch.QueueDeclarePassive(spec.Topic, true, false, false, false, nil)
		if err != nil {
			return fail(fmt.Errorf("reading the queue depth: %w", err))
		}
		if q.Messages >= target {
			break
		}
		if watch.Stalled(int64(q.Messages)) {
			return fail(fmt.Errorf("queue depth stuck at %d of %d for %v", q.Messages, target, s.IdleTimeout))
		}
		time.Sleep(5 * time.Millisecond)
	}
	return run.Result(), nil
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
	prefetch, err := compare.CheckConsume(ErrSpec, spec, DefaultPrefetch)
	if err != nil {
		return compare.Result{}, err
	}
	conn, ch, closed, err := s.connect("consume")
	if err != nil {
		return compare.Result{}, err
	}
	defer conn.Close()
	if err := ch.Qos(prefetch, 0, false); err != nil {
		return compare.Result{}, s.remote.Wrap(fmt.Sprintf("consume: basic.qos %d", prefetch), err)
	}
	run := s.remote.BeginConsume(ctx, fmt.Sprintf("queue %q", spec.Topic), spec)
	deliveries, err := ch.Consume(spec.Topic, "", true, false, false, false, nil)
	if err != nil {
		return compare.Result{}, s.remote.Wrap(fmt.Sprintf("consume: basic.consume on queue %q", spec.Topic), err)
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	watch := compare.NewWatchdog(s.IdleTimeout)
	for !run.Complete() {
		select {
		case d, ok := <-deliveries:
			if !ok {
				if reason := lost(closed); reason != nil {
					return run.Fail(fmt.Errorf("connection lost: %w", reason))
				}
				return run.Fail(errors.New("the node closed the delivery stream (connection lost)"))
			}
			if err := run.Received(len(d.Body)); err != nil {
				return run.Fail(err)
			}
		case <-tick.C:
			if watch.Stalled(run.Done()) {
				return run.Fail(fmt.Errorf("no message for %v", s.IdleTimeout))
			}
		case <-ctx.Done():
			return run.Fail(ctx.Err())
		}
	}
	return run.Result(), nil
}

// DiskBytes implements compare.System: the space of the node's message stores (DataDir/msg_stores, or
// DataDir itself when it has none).
func (s *System) DiskBytes() (int64, error) {
	return s.remote.DiskUsage("msg_stores", localsvc.DiskUsage)
}

// Close implements compare.System; the adapter holds no connection between tests.
func (s *System) Close() error { return nil }

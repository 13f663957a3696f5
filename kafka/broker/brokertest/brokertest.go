// Package brokertest starts in-process brokers registered in a real
// ZooKeeper, for the integration tests of the producer, the consumer and the
// command (as net/http/httptest does for HTTP servers).
package brokertest

import (
	"context"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// Options shape one broker. Zero values take the broker's defaults, except
// SessionTimeout (4 s).
type Options struct {
	NumPartitions   int // num.partitions of every topic
	FlushInterval   int // log.flush.interval (messages)
	FlushIntervalMs int // log.default.flush.interval.ms
	SessionTimeout  time.Duration
}

// StartZK runs broker id on a free 127.0.0.1 port, registered in the
// ZooKeeper at connect (§3.2: /brokers/ids/<id> and /brokers/topics/<t>/<id>),
// and stops it when the test ends.
func StartZK(t testing.TB, connect string, id int, o Options) *broker.Broker {
	t.Helper()
	cfg := broker.DefaultConfig()
	cfg.BrokerID, cfg.Hostname, cfg.Port, cfg.LogDir = id, "127.0.0.1", zktest.FreePort(t), t.TempDir()
	cfg.EnableZooKeeper, cfg.ZKConnect = true, connect
	if o.NumPartitions > 0 {
		cfg.NumPartitions = o.NumPartitions
	}
	if o.FlushInterval > 0 {
		cfg.FlushInterval = o.FlushInterval
	}
	if o.FlushIntervalMs > 0 {
		cfg.FlushIntervalMs = o.FlushIntervalMs
	}
	timeout := o.SessionTimeout
	if timeout <= 0 {
		timeout = 4 * time.Second
	}
	reg, err := zk.NewBrokerRegistry(connect, id, cfg.Hostname, cfg.Port, timeout)
	if err != nil {
		t.Fatalf("brokertest: register broker %d in %s: %v", id, connect, err)
	}
	b, err := broker.New(cfg, broker.Options{Registrar: reg})
	if err != nil {
		reg.Close()
		t.Fatalf("brokertest: start broker %d: %v", id, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { b.Serve(ctx); close(served) }()
	t.Cleanup(func() { cancel(); <-served; b.Close() })
	return b
}

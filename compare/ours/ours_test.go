package ours

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
)

func TestNewAndSettings(t *testing.T) {
	if _, err := New(compare.Endpoint{}, Options{}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("New without host: err = %v", err)
	}
	s, err := New(compare.Endpoint{Host: "127.0.0.1", Port: 1, Version: "v"},
		Options{ServerProperties: map[string]string{"log.flush.interval": "777"}})
	if err != nil {
		t.Fatal(err)
	}
	set := s.Settings()
	for _, k := range []string{"protocol", "client", "persistence", "flush", "producer_ack", "prefetch", "server_version"} {
		if set[k] == "" {
			t.Errorf("setting %s missing", k)
		}
	}
	if !strings.Contains(set["flush"], "log.flush.interval=777") {
		t.Errorf("flush setting %q does not show the broker's property", set["flush"])
	}
	if !strings.HasPrefix(set["broker_settings"], "kafka-0.7-shipped with ") || !strings.Contains(set["broker_settings"], "log.flush.interval=777") {
		t.Errorf("broker_settings %q does not name the settings and the difference", set["broker_settings"])
	}
	if _, err := s.Produce(context.Background(), compare.ProduceSpec{Messages: 1, MessageSize: 1, Batch: 0, Sent: new(atomic.Int64)}); !errors.Is(err, ErrBadSpec) {
		t.Errorf("batch 0: err = %v", err)
	}
}

// startBroker starts our broker in process (brokertest) with the §5
// experiments' server.properties, and the adapter connected to it.
func startBroker(t *testing.T) (*System, *brokertest.Broker) {
	t.Helper()
	props := broker.Shipped()
	delete(props, "brokerid") // brokertest's, as are hostname, port and log.dir
	b := brokertest.Start(t, 0, brokertest.Options{Props: props})
	ep := compare.Endpoint{Host: "127.0.0.1", Port: b.Addr().(*net.TCPAddr).Port, DataDir: b.Dir, Version: "in-process"}
	s, err := New(ep, Options{ServerProperties: props})
	if err != nil {
		t.Fatal(err)
	}
	return s, b
}

// §5 producer and consumer tests at small scale: every message arrives,
// the disk holds exactly 9 bytes of overhead per message (§3.1), and the
// consumer reads back exactly what was sent.
func TestProduceConsume(t *testing.T) {
	s, _ := startBroker(t)
	const n = 20_000
	for _, batch := range []int{1, 50} {
		topic := fmt.Sprintf("t-b%d", batch)
		before, err := s.DiskBytes()
		if err != nil {
			t.Fatal(err)
		}
		var sent atomic.Int64
		res, err := s.Produce(context.Background(), compare.ProduceSpec{Topic: topic, Messages: n, MessageSize: 200, Batch: batch, Sent: &sent})
		if err != nil {
			t.Fatal(err)
		}
		if res.Messages != n || sent.Load() != n || res.Elapsed <= 0 || res.Bytes != n*200 {
			t.Errorf("batch %d: result %+v, sent %d", batch, res, sent.Load())
		}
		after, err := s.DiskBytes()
		if err != nil {
			t.Fatal(err)
		}
		if got, want := after-before, int64(n*message.SizeV0(200)); got != want {
			t.Errorf("batch %d: disk grew %d bytes, want %d (209 per message)", batch, got, want)
		}
		var recv atomic.Int64
		cres, err := s.Consume(context.Background(), compare.ConsumeSpec{Topic: topic, Messages: n, MessageSize: 200,
			PrefetchMessages: 1000, PrefetchBytes: 200 << 10, Received: &recv})
		if err != nil {
			t.Fatal(err)
		}
		if cres.Messages != n || recv.Load() != n {
			t.Errorf("batch %d: consumed %+v, received %d", batch, cres, recv.Load())
		}
	}
}

// §3.3: the consumer checks every CRC; a message corrupted on disk ends the
// test with a checksum error instead of being counted.
func TestConsumerChecksCRC(t *testing.T) {
	s, b := startBroker(t)
	var sent atomic.Int64
	if _, err := s.Produce(context.Background(), compare.ProduceSpec{Topic: "crc", Messages: 1000, MessageSize: 200, Batch: 50, Sent: &sent}); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(b.Dir, "crc-0", "00000000000000000000.kafka")
	f, err := os.OpenFile(seg, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Flip a payload byte of message 500.
	if _, err := f.WriteAt([]byte{'!'}, 500*209+20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var recv atomic.Int64
	_, err = s.Consume(context.Background(), compare.ConsumeSpec{Topic: "crc", Messages: 1000, MessageSize: 200, Received: &recv})
	if !errors.Is(err, message.ErrChecksum) {
		t.Fatalf("err = %v, want a checksum error", err)
	}
	if recv.Load() >= 1000 {
		t.Errorf("received %d messages despite the corruption", recv.Load())
	}
}

// A broker that is gone: Produce fails with an error instead of hanging.
func TestProduceToStoppedBroker(t *testing.T) {
	s, b := startBroker(t)
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	var sent atomic.Int64
	_, err := s.Produce(context.Background(), compare.ProduceSpec{Topic: "gone", Messages: 100, MessageSize: 200, Batch: 1, Sent: &sent})
	if err == nil {
		t.Fatal("Produce to a stopped broker succeeded")
	}
}

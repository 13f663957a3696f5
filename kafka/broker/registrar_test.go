package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
)

type fakeRegistrar struct {
	mu     sync.Mutex
	topics map[string]int
	closed bool
}

func (f *fakeRegistrar) RegisterTopic(topic string, partitions int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.topics == nil {
		f.topics = make(map[string]int)
	}
	f.topics[topic] = partitions
	return nil
}

func (f *fakeRegistrar) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}

func (f *fakeRegistrar) get(topic string) (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, ok := f.topics[topic]
	return n, ok
}

func TestRegistrar(t *testing.T) {
	dir := t.TempDir()
	cfg := broker.DefaultConfig()
	cfg.Hostname, cfg.Port, cfg.LogDir = "127.0.0.1", 0, dir
	cfg.TopicPartitions = map[string]int{"new": 3}
	// A first broker creates topic "old" on disk.
	b, err := broker.New(cfg, broker.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Logs().GetOrCreate("old", 0); err != nil {
		t.Fatal(err)
	}
	b.Close()

	reg := &fakeRegistrar{}
	b, err = broker.New(cfg, broker.Options{Registrar: reg})
	if err != nil {
		t.Fatal(err)
	}
	go b.Serve(context.Background())
	if n, ok := reg.get("old"); !ok || n != 1 {
		t.Fatalf("existing topic registered at start: %v (%d partitions)", ok, n)
	}
	cl := dial(t, b.Addr())
	cl.produce("new", 2, messageSet(0, 1, 10))
	cl.sync()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if n, ok := reg.get("new"); ok {
			if n != 3 {
				t.Fatalf("new topic registered with %d partitions, want 3", n)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("topic created by a produce was not registered")
		}
		time.Sleep(10 * time.Millisecond)
	}
	b.Close()
	if !reg.closed {
		t.Fatal("registrar not closed by Close")
	}
}

// stuckRegistrar blocks in RegisterTopic until it is closed, like a
// registrar talking to an unreachable ZooKeeper.
type stuckRegistrar struct {
	calls  chan string
	closed chan struct{}
}

func (s *stuckRegistrar) RegisterTopic(topic string, _ int) error {
	s.calls <- topic
	<-s.closed
	return errors.New("registrar closed")
}

func (s *stuckRegistrar) Close() error { close(s.closed); return nil }

// A registrar that hangs must stall neither producers nor Close.
func TestStuckRegistrar(t *testing.T) {
	reg := &stuckRegistrar{calls: make(chan string, 100), closed: make(chan struct{})}
	tb := brokertest.Start(t, 0, brokertest.Options{
		Registrar: func(broker.Config) (broker.Registrar, error) { return reg, nil }})
	cl := dial(t, tb.Addr())
	for i := range 100 {
		cl.produce(fmt.Sprintf("topic%d", i), 0, messageSet(i, 1, 10))
	}
	cl.sync() // all 100 topics created although registration is stuck
	for i := range 100 {
		if _, ok := tb.Logs().Get(fmt.Sprintf("topic%d", i), 0); !ok {
			t.Fatalf("topic%d not created", i)
		}
	}
	<-reg.calls
	done := make(chan error, 1)
	go func() { done <- tb.Stop() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs on a stuck registrar")
	}
}

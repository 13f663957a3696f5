package producer

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// fakeDiscovery has fixed brokers and partitions; Partitions blocks while gate is held.
type fakeDiscovery struct {
	brokers map[int]Broker
	parts   []Partition
	gate    sync.RWMutex
}

func (f *fakeDiscovery) Partitions(string) ([]Partition, error) {
	f.gate.RLock()
	defer f.gate.RUnlock()
	return f.parts, nil
}

func (f *fakeDiscovery) Broker(id int) (Broker, bool) { b, ok := f.brokers[id]; return b, ok }
func (f *fakeDiscovery) Close() error                 { return nil }

type brokerReq struct {
	broker int
	req    protocol.Request
}

// twoBrokers starts two fake brokers (ids 1 and 2, partsPer partitions each) feeding one channel.
func twoBrokers(t *testing.T, partsPer int) (*fakeDiscovery, chan brokerReq, map[string]int) {
	reqs := make(chan brokerReq, 1000)
	d := &fakeDiscovery{brokers: map[int]Broker{}}
	addrs := map[string]int{}
	for id := 1; id <= 2; id++ {
		own := make(chan protocol.Request)
		go func() {
			for r := range own {
				reqs <- brokerReq{id, r}
			}
		}()
		addr := fakeBroker(t, own)
		host, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		d.brokers[id] = Broker{ID: id, Host: host, Port: p}
		addrs[addr] = id
		for part := range partsPer {
			d.parts = append(d.parts, Partition{BrokerID: id, Part: int32(part)})
		}
	}
	return d, reqs, addrs
}

// collect reads requests until want messages have arrived, returning payloads per "topic/broker-partition"
// and the requests.
func collect(t *testing.T, reqs chan brokerReq, want int) (map[string][]string, []protocol.MultiProduceRequest) {
	t.Helper()
	got := map[string][]string{}
	var mps []protocol.MultiProduceRequest
	n := 0
	for n < want {
		select {
		case br := <-reqs:
			mp, ok := br.req.(protocol.MultiProduceRequest)
			if !ok {
				t.Fatalf("request %T, want MULTIPRODUCE", br.req)
			}
			mps = append(mps, mp)
			for _, p := range mp.Produces {
				it := message.NewDeepIterator(p.Messages, 0)
				for it.Next() {
					k := fmt.Sprintf("%s/%d-%d", p.Topic, br.broker, p.Partition)
					got[k] = append(got[k], string(it.Message().Payload()))
					n++
				}
				if it.Err() != nil {
					t.Fatal(it.Err())
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d of %d messages", n, want)
		}
	}
	return got, mps
}

func TestAsyncGroupsByBrokerAndKeepsKeysTogether(t *testing.T) {
	d, reqs, _ := twoBrokers(t, 2)
	cfg := DefaultConfig()
	cfg.BatchSize = 100
	cfg.QueueTime = time.Hour // only full batches and Close send
	a := NewAsyncWithDiscovery(cfg, d, nil)
	const n = 250
	for i := range n {
		key := []byte("key" + strconv.Itoa(i%7))
		if err := a.SendKeyed("t", key, []byte(fmt.Sprintf("%d:%s", i, key))); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	got, mps := collect(t, reqs, n)
	// 3 batches (100, 100, 50), each at most one MULTIPRODUCE per broker.
	if len(mps) > 6 {
		t.Errorf("%d MULTIPRODUCE requests for 3 batches over 2 brokers", len(mps))
	}
	for _, mp := range mps {
		seen := map[string]bool{}
		for _, p := range mp.Produces {
			k := fmt.Sprintf("%s/%d", p.Topic, p.Partition)
			if seen[k] {
				t.Errorf("partition %s twice in one request", k)
			}
			seen[k] = true
		}
	}
	// Keys: hash mod 4 over [1-0 1-1 2-0 2-1]; each key's messages sit in one partition, in order.
	where := map[string]string{}
	total := 0
	for k, msgs := range got {
		last := -1
		for _, m := range msgs {
			var i int
			var key string
			fmt.Sscanf(m, "%d:%s", &i, &key)
			if w, ok := where[key]; ok && w != k {
				t.Errorf("key %s in %s and %s", key, w, k)
			}
			where[key] = k
			want := d.parts[HashKey([]byte(key))%4]
			if k != fmt.Sprintf("t/%v", want) {
				t.Errorf("key %s in %s, want partition %v", key, k, want)
			}
			if i <= last {
				t.Errorf("%s: message %d after %d", k, i, last)
			}
			last = i
			total++
		}
	}
	if total != n || a.Sent() != n || a.Failed() != 0 || a.Dropped() != 0 {
		t.Errorf("received %d, sent %d, failed %d, dropped %d; want %d sent", total, a.Sent(), a.Failed(), a.Dropped(), n)
	}
}

func TestAsyncQueueTimeSendsAPartialBatch(t *testing.T) {
	d, reqs, _ := twoBrokers(t, 1)
	cfg := DefaultConfig()
	cfg.QueueTime = 20 * time.Millisecond
	a := NewAsyncWithDiscovery(cfg, d, nil)
	defer a.Close()
	for i := range 3 {
		if err := a.Send("t", 0, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := collect(t, reqs, 3) // without Close or a full batch
	if len(got["t/1-0"])+len(got["t/2-0"]) != 3 {
		t.Errorf("got %v", got)
	}
}

func TestAsyncFullQueue(t *testing.T) {
	for _, tc := range []struct {
		timeoutMs int
		wantErr   error
	}{{0, ErrQueueFull}, {30, ErrQueueFull}, {-1, nil}} {
		t.Run(strconv.Itoa(tc.timeoutMs), func(t *testing.T) {
			d, reqs, _ := twoBrokers(t, 1)
			cfg := DefaultConfig()
			cfg.QueueSize, cfg.BatchSize, cfg.EnqueueTimeoutMs = 2, 1, tc.timeoutMs
			a := NewAsyncWithDiscovery(cfg, d, nil)
			defer a.Close()
			d.gate.Lock() // the sender blocks choosing the first message's partition
			if err := a.Send("t", -1, []byte("first")); err != nil {
				t.Fatal(err)
			}
			// The sender takes "first" off the queue, then two more fill it.
			deadline := time.Now().Add(10 * time.Second)
			for len(a.queue) < 2 && time.Now().Before(deadline) {
				if len(a.queue) < cap(a.queue) {
					if err := a.Send("t", -1, []byte("x")); err != nil {
						t.Fatal(err)
					}
				}
				time.Sleep(time.Millisecond)
			}
			errc := make(chan error, 1)
			go func() { errc <- a.Send("t", -1, []byte("last")) }()
			if tc.wantErr != nil {
				if err := <-errc; !errors.Is(err, tc.wantErr) {
					t.Errorf("Send on a full queue: %v, want %v", err, tc.wantErr)
				}
				if a.Dropped() != 1 {
					t.Errorf("Dropped = %d", a.Dropped())
				}
				d.gate.Unlock()
				return
			}
			select {
			case err := <-errc:
				t.Fatalf("Send returned %v on a full queue with queue.enqueueTimeout.ms=-1", err)
			case <-time.After(50 * time.Millisecond):
			}
			d.gate.Unlock()
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			a.Close()
			collect(t, reqs, int(a.Sent()))
			if a.Dropped() != 0 || a.Sent() < 4 {
				t.Errorf("dropped %d sent %d", a.Dropped(), a.Sent())
			}
		})
	}
}

func TestAsyncCloseDrainsAndRefuses(t *testing.T) {
	d, reqs, _ := twoBrokers(t, 1)
	cfg := DefaultConfig()
	cfg.QueueTime = time.Hour
	cfg.BatchSize = 1000
	cfg.Compression = message.CodecGzip
	a := NewAsyncWithDiscovery(cfg, d, nil)
	for i := range 10 {
		if err := a.Send("t", -1, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	collect(t, reqs, 10)
	for i := range 5 {
		a.Send("t", -1, []byte{byte(i)})
	}
	a.Close()
	collect(t, reqs, 5)
	if err := a.Send("t", -1, []byte("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close: %v", err)
	}
	if err := a.Flush(); !errors.Is(err, ErrClosed) {
		t.Errorf("Flush after Close: %v", err)
	}
	big := make([]byte, cfg.MaxMessageSize+1)
	if err := a.Send("t", -1, big); !errors.Is(err, ErrMessageTooLarge) {
		t.Errorf("big message: %v", err)
	}
}

// A failed send is logged to the Logger of the Config, with
// component=producer rather than a "producer: " prefix, and counted.
func TestAsyncLogsFailuresToItsLogger(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens there now
	var buf brokertest.LogBuffer
	cfg := DefaultConfig()
	cfg.BrokerList = brokerList(0, addr)
	cfg.ConnectTimeout = time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(&buf, nil))
	a, err := NewAsync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Send("t", 0, []byte("lost")); err != nil {
		t.Fatal(err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.Failed() != 1 {
		t.Errorf("Failed() = %d, want 1", a.Failed())
	}
	out := buf.String()
	if !strings.Contains(out, `msg="async send failed" component=producer`) || strings.Contains(out, `msg="producer: `) {
		t.Errorf("want one line \"async send failed\" with component=producer, got:\n%s", out)
	}
}

func TestAsyncSendAllocatesNothing(t *testing.T) {
	d, _, _ := twoBrokers(t, 1)
	cfg := DefaultConfig()
	cfg.QueueTime = time.Hour
	cfg.QueueSize = 1 << 20
	cfg.BatchSize = 1 << 20
	a := NewAsyncWithDiscovery(cfg, d, nil)
	defer a.Close()
	msg := make([]byte, 200)
	if n := testing.AllocsPerRun(1000, func() { _ = a.Send("t", -1, msg) }); n != 0 {
		t.Errorf("Send allocates %v times per message", n)
	}
}

func BenchmarkAsyncProducer(b *testing.B) {
	addr := fakeBroker(b, nil) // discards everything
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	d := &fakeDiscovery{brokers: map[int]Broker{0: {ID: 0, Host: host, Port: p}}, parts: []Partition{{0, 0}, {0, 1}}}
	cfg := DefaultConfig()
	cfg.EnqueueTimeoutMs = -1
	a := NewAsyncWithDiscovery(cfg, d, nil)
	msg := make([]byte, 200)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Send("t", -1, msg); err != nil {
			b.Fatal(err)
		}
	}
	a.Close()
}

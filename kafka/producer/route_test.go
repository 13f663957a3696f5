package producer

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// routes lists the producer's remembered routes as "topic/partition→broker".
func routes(p *SyncProducer) []string {
	var out []string
	if l := p.routes.list.Load(); l != nil {
		for _, r := range *l {
			out = append(out, fmt.Sprintf("%s/%d→%d", r.topic, r.partition, r.dst.BrokerID))
		}
	}
	return out
}

// A route is remembered only where the long way would give the same answer
// on every send: a broker.list, the partition given or one broker listed,
// no answer read, no compression.
func TestSendRemembersOnlyRoutesThatCannotChange(t *testing.T) {
	one := brokerList(0, fakeBroker(t, nil))
	two := one + "," + brokerList(1, fakeBroker(t, nil))
	cases := []struct {
		name      string
		list      string
		codec     message.Codec
		partition int32
		want      string // "" for none
	}{
		{"one broker, the producer picks", one, message.CodecNone, -1, "t/-1→0"},
		{"two brokers, the partitioner picks at random", two, message.CodecNone, -1, ""},
		{"two brokers, partition given", two, message.CodecNone, 1, "t/1→0"},
		{"compressed batches", one, message.CodecGzip, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.BrokerList, cfg.Compression = c.list, c.codec
			p := newTestProducerConfig(t, cfg)
			for range 3 {
				if err := p.Send("t", c.partition, []byte("m")); err != nil {
					t.Fatal(err)
				}
			}
			got := routes(p)
			if (c.want == "" && len(got) != 0) || (c.want != "" && (len(got) != 1 || got[0] != c.want)) {
				t.Fatalf("routes %v, want %q", got, c.want)
			}
		})
	}
	// The rule itself for the producers that read answers: acks 1, and metadata (replicated topics).
	cfg := DefaultConfig()
	cfg.BrokerList, cfg.RequiredAcks = one, 1
	if acked := newTestProducerConfig(t, cfg); acked.routable(0) {
		t.Error("an acknowledged producer's route is remembered")
	}
	p := newTestProducer(t, one)
	p.meta = &metadataCache{}
	if p.routable(0) {
		t.Error("a producer reading metadata remembers a route")
	}
}

// A remembered route is taken: once it is there, Send neither checks the
// name nor asks the Discovery, so a Discovery that now fails every call
// does not reach it; a send without a route still asks and fails.
func TestSendTakesTheRememberedRoute(t *testing.T) {
	reqs := make(chan protocol.Request, 10)
	p := newTestProducer(t, brokerList(0, fakeBroker(t, reqs)))
	if err := p.Send("t", 0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	p.disc = failingDiscovery{}
	if err := p.Send("t", 0, []byte("second")); err != nil {
		t.Fatalf("a send on the remembered route asked the Discovery: %v", err)
	}
	if err := p.Send("t", 1, []byte("other")); !errors.Is(err, errDiscoveryDown) {
		t.Fatalf("a send without a route: %v, want the Discovery's error", err)
	}
	for _, want := range []string{"first", "second"} {
		if r := (<-reqs).(protocol.ProduceRequest); r.Partition != 0 {
			t.Fatalf("request for %q went to partition %d, want 0", want, r.Partition)
		}
	}
}

var errDiscoveryDown = errors.New("discovery down")

type failingDiscovery struct{}

func (failingDiscovery) Partitions(string) ([]Partition, error) { return nil, errDiscoveryDown }
func (failingDiscovery) Broker(int) (Broker, bool)              { return Broker{}, false }
func (failingDiscovery) Close() error                           { return nil }

// A Discovery other than broker.list may change its answer between two
// sends (ZooKeeper's registry, §3.2): every send asks it again.
func TestSendFollowsADiscoveryThatChanges(t *testing.T) {
	d, reqs, _ := twoBrokers(t, 1)
	p := NewSyncWithDiscovery(DefaultConfig(), d, nil)
	defer p.Close()
	to := func(broker int) {
		t.Helper()
		d.gate.Lock()
		d.parts = []Partition{{BrokerID: broker, Part: 0}}
		d.gate.Unlock()
		if err := p.Send("t", 0, []byte("m")); err != nil {
			t.Fatal(err)
		}
		if r := <-reqs; r.broker != broker {
			t.Fatalf("the send went to broker %d, the discovery says %d", r.broker, broker)
		}
	}
	to(1)
	to(2)
	to(1)
	if got := routes(p); len(got) != 0 {
		t.Fatalf("routes %v remembered from a discovery that changes", got)
	}
}

// On a remembered route every message is still checked against
// max.message.size, and a refused batch sends nothing.
func TestRouteChecksMessageSize(t *testing.T) {
	reqs := make(chan protocol.Request, 10)
	cfg := DefaultConfig()
	cfg.BrokerList, cfg.MaxMessageSize = brokerList(0, fakeBroker(t, reqs)), 100
	p := newTestProducerConfig(t, cfg)
	if err := p.Send("t", 0, []byte("first")); err != nil {
		t.Fatal(err)
	}
	if len(routes(p)) != 1 {
		t.Fatalf("routes %v after the first send, want one", routes(p))
	}
	if err := p.Send("t", 0, []byte("ok"), make([]byte, 101)); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("a 101-byte message over max.message.size 100: %v, want ErrMessageTooLarge", err)
	}
	if err := p.Send("t", 0, []byte("last")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"first", "last"} {
		var got []string
		for it := message.NewIterator((<-reqs).(protocol.ProduceRequest).Messages, 0); it.Next(); {
			got = append(got, string(it.Message().Payload()))
		}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("request holds %q, want %q alone (the refused batch sent nothing)", got, want)
		}
	}
}

// Past maxRoutes topics, sends take the long way and still arrive; the
// routes held stay at maxRoutes.
func TestRoutesAreBounded(t *testing.T) {
	reqs := make(chan protocol.Request, 2*(maxRoutes+2))
	p := newTestProducer(t, brokerList(0, fakeBroker(t, reqs)))
	for round := range 2 {
		for i := range maxRoutes + 2 {
			topic := fmt.Sprintf("t%d", i)
			if err := p.Send(topic, 0, []byte(topic)); err != nil {
				t.Fatal(err)
			}
			if r := (<-reqs).(protocol.ProduceRequest); r.Topic != topic {
				t.Fatalf("round %d: request for %q, want %q", round, r.Topic, topic)
			}
		}
	}
	if n := len(routes(p)); n != maxRoutes {
		t.Fatalf("%d routes, want %d", n, maxRoutes)
	}
}

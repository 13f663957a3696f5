package stream

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// The runner's output keeps emit order within an output partition (§3.3: order is kept within a partition),
// whatever the keys: results of keys a, b, a, b that share a partition are read back a, b, a, b, not grouped
// by key. Downstream of a repartition emit order is event-time order, and grouping by key made event-time
// disorder the next stage saw as late messages. One in-process broker, one partition per topic.
func TestIntegration_EmitterKeepsEmitOrderInAPartition(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"num.partitions": "1"}})
	pcfg := producer.DefaultConfig()
	pcfg.BrokerList, pcfg.RequiredAcks = fmt.Sprintf("0:%s", b.HostPort()), 1
	prod, err := producer.NewSync(pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	e := &producerEmitter{p: prod}
	var want []string
	for i := range 40 {
		key := fmt.Sprintf("item-%c", 'a'+i%4)
		topic := "ordered"
		if i%10 == 9 {
			topic = "other" // a second output topic in the same flush
		}
		v := fmt.Sprintf("%s %d", key, i)
		if topic == "ordered" {
			want = append(want, v)
		}
		if err := e.Emit(topic, []byte(key), []byte(v)); err != nil {
			t.Fatal(err)
		}
		if i == 19 {
			if err := e.flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := e.flush(); err != nil {
		t.Fatal(err)
	}
	b.Flush("ordered", 0)
	b.Flush("other", 0)
	read := func(topic string) []string {
		sc := consumer.NewSimpleConsumer(b.HostPort(), 5*time.Second)
		defer sc.Close()
		it := consumer.NewPartitionIterator(sc, topic, 0, 0, 1<<16)
		var got []string
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			ok := it.Next(ctx)
			cancel()
			if !ok {
				return got
			}
			got = append(got, string(it.Payload()))
		}
	}
	got := read("ordered")
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("read back from ordered-0:\n%q\nwant emit order:\n%q", got, want)
	}
	if other := read("other"); len(other) != 4 {
		t.Errorf("other-0 holds %q, want the 4 results emitted to it", other)
	}
}

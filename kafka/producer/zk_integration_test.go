package producer_test

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// startBroker runs a real broker registered in ZooKeeper, with numParts partitions per new topic and a flush
// after every message (so a consumer sees everything at once).
func startBroker(t *testing.T, connect string, id, numParts int) *brokertest.Broker {
	t.Helper()
	return brokertest.Start(t, id, brokertest.Options{ZKConnect: connect,
		Props: map[string]string{"num.partitions": strconv.Itoa(numParts), "log.flush.interval": "1"}})
}

// waitPartitions waits until discovery shows want partitions for topic.
func waitPartitions(t *testing.T, d *zk.Discovery, topic string, want int) []zk.Partition {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ps, err := d.Partitions(topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) == want {
			return ps
		}
		if time.Now().After(deadline) {
			t.Fatalf("topic %s: %d partitions (%v), want %d", topic, len(ps), ps, want)
		}
		select {
		case <-d.Changed():
		case <-time.After(time.Second):
		}
	}
}

// readAll fetches every message of one partition from the start.
func readAll(t *testing.T, addr, topic string, part int32) []string {
	t.Helper()
	c := consumer.NewSimpleConsumer(addr, 5*time.Second)
	defer c.Close()
	var out []string
	var off int64
	for {
		set, err := c.Fetch(topic, part, off, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		it := message.NewDeepIterator(set, off)
		for it.Next() {
			out = append(out, string(it.Message().Payload()))
		}
		if it.Err() != nil {
			t.Fatal(it.Err())
		}
		if it.Consumed() == 0 {
			return out
		}
		off += int64(it.Consumed())
	}
}

// TestIntegration_AsyncProducerTwoBrokers: brokers 1 and 2 with two partitions each register in a real
// ZooKeeper; an async producer discovers them through zk.connect and sends keyed messages; every message is
// read back from the broker and partition its key hashes to over the sorted list [1-0 1-1 2-0 2-1].
func TestIntegration_AsyncProducerTwoBrokers(t *testing.T) {
	connect := zktest.Start(t) + "/kafka"
	b1 := startBroker(t, connect, 1, 2)
	b2 := startBroker(t, connect, 2, 2)
	addrs := map[int]string{1: b1.Addr().String(), 2: b2.Addr().String()}

	cfg := producer.DefaultConfig()
	cfg.ZkConnect = connect
	cfg.ProducerType = "async"
	cfg.BatchSize = 50
	cfg.QueueTime = 100 * time.Millisecond
	a, err := producer.NewAsync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	d, err := zk.NewDiscovery(connect, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()

	// The topic is new: the producer sends to partition 0 of every live broker, which creates it there and
	// makes each broker register its two partitions.
	if ps := waitPartitions(t, d, "clicks", 2); ps[0] != (zk.Partition{BrokerID: 1}) || ps[1] != (zk.Partition{BrokerID: 2}) {
		t.Fatalf("unregistered topic partitions = %v, want [1-0 2-0]", ps)
	}
	// One message to partition 0 of each broker creates the topic on both (an unkeyed async Send picks a
	// random partition, which could leave one broker out).
	sp, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for _, id := range []int{1, 2} {
		if err := sp.SendTo(id, "clicks", 0, []byte("hello-"+strconv.Itoa(id))); err != nil {
			t.Fatal(err)
		}
	}
	sorted := waitPartitions(t, d, "clicks", 4)
	if want := []zk.Partition{{BrokerID: 1}, {BrokerID: 1, Partition: 1}, {BrokerID: 2}, {BrokerID: 2, Partition: 1}}; !slices.Equal(sorted, want) {
		t.Fatalf("partitions = %v, want %v", sorted, want)
	}
	// The producer's own discovery must have seen the registrations too before keyed sends.
	deadline := time.Now().Add(30 * time.Second)
	for {
		ps, _ := a.Discovery().Partitions("clicks")
		if len(ps) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("producer sees %v", ps)
		}
		time.Sleep(50 * time.Millisecond)
	}

	if allocs := testing.AllocsPerRun(100, func() { a.Discovery().Partitions("clicks") }); allocs != 0 {
		t.Errorf("ZooKeeper discovery allocates %v times per lookup", allocs)
	}

	const n, keys = 2000, 37
	for i := range n {
		key := "user" + strconv.Itoa(i%keys)
		if err := a.SendKeyed("clicks", []byte(key), []byte(fmt.Sprintf("%s %d", key, i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if a.Failed() != 0 || a.Dropped() != 0 {
		t.Fatalf("failed %d dropped %d", a.Failed(), a.Dropped())
	}

	got := 0
	perPart := map[zk.Partition]int{}
	deadline = time.Now().Add(30 * time.Second)
	for got < n {
		got = 0
		for _, p := range sorted {
			msgs := readAll(t, addrs[p.BrokerID], "clicks", int32(p.Partition))
			perPart[p] = 0
			last := map[string]int{}
			for _, m := range msgs {
				var key string
				var i int
				if _, err := fmt.Sscanf(m, "%s %d", &key, &i); err != nil {
					continue // the two unkeyed hello messages
				}
				if want := sorted[producer.HashKey([]byte(key))%uint32(len(sorted))]; want != p {
					t.Fatalf("key %s found in %v, want %v", key, p, want)
				}
				if l, ok := last[key]; ok && i <= l {
					t.Fatalf("key %s: message %d after %d in %v", key, i, l, p)
				}
				last[key] = i
				got++
				perPart[p]++
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("read back %d of %d keyed messages", got, n)
		}
	}
	if got != n {
		t.Errorf("read back %d keyed messages, want %d", got, n)
	}
	for _, p := range sorted {
		if perPart[p] == 0 {
			t.Errorf("partition %v got no key out of %d", p, keys)
		}
	}
	t.Logf("messages per partition: %v", perPart)
}

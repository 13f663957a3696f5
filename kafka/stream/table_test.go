package stream

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// firstField is the key of a "<key> <rest>" line; a line without one has no key.
func firstField(p []byte) ([]byte, error) {
	f := bytes.Fields(p)
	if len(f) == 0 {
		return nil, errors.New("no key: empty line")
	}
	return f[0], nil
}

// appCluster is ZooKeeper, two in-process brokers with two partitions per topic flushing every 20 ms, a
// producer that finds them in ZooKeeper (so a keyed send goes through the key-hash partitioner over the
// topic's four partitions) and a Discovery.
type appCluster struct {
	zkc  string
	bs   brokertest.Cluster
	p    *producer.SyncProducer
	disc *zk.Discovery
}

func startAppCluster(t *testing.T) *appCluster {
	t.Helper()
	zkc := zktest.Start(t)
	bs := brokertest.StartCluster(t, 2, brokertest.Options{ZKConnect: zkc, Props: map[string]string{
		"num.partitions": "2", "log.flush.interval": "10000", "log.default.flush.interval.ms": "20"}})
	cfg := producer.DefaultConfig()
	cfg.ZkConnect = zkc
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	disc, err := zk.NewDiscovery(zkc, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { disc.Close() })
	return &appCluster{zkc: zkc, bs: bs, p: p, disc: disc}
}

// create makes topic exist on both brokers (an empty set to each, as `kafka topics --create` does) and waits
// until ZooKeeper lists its four partitions.
func (c *appCluster) create(t *testing.T, topics ...string) {
	t.Helper()
	for _, tp := range topics {
		for _, b := range c.bs {
			if err := c.p.SendTo(b.ID, tp, 0); err != nil {
				t.Fatal(err)
			}
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, tp := range topics {
		for {
			ps, err := c.disc.Partitions(tp)
			if err == nil && len(ps) == 4 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("topic %s: partitions %v, %v; want 4", tp, ps, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func (c *appCluster) sendKeyed(t *testing.T, tp string, lines ...string) {
	t.Helper()
	for _, l := range lines {
		k, err := firstField([]byte(l))
		if err != nil {
			k = nil
		}
		if err := c.p.SendKeyed(tp, k, []byte(l)); err != nil {
			t.Fatal(err)
		}
	}
}

// §6's stream–table join reads "records in a secondary store", here kept in a topic: the table holds each key's
// latest message once it is open, and keeps up with the topic as it grows (updates and deletions), counting
// a message without a key instead of applying it.
func TestIntegration_TableFollowsTopic(t *testing.T) {
	c := startAppCluster(t)
	c.create(t, "items")
	c.sendKeyed(t, "items", "item-a shoes 40", "item-b hats 12", "item-a shoes 35", "item-c socks 3", "")
	time.Sleep(100 * time.Millisecond) // flushed, so visible, within 20 ms

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tb, err := OpenTable(ctx, c.disc, TableConfig{Topic: "items", Key: firstField})
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	check := func(key, want string) {
		t.Helper()
		v, ok := tb.Get([]byte(key))
		if want == "" && ok || want != "" && string(v) != want {
			t.Errorf("table[%s] = %q, %v; want %q", key, v, ok, want)
		}
	}
	st := tb.Stats()
	if st.Applied != 4 || st.Skipped != 1 || st.Keys != 3 || len(st.Offsets) != 4 {
		t.Fatalf("after open: %+v, want 4 applied, 1 skipped, 3 keys, 4 partitions", st)
	}
	check("item-a", "item-a shoes 35")
	check("item-b", "item-b hats 12")

	c.sendKeyed(t, "items", "item-b hats 11", "item-c", "item-d gloves 9")
	if err := tb.WaitUntil(ctx, func(s TableStats) bool { return s.Applied+s.Deleted == 7 }); err != nil {
		t.Fatalf("table did not follow the topic: %v (%+v)", err, tb.Stats())
	}
	check("item-b", "item-b hats 11")
	check("item-c", "")
	check("item-d", "item-d gloves 9")
	if s := tb.Stats(); s.Keys != 3 || s.Deleted != 1 {
		t.Errorf("after updates: %+v", s)
	}
	if buf, ok := tb.AppendValue([]byte("x "), []byte("item-a")); !ok || string(buf) != "x item-a shoes 35" {
		t.Errorf("AppendValue: %q, %v", buf, ok)
	}

	// §6: topics a task reads together must be partitioned alike. "items" and "items2" are (two partitions on
	// each broker); "half" lives on broker 0 only.
	c.create(t, "items2")
	if err := CheckCopartitioned(c.disc, "items", "items2"); err != nil {
		t.Errorf("items and items2: %v", err)
	}
	if err := c.p.SendTo(0, "half", 0); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if ps, _ := c.disc.Partitions("half"); len(ps) == 2 && ps[0].BrokerID == 0 && ps[1].BrokerID == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("topic half not registered on broker 0 alone")
		}
	}
	if err := CheckCopartitioned(c.disc, "items", "half"); !errors.Is(err, ErrNotCopartitioned) {
		t.Errorf("items and half: %v, want ErrNotCopartitioned", err)
	}

	for _, bad := range []TableConfig{{Topic: "../etc", Key: firstField}, {Topic: "items"}} {
		if _, err := OpenTable(ctx, c.disc, bad); !errors.Is(err, ErrTable) {
			t.Errorf("OpenTable(%+v): %v, want ErrTable", bad, err)
		}
	}
}

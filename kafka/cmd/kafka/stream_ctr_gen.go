package main

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/stream"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "stream-ctr-gen",
		Args:    "--zookeeper HOST:PORT --impressions TOPIC --clicks TOPIC [--rounds N] [--seed N]",
		Summary: "publish an impression/click workload with known click-through rates per item (paper §1) and print them",
		Run:     streamCTRGen,
	})
}

// streamCTRGen publishes stream.DefaultCTRWorkload (five items with rates 1/3, 3/7, 0/5, 4/4 and 2/9, late
// and double clicks, events out of order by up to 2 s) to two existing topics, keyed by impression id (§6:
// partitioned on the join key at publish time), then one tick per partition of each, an hour of event time
// after the last event, so that a join's last windows close. It prints the exact rates in the lines
// `kafka stream-ctr` publishes, "<item> <clicked> <impressions> <rate>", sorted by item.
func streamCTRGen(args []string, std stdio) error {
	fs := newFlags(commands["stream-ctr-gen"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[/chroot]")
	impTopic := fs.String("impressions", "", "topic of the impressions (must exist: kafka topics --create)")
	clickTopic := fs.String("clicks", "", "topic of the clicks (must exist)")
	rounds := fs.Int("rounds", 40, "each item is shown this many times its period (item-a 3 impressions per round, ...)")
	seed := fs.Uint64("seed", 14, "random seed: which impressions are clicked, the delays, the disorder")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "impressions", "clicks"); err != nil {
		return err
	}
	if *rounds < 1 || *rounds > 100000 {
		return usagef("--rounds must be between 1 and 100000, got %d", *rounds)
	}
	for _, t := range []string{*impTopic, *clickTopic} {
		if err := producer.ValidateTopic(t); err != nil {
			return usagef("%v", err)
		}
	}
	if *impTopic == *clickTopic {
		return usagef("--impressions and --clicks must be two topics, both are %q", *impTopic)
	}
	w := stream.DefaultCTRWorkload(*rounds)
	w.Seed = *seed
	imps, clicks, err := w.Generate()
	if err != nil {
		return err
	}

	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	for _, t := range []string{*impTopic, *clickTopic} {
		ok, err := c.Exists(zk.BrokerTopicPath(t))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("topic %q is not registered in ZooKeeper: create it first (kafka topics --create --topic %s)", t, t)
		}
	}
	disc, err := producer.NewZKDiscovery(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	p := producer.NewSyncWithDiscovery(producer.DefaultConfig(), disc, nil)
	defer p.Close()

	var last int64
	for _, e := range imps {
		last = max(last, e.Time)
	}
	for _, e := range clicks {
		last = max(last, e.Time)
	}
	tick := last + time.Hour.Milliseconds()
	for _, side := range []struct {
		topic, kind string
		events      []stream.CTREvent
	}{{*impTopic, stream.Impression, imps}, {*clickTopic, stream.Click, clicks}} {
		n, err := publishKeyed(p, disc, side.topic, side.events, side.kind, tick)
		if err != nil {
			return err
		}
		fmt.Fprintf(std.Err, "published %d %s events and %d ticks to %s\n", len(side.events), side.kind, n, side.topic)
	}
	want := w.Expected()
	items := make([]string, 0, len(want))
	for it := range want {
		items = append(items, it)
	}
	slices.Sort(items)
	for _, it := range items {
		fmt.Fprintf(std.Out, "%s\n", stream.AppendRateLine(nil, it, want[it]))
	}
	return nil
}

// publishKeyed sends the events in order, each to the partition the key-hash partitioner picks for its
// impression id, in batches per partition, then a tick to every partition; it returns the number of ticks.
func publishKeyed(p *producer.SyncProducer, disc producer.Discovery, topic string, events []stream.CTREvent, kind string, tick int64) (int, error) {
	parts, err := disc.Partitions(topic)
	if err != nil {
		return 0, err
	}
	if len(parts) == 0 {
		return 0, fmt.Errorf("topic %q: no live broker has it", topic)
	}
	batches := make([][][]byte, len(parts))
	flush := func(i int) error {
		if len(batches[i]) == 0 {
			return nil
		}
		err := p.SendTo(parts[i].BrokerID, topic, parts[i].Part, batches[i]...)
		batches[i] = batches[i][:0]
		if err != nil {
			return fmt.Errorf("publishing to %s partition %s: %w", topic, parts[i], err)
		}
		return nil
	}
	add := func(key, msg []byte) error {
		i := producer.DefaultPartitioner{}.Partition(key, len(parts))
		batches[i] = append(batches[i], msg)
		if len(batches[i]) >= 200 {
			return flush(i)
		}
		return nil
	}
	for _, e := range events {
		if err := add([]byte(e.ID), []byte(e.String())); err != nil {
			return 0, err
		}
	}
	for _, k := range stream.TickKeys(len(parts)) {
		if err := add(k, stream.TickLine(kind, k, tick)); err != nil {
			return 0, err
		}
	}
	for i := range batches {
		if err := flush(i); err != nil {
			return 0, err
		}
	}
	return len(parts), nil
}

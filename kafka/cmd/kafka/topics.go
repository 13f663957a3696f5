package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "topics",
		Args:    "--zookeeper HOST:PORT[/chroot] (--create --topic T [--partitions N] [--replication-factor N | --replica-assignment 1:2:0,2:0:1] | --list | --describe [--topic T] [--under-replicated-partitions] [--unavailable-partitions])",
		Summary: "create, list and describe topics through the ZooKeeper broker registry",
		Run:     topics,
	})
}

// topicsTimeout bounds how long --create waits for the brokers to register the new topic.
const topicsTimeout = 15 * time.Second

// topics is the later kafka-topics tool on top of 0.7's registry (docs/PROTOCOL.md §5, §8). 0.7 has no request that
// creates a topic: a broker creates a topic's partition directory on the first PRODUCE that names it and then
// registers /brokers/topics/<topic>/<brokerid> with its partition count (num.partitions, or
// topic.partition.count.map). So --create sends every live broker one empty PRODUCE for each partition
// 0..N-1 (an empty message set appends nothing) and waits for their registrations. How many partitions a
// broker really has is the broker's setting: --partitions is checked against it, not imposed.
func topics(args []string, std stdio) error {
	fs := newFlags(commands["topics"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[,host:port][/chroot]")
	topic := fs.String("topic", "", "topic name")
	create := fs.Bool("create", false, "create the topic on every live broker")
	list := fs.Bool("list", false, "list the registered topics")
	describe := fs.Bool("describe", false, "show each partition's broker, log end offset and size")
	parts := fs.Int("partitions", 1, "partitions per broker expected (the broker's num.partitions decides)")
	replication := fs.Int("replication-factor", 1, "copies of each partition; above 1 makes a replicated topic (docs/PROTOCOL.md §10)")
	assignment := fs.String("replica-assignment", "", "a replicated topic's replicas per partition, e.g. 1:2:0,2:0:1 (first: the preferred leader)")
	underReplicated := fs.Bool("under-replicated-partitions", false, "with --describe: only partitions whose ISR is smaller than their replicas")
	unavailable := fs.Bool("unavailable-partitions", false, "with --describe: only partitions without a live leader")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper"); err != nil {
		return err
	}
	if n := btoi(*create) + btoi(*list) + btoi(*describe); n != 1 {
		return usagef("give exactly one of --create, --list, --describe")
	}
	if *replication < 1 {
		return usagef("--replication-factor must be at least 1, got %d", *replication)
	}
	if (*underReplicated || *unavailable) && !*describe {
		return usagef("--under-replicated-partitions and --unavailable-partitions go with --describe")
	}
	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	switch {
	case *list:
		names, err := registeredTopics(c)
		if err != nil {
			return err
		}
		for _, n := range names {
			fmt.Fprintln(std.Out, n)
		}
		return nil
	case *describe:
		names := []string{*topic}
		if *topic == "" {
			if names, err = registeredTopics(c); err != nil {
				return err
			}
		}
		filter := describeFilter{underReplicated: *underReplicated, unavailable: *unavailable}
		for _, n := range names {
			if err := describeTopic(c, n, filter, std.Out); err != nil {
				return err
			}
		}
		return nil
	}
	if err := required(fs, "topic"); err != nil {
		return err
	}
	if *parts < 1 {
		return usagef("--partitions must be at least 1, got %d", *parts)
	}
	if *replication > 1 || *assignment != "" {
		return createReplicatedTopic(c, *topic, *parts, *replication, *assignment, partitionsSet(fs), std)
	}
	return createTopic(c, *zkConnect, *topic, *parts, std)
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// registeredTopics lists /brokers/topics, sorted, keeping only topics some broker serves now and the
// replicated ones (whose node has a "partitions" child).
func registeredTopics(c *zk.Client) ([]string, error) {
	names, err := c.Children(zk.BrokerTopicsPath)
	if errors.Is(err, zk.ErrNoNode) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if ids, err := c.Children(zk.BrokerTopicPath(n)); err == nil && len(ids) > 0 {
			out = append(out, n)
		} else if _, err := replication.ReadAssignment(c, n); err == nil {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// topicRegistrations reads /brokers/topics/<topic>: broker id → partition count, and the brokers' addresses.
func topicRegistrations(c *zk.Client, topic string) (map[int]int, map[int]zk.Broker, error) {
	regs := map[int]int{}
	ids, err := c.Children(zk.BrokerTopicPath(topic))
	if err != nil && !errors.Is(err, zk.ErrNoNode) {
		return nil, nil, err
	}
	for _, s := range ids {
		id, err := strconv.Atoi(s)
		if err != nil {
			continue
		}
		data, err := c.Get(zk.BrokerTopicBrokerPath(topic, id))
		if err != nil {
			continue // gone since the listing
		}
		if n, err := strconv.Atoi(string(data)); err == nil {
			regs[id] = n
		}
	}
	brokers, err := zk.LiveBrokers(c, nil)
	return regs, brokers, err
}

func createTopic(c *zk.Client, connect, topic string, parts int, std stdio) error {
	if err := producer.ValidateTopic(topic); err != nil {
		return err
	}
	cfg := producer.DefaultConfig()
	cfg.ZkConnect = connect
	p, err := producer.NewSync(cfg)
	if err != nil {
		return err
	}
	defer p.Close()
	// A broker started a moment ago may not have registered yet: wait for one.
	var brokers map[int]zk.Broker
	for deadline := time.Now().Add(topicsTimeout); ; time.Sleep(200 * time.Millisecond) {
		if brokers, err = zk.LiveBrokers(c, nil); err != nil {
			return err
		}
		if len(brokers) > 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("create topic %q: no live broker under %s after %v (is a broker running with enable.zookeeper=true and zk.connect=%s?)", topic, zk.BrokerIDsPath, topicsTimeout, connect)
		}
	}
	regs, _, err := topicRegistrations(c, topic)
	if err != nil {
		return err
	}
	existed := len(regs) > 0
	if !existed {
		if err := checkPartitionCount(brokers, topic, parts); err != nil {
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(brokers)) {
		if _, ok := regs[id]; ok {
			continue
		}
		for part := range parts {
			if err := p.SendTo(id, topic, int32(part)); err != nil { // an empty message set
				return fmt.Errorf("create topic %q on broker %d: %w", topic, id, err)
			}
		}
	}
	deadline := time.Now().Add(topicsTimeout)
	for {
		if regs, _, err = topicRegistrations(c, topic); err != nil {
			return err
		}
		missing := 0
		for id := range brokers {
			if _, ok := regs[id]; !ok {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("create topic %q: %d of %d brokers did not register it within %v (see their logs)", topic, missing, len(brokers), topicsTimeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	total := 0
	for _, id := range slices.Sorted(maps.Keys(regs)) {
		n := regs[id]
		total += n
		if n != parts {
			fmt.Fprintf(std.Err, "kafka topics: broker %d has %d partitions of %q, not %d: set num.partitions or "+
				"topic.partition.count.map=%s:%d in its server.properties\n", id, n, topic, parts, topic, parts)
		}
	}
	if existed { // live brokers that lacked it have it now
		fmt.Fprintf(std.Out, "Topic %q already exists: %s on %s.\n", topic, plural(total, "partition"), plural(len(regs), "broker"))
		return nil
	}
	fmt.Fprintf(std.Out, "Created topic %q: %s on %s.\n", topic, plural(total, "partition"), plural(len(regs), "broker"))
	return nil
}

// checkPartitionCount refuses, before anything is created, a --partitions that a broker would not give the topic:
// a broker answers an OFFSETS request for a partition outside [0, its count for the topic) with error 3
// (docs/PROTOCOL.md §4), and its count is its num.partitions or topic.partition.count.map, not the tool's.
func checkPartitionCount(brokers map[int]zk.Broker, topic string, parts int) error {
	for _, id := range slices.Sorted(maps.Keys(brokers)) {
		b := brokers[id]
		sc := consumer.NewSimpleConsumer(b.Addr(), 5*time.Second)
		_, err := sc.GetOffsetsBefore(topic, int32(parts-1), protocol.OffsetsLatest, 1)
		sc.Close()
		if errors.Is(err, protocol.ErrWrongPartition) {
			return fmt.Errorf("create topic %q: broker %d (%s) gives a new topic fewer than %d partitions (its num.partitions or "+
				"topic.partition.count.map decides, in 0.7's registry); nothing was created. Set topic.partition.count.map=%s:%d "+
				"in its server.properties, or create a replicated topic of %d partitions with --replication-factor", topic, id, b.Addr(),
				parts, topic, parts, parts)
		}
		if err != nil {
			return fmt.Errorf("create topic %q: ask broker %d (%s) for its partitions: %w", topic, id, b.Addr(), err)
		}
	}
	return nil
}

// describeTopic prints the topic's partitions (sorted by broker id then partition number) with their broker,
// log end offset (OFFSETS latest, the flushed end) and size (latest minus earliest retained offset).
func describeTopic(c *zk.Client, topic string, filter describeFilter, w io.Writer) error {
	if a, err := replication.ReadAssignment(c, topic); err == nil {
		return describeReplicated(c, topic, a, filter, w)
	} else if !errors.Is(err, replication.ErrNotReplicated) {
		return err
	}
	if filter.underReplicated || filter.unavailable {
		return nil // an unreplicated topic has no replicas to miss
	}
	regs, brokers, err := topicRegistrations(c, topic)
	if err != nil {
		return err
	}
	if len(regs) == 0 {
		return fmt.Errorf("describe topic %q: no live broker has registered it", topic)
	}
	total := 0
	for _, n := range regs {
		total += n
	}
	fmt.Fprintf(w, "Topic:%s\tPartitionCount:%d\tBrokers:%d\n", topic, total, len(regs))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\tPARTITION\tBROKER\tADDRESS\tLOG-END-OFFSET\tSIZE")
	for _, id := range slices.Sorted(maps.Keys(regs)) {
		b, live := brokers[id]
		var sc *consumer.SimpleConsumer
		if live {
			sc = consumer.NewSimpleConsumer(b.Addr(), 5*time.Second)
		}
		for part := range regs[id] {
			end, size := "?", "?"
			if sc != nil {
				if e, err := sc.LatestOffset(topic, int32(part)); err == nil {
					end = strconv.FormatInt(e, 10)
					if s, err := sc.EarliestOffset(topic, int32(part)); err == nil {
						size = strconv.FormatInt(e-s, 10)
					}
				}
			}
			fmt.Fprintf(tw, "\t%s\t%d\t%s\t%s\t%s\n", zk.PartitionName(id, part), id, b.Addr(), end, size)
		}
		if sc != nil {
			sc.Close()
		}
	}
	return tw.Flush()
}

package main

import (
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/stream"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "stream-ctr",
		Args:    "--zookeeper HOST:PORT --impressions TOPIC --clicks TOPIC --window 10s --output TOPIC [--grace 2s] [--group G]",
		Summary: "click-through rates per item: clicks joined with impressions within a window, unclicked ones included (paper §1, §6)",
		Run:     streamCTR,
	})
}

// streamCTR runs the pipeline of kafka/stream/join_stage.go in one member of --group: the impressions and the
// clicks repartitioned by impression id into <group>-events (the join key, §6), joined per partition within
// --window (an impression without a click in its window is a non-click, §1), the decided impressions
// repartitioned by item into <group>-by-item, and each item's exact rate published to --output as
// "<item> <clicked> <impressions> <rate>" after every impression decided. `kafka stream-table --topic
// OUTPUT` shows the latest rate of each item. The intermediate topics and the output are made if missing,
// with as many partitions per broker as the impressions (the events topic must be partitioned like the
// inputs for the ticks of kafka stream-ctr-gen to reach every join task).
//
// The grace period must cover the event-time disorder of each input: the join's stream time is the lesser of
// its two sides' latest times (kafka/stream/join.go), and a repartitioning stage publishes each output
// partition's events in the order it read them (one input partition per output partition here, the topics
// being co-partitioned), so it adds none. Hence the default grace of 2 s, the disorder of kafka
// stream-ctr-gen's topics.
func streamCTR(args []string, std stdio) error {
	fs := newFlags(commands["stream-ctr"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[/chroot]")
	imps := fs.String("impressions", "", "topic of the impressions: lines \"imp <id> <item> <ms>\"")
	clicks := fs.String("clicks", "", "topic of the clicks: lines \"click <id> <item> <ms>\"")
	output := fs.String("output", "", "topic of the rates")
	group := fs.String("group", "stream-ctr", "consumer group of the processes; also the prefix of the intermediate topics")
	window := fs.Duration("window", 10*time.Second, "a click counts if it comes within this long after its impression")
	grace := fs.Duration("grace", 2*time.Second, "how long, in event time, the join waits for late events: at least the inputs' disorder (kafka stream-ctr-gen's is 2s)")
	every := fs.Duration("report-every", 10*time.Second, "print the tasks' report this often")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "impressions", "clicks", "output"); err != nil {
		return err
	}
	if err := checkTimes(*window, *grace, *every); err != nil {
		return err
	}
	if err := checkGroup(*group); err != nil {
		return err
	}
	events, byItem := *group+"-events", *group+"-by-item"
	names := map[string]string{"impressions": *imps, "clicks": *clicks, "output": *output,
		"group (its events topic)": events, "group (its by-item topic)": byItem}
	if err := checkTopics(names); err != nil {
		return err
	}
	seen := map[string]string{}
	for f, t := range names {
		if g, dup := seen[t]; dup {
			return usagef("--%s and --%s are both %q: the five topics must differ", g, f, t)
		}
		seen[t] = f
	}
	rep, err := stream.Repartition(stream.RepartitionConfig{Output: events})
	if err != nil {
		return usagef("%v", err)
	}
	join, err := stream.CTRJoin(stream.CTRJoinConfig{Window: *window, Grace: *grace, Output: byItem})
	if err != nil {
		return usagef("%v", err)
	}
	rates, err := stream.CTRRates(stream.CTRRatesConfig{Output: *output})
	if err != nil {
		return usagef("%v", err)
	}

	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	parts, err := partitionsPerBroker(c, *imps)
	if err == nil {
		_, err = partitionsPerBroker(c, *clicks)
	}
	if err == nil {
		err = ensureTopics(c, *zkConnect, parts, std, events, byItem, *output)
	}
	c.Close()
	if err != nil {
		return err
	}
	d, err := zk.NewDiscovery(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	err = stream.CheckCopartitioned(d, *imps, *clicks, events)
	d.Close()
	if err != nil {
		return err
	}
	return runStages(streamContext, *zkConnect, *group, []stream.Stage{
		{Input: *imps, Key: stream.CTRKey, Time: stream.CTRTime, Processors: []stream.ProcessorFactory{rep}},
		{Input: *clicks, Key: stream.CTRKey, Time: stream.CTRTime, Processors: []stream.ProcessorFactory{rep}},
		{Input: events, Key: stream.CTRKey, Time: stream.CTRTime, Processors: []stream.ProcessorFactory{join}},
		{Input: byItem, Key: stream.DecisionKey, Time: stream.DecisionTime, Processors: []stream.ProcessorFactory{rates}},
	}, *every, std)
}

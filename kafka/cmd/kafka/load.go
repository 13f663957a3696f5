package main

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/etl"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "load",
		Args:    "--zookeeper HOST:PORT[/chroot] --topic T --output DIR [--fetch-size N]",
		Summary: "load a topic into DIR from the offsets stored there up to a snapshot of the latest, committing data and offsets together (paper §4)",
		Run:     load,
	})
}

// load is one run of kafka/etl's job: rerun it after a failure, or on a
// schedule, and DIR gains one run directory per run that found something new.
func load(args []string, std stdio) error {
	fs := newFlags(commands["load"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string of the cluster to read")
	topic := fs.String("topic", "", "topic to load")
	output := fs.String("output", "", "output directory (created if missing); see kafka/etl for its layout")
	fetchSize := fs.Int("fetch-size", 1<<20, "bytes per fetch request")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "topic", "output"); err != nil {
		return err
	}
	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	parts, err := zkPartitions(c, *topic)
	c.Close()
	if err != nil {
		return err
	}
	job := etl.Job{Topic: *topic, Partitions: parts, Output: *output, FetchSize: int32(*fetchSize),
		Logger: slog.New(slog.NewTextHandler(std.Err, nil))}
	res, err := job.Run()
	if err != nil {
		return err
	}
	if res.Run == "" {
		fmt.Fprintf(std.Out, "nothing new in %s since the last run\n", *topic)
		return nil
	}
	var msgs, bytes int64
	for _, r := range res.Lines {
		msgs += r.Messages
		bytes += r.End - r.Start
	}
	fmt.Fprintf(std.Out, "committed %s: %d messages, %d bytes from %d partitions\n", res.Run, msgs, bytes, len(res.Lines))
	return nil
}

// zkPartitions lists every partition of topic registered in ZooKeeper with
// its broker's address; a partition of a broker that is down is an error,
// since it cannot be read.
func zkPartitions(c *zk.Client, topic string) ([]etl.Partition, error) {
	regs, brokers, err := topicRegistrations(c, topic)
	if err != nil {
		return nil, err
	}
	if len(regs) == 0 {
		return nil, fmt.Errorf("topic %q: no broker has registered it in %s", topic, zk.BrokerTopicPath(topic))
	}
	var out []etl.Partition
	for _, id := range slices.Sorted(maps.Keys(regs)) {
		b, ok := brokers[id]
		if !ok {
			return nil, fmt.Errorf("topic %q: broker %d has %d partitions of it but is not live", topic, id, regs[id])
		}
		for p := 0; p < regs[id]; p++ {
			out = append(out, etl.Partition{BrokerID: id, Addr: b.Addr(), Part: int32(p)})
		}
	}
	return out, nil
}

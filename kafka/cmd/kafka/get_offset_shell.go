package main

import (
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
)

func init() {
	register(&command{
		Name:    "get-offset-shell",
		Args:    "--broker-list HOST:PORT --topic TOPIC [--partition P] --time -1|-2|MS [--offsets N]",
		Summary: "print a partition's segment start offsets before a time (-1 latest, -2 earliest)",
		Run:     getOffsetShell,
	})
}

func getOffsetShell(args []string, std stdio) error {
	fs := newFlags(commands["get-offset-shell"], std.Err)
	broker := brokerFlag(fs)
	topic := fs.String("topic", "", "topic")
	partition := fs.Int("partition", 0, "partition number on that broker (of a replicated topic: its number; the leader answers)")
	t := fs.Int64("time", -1, "-1 (latest: the flushed end), -2 (earliest) or ms since the epoch")
	n := fs.Int("offsets", 1, "how many offsets at most")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "broker-list", "topic"); err != nil {
		return err
	}
	if *n < 1 {
		return usagef("--offsets must be at least 1, got %d", *n)
	}
	c := consumer.NewSimpleConsumer(leaderAddr(firstBroker(*broker), *topic, *partition), 30*time.Second)
	defer c.Close()
	offs, err := c.GetOffsetsBefore(*topic, int32(*partition), *t, int32(*n))
	if err != nil {
		return err
	}
	for _, o := range offs {
		fmt.Fprintln(std.Out, o)
	}
	return nil
}

// leaderAddr is where to ask about a partition given on the command line with --broker: for a replicated
// topic its leader, which the broker names in its METADATA answer (docs/PROTOCOL.md §10); else broker itself.
func leaderAddr(broker, topic string, partition int) string {
	leaders, addrs, err := consumer.Leaders([]string{broker}, 10*time.Second, topic)
	if ls := leaders[topic]; err == nil && partition >= 0 && partition < len(ls) && ls[partition] >= 0 && addrs[ls[partition]] != "" {
		return addrs[ls[partition]]
	}
	return broker
}

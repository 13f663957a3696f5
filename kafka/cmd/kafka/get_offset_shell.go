package main

import (
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

func init() {
	register(&command{
		Name:    "get-offset-shell",
		Args:    "--broker-list HOST:PORT --topic TOPIC [--partition P] --time -1|-2|MS [--offsets N] [--logical]",
		Summary: "print a partition's segment start offsets before a time (-1 latest, -2 earliest); with --logical, 0.8's logical offset beside each",
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
	logical := fs.Bool("logical", false, "print beside each byte offset the logical offset (0.8's: the message's number) that the Kafka protocol's Offsets request gives")
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
	var logs []int64
	if *logical {
		addr := leaderAddr(firstBroker(*broker), *topic, *partition)
		if logs, err = logicalOffsets(addr, *topic, int32(*partition), *t, int32(*n)); err != nil {
			return err
		}
		if len(logs) != len(offs) {
			return fmt.Errorf("get-offset-shell: %d byte offsets but %d logical ones (the log moved between the two requests); ask again", len(offs), len(logs))
		}
	}
	for i, o := range offs {
		if *logical {
			fmt.Fprintf(std.Out, "%d logical %d\n", o, logs[i])
		} else {
			fmt.Fprintln(std.Out, o)
		}
	}
	return nil
}

// logicalOffsets asks addr the Kafka protocol's Offsets v0 (docs/PROTOCOL.md
// §12) for partition's offsets before t.
func logicalOffsets(addr, topic string, partition int32, t int64, n int32) ([]int64, error) {
	body := protocol08.AppendOffsetsBody(nil, []protocol08.OffsetsPart{{Topic: topic, Partition: partition, Time: t, MaxOffsets: n}})
	resp, err := protocol08.Call(addr, 30*time.Second, protocol08.Header{APIKey: protocol08.KeyOffsets, CorrelationID: 1, ClientID: "get-offset-shell"}, body, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("get-offset-shell: %w", err)
	}
	res, err := protocol08.DecodeOffsetsResponse(resp)
	if err != nil {
		return nil, err
	}
	if len(res) != 1 || res[0].Error != 0 {
		return nil, fmt.Errorf("get-offset-shell: Offsets answer from %s for %s-%d: %+v", addr, topic, partition, res)
	}
	return res[0].Offsets, nil
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

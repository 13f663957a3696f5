package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/signal"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
)

func init() {
	register(&command{
		Name:    "simple-consumer-shell",
		Args:    "--broker-list HOST:PORT --topic TOPIC [--partition P] [--offset N|-1|-2] [flags]",
		Summary: "print the messages of one partition from an offset, following new ones",
		Run:     simpleConsumerShell,
	})
}

func simpleConsumerShell(args []string, std stdio) error {
	fs := newFlags(commands["simple-consumer-shell"], std.Err)
	broker := brokerFlag(fs)
	topic := fs.String("topic", "", "topic")
	partition := fs.Int("partition", 0, "partition number on that broker")
	offset := fs.Int64("offset", -2, "start offset: a byte offset, -1 (latest) or -2 (earliest)")
	maxMsgs := fs.Int64("max-messages", -1, "stop after this many messages (-1: never, follow new messages)")
	printOffsets := fs.Bool("print-offsets", false, "print each message's offset and next offset before it")
	fetchSize := fs.Int("fetch-size", consumer.DefaultFetchSize, "bytes per fetch")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "broker-list", "topic"); err != nil {
		return err
	}
	if *fetchSize <= 0 {
		return usagef("--fetch-size must be positive, got %d", *fetchSize)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	c := consumer.NewSimpleConsumer(leaderAddr(firstBroker(*broker), *topic, *partition), 30*time.Second)
	defer c.Close()
	start := *offset
	if start < 0 {
		offs, err := c.GetOffsetsBefore(*topic, int32(*partition), start, 1)
		if err != nil {
			return err
		}
		if len(offs) == 0 {
			return fmt.Errorf("broker %s has no offset for %s-%d at time %d", *broker, *topic, *partition, start)
		}
		start = offs[0]
	}
	out := bufio.NewWriter(std.Out)
	defer out.Flush()
	it := consumer.NewPartitionIterator(c, *topic, int32(*partition), start, int32(*fetchSize))
	for n := int64(0); *maxMsgs < 0 || n < *maxMsgs; n++ {
		// Flush what is printed before blocking for more.
		if !it.Poll() {
			if err := it.Err(); err != nil {
				return err
			}
			if err := out.Flush(); err != nil {
				return err
			}
			if !it.Next(ctx) {
				if errors.Is(it.Err(), context.Canceled) {
					return nil
				}
				return it.Err()
			}
		}
		if *printOffsets {
			fmt.Fprintf(out, "offset %d next %d: ", it.Offset(), it.NextOffset())
		}
		out.Write(it.Payload())
		if err := out.WriteByte('\n'); err != nil {
			return err
		}
	}
	return nil
}

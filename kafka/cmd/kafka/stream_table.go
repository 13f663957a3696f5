package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/stream"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "stream-table",
		Args:    "--zookeeper HOST:PORT --topic TOPIC [--key-field N]",
		Summary: "print a topic read as a table: the latest message of each key, sorted by key (paper §6)",
		Run:     streamTable,
	})
}

// streamTable opens a stream.Table on the topic (every partition read from its earliest offset to the end it
// had when the command started) and prints each key's latest message, one line per key in key order, then a
// count on stderr. The key is field N of the message split at spaces.
func streamTable(args []string, std stdio) error {
	fs := newFlags(commands["stream-table"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[/chroot]")
	topic := fs.String("topic", "", "the table's topic")
	field := fs.Int("key-field", 0, "the key is this field of the message (from 0, split at spaces)")
	timeout := fs.Duration("timeout", 30*time.Second, "give up reading the topic after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "topic"); err != nil {
		return err
	}
	if *field < 0 {
		return usagef("--key-field must be 0 or more, got %d", *field)
	}
	if err := zk.ValidTopic(*topic); err != nil {
		return usagef("--topic: %v", err)
	}
	if *timeout <= 0 {
		return usagef("--timeout must be positive, got %v", *timeout)
	}
	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if ok, err := c.Exists(zk.BrokerTopicPath(*topic)); err != nil || !ok {
		if err == nil {
			err = fmt.Errorf("topic %q is not registered in ZooKeeper", *topic)
		}
		return err
	}
	d, err := zk.NewDiscoveryClient(c)
	if err != nil {
		return err
	}
	defer d.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	t, err := stream.OpenTable(ctx, d, stream.TableConfig{Topic: *topic, Key: stream.KeyField(' ', *field)})
	if err != nil {
		return err
	}
	defer t.Close()
	rows := t.Rows()
	keys := make([]string, 0, len(rows))
	for k := range rows {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(std.Out, "%s\n", rows[k])
	}
	st := t.Stats()
	fmt.Fprintf(std.Err, "%d keys from %d messages of %d partitions (%d without a key)\n", len(keys),
		st.Applied+st.Deleted+st.Skipped, len(st.Offsets), st.Skipped)
	return nil
}

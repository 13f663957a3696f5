package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/stream"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "stream-join-table",
		Args:    "--zookeeper HOST:PORT --input TOPIC --table TOPIC --key N --output TOPIC [--table-key N] [--inner] [--group G]",
		Summary: "join each message with the latest row of its key in a table read from a topic (paper §6's stream–table join)",
		Run:     streamJoinTable,
	})
}

// streamJoinTable reads --table as a stream.Table (each key's latest message; key field --table-key) and runs a
// stage over --input with stream.TableJoin: every message is published to --output as "<message> <row>", keyed
// by its field --key, with "-" for a key the table lacks (or, with --inner, counted as a skip). The table is
// loaded before the stage starts and follows its topic while the command runs.
func streamJoinTable(args []string, std stdio) error {
	fs := newFlags(commands["stream-join-table"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[/chroot]")
	input := fs.String("input", "", "topic of the messages to join")
	table := fs.String("table", "", "topic read as the table")
	output := fs.String("output", "", "topic of the joined messages")
	group := fs.String("group", "", "consumer group of the processes (default stream-join-<input>)")
	key := fs.String("key", "", "the key to look up is this field of the message (0: the first; split at spaces)")
	tableKey := fs.Int("table-key", 0, "the table's key is this field of its messages")
	inner := fs.Bool("inner", false, "drop (and count) a message whose key has no row, instead of joining it with \"-\"")
	every := fs.Duration("report-every", 10*time.Second, "print the tasks' report this often")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "input", "table", "output", "key"); err != nil {
		return err
	}
	kf, err := fieldNumber("key", *key)
	if err != nil {
		return err
	}
	if *tableKey < 0 {
		return usagef("--table-key must be 0 or more, got %d", *tableKey)
	}
	if err := checkReportEvery(*every); err != nil {
		return err
	}
	if *group == "" {
		*group = "stream-join-" + *input
	}
	if err := checkGroup(*group); err != nil {
		return err
	}
	if err := checkTopics(map[string]string{"input": *input, "table": *table, "output": *output}); err != nil {
		return err
	}
	if *output == *input || *output == *table {
		return usagef("--output %q must differ from --input and --table", *output)
	}

	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	parts, err := partitionsPerBroker(c, *input)
	if err == nil {
		_, err = partitionsPerBroker(c, *table)
	}
	if err == nil {
		err = ensureTopics(c, *zkConnect, parts, std, *output)
	}
	if err != nil {
		return err
	}
	d, err := zk.NewDiscoveryClient(c)
	if err != nil {
		return err
	}
	defer d.Close()
	ctx, cancel := context.WithCancel(streamContext)
	defer cancel()
	t, err := stream.OpenTable(ctx, d, stream.TableConfig{Topic: *table, Key: stream.KeyField(' ', *tableKey)})
	if err != nil {
		return err
	}
	defer t.Close()
	fmt.Fprintf(std.Err, "table %s loaded: %d keys\n", *table, t.Stats().Keys)
	join, err := stream.TableJoin(stream.TableJoinConfig{Table: t, Output: *output, Inner: *inner})
	if err != nil {
		return usagef("%v", err)
	}
	return runStages(ctx, *zkConnect, *group, []stream.Stage{{Input: *input, Key: stream.KeyField(' ', kf),
		Time: noEventTime, Processors: []stream.ProcessorFactory{join}}}, *every, std)
}

// noEventTime is the time of a stage without windows: every message at 0.
func noEventTime([]byte) (int64, error) { return 0, nil }

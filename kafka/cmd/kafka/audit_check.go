package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/audit"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/etl"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name: "audit-check",
		Args: "--zookeeper HOST:PORT[/chroot] --topic T [--group G] [--audit-zookeeper HOST:PORT[/chroot]] [--audit-topic audit]",
		Summary: "per time window, messages produced (by the audit events), consumed, missing and duplicated; " +
			"exit 1 if any is missing (paper §4)",
		Run: auditCheck,
	})
}

// auditCheck is the paper's §4 audit. Produced comes from the monitoring
// events of the audit topic on --audit-zookeeper's cluster (default
// --zookeeper: across a mirror, give the source cluster there); consumed is
// what --topic holds on --zookeeper's cluster, from each partition's earliest
// offset up to group G's committed offset (with --group) or to the log's end.
func auditCheck(args []string, std stdio) error {
	fs := newFlags(commands["audit-check"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper of the cluster whose messages are counted")
	topic := fs.String("topic", "", "topic to check")
	group := fs.String("group", "", "count only what this consumer group has consumed (its committed offsets)")
	auditZK := fs.String("audit-zookeeper", "", "ZooKeeper of the cluster holding the audit events (default: --zookeeper)")
	auditTopic := fs.String("audit-topic", "audit", "topic of the monitoring events")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "topic"); err != nil {
		return err
	}
	if *auditZK == "" {
		*auditZK = *zkConnect
	}
	tally := audit.NewTally(*topic)
	badShown := 0
	if err := readTopic(*auditZK, *auditTopic, "", func(p []byte) {
		if err := tally.AddEvent(p); err != nil && badShown < 5 {
			badShown++
			fmt.Fprintf(std.Err, "audit-check: skipping a message of %s: %v\n", *auditTopic, err)
		}
	}); err != nil {
		return fmt.Errorf("reading the audit events: %w", err)
	}
	if tally.WindowMs() == 0 {
		return fmt.Errorf("no audit event for topic %q in %s on %s", *topic, *auditTopic, *auditZK)
	}
	if err := readTopic(*zkConnect, *topic, *group, tally.AddMessage); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "WINDOW (UTC, %s)\tPRODUCED\tCONSUMED\tMISSING\tDUPLICATED\t\n", time.Duration(tally.WindowMs())*time.Millisecond)
	var missing, dups int64
	for _, r := range tally.Rows() {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t\n", r.Window.Format("2006-01-02 15:04:05.000"), r.Produced, r.Consumed, r.Missing, r.Duplicated)
		missing += r.Missing
		dups += r.Duplicated
	}
	tw.Flush()
	fmt.Fprintf(std.Out, "total: %d missing, %d duplicated, %d without an audit envelope, %d bad audit events\n",
		missing, dups, tally.NotAudited, tally.BadEvents)
	if missing > 0 {
		return fmt.Errorf("%d messages of %s missing", missing, *topic)
	}
	return nil
}

// readTopic hands every message payload of topic on the cluster at connect
// to fn, from each partition's earliest offset to its end, or to group's
// committed offset when group is set; compressed wrappers are unpacked.
func readTopic(connect, topic, group string, fn func([]byte)) error {
	c, err := zk.Connect(connect, 6*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	parts, err := zkPartitions(c, topic)
	if err != nil {
		return err
	}
	for _, p := range parts {
		until := int64(-1)
		if group != "" {
			until = 0
			data, err := c.Get(zk.OffsetPath(group, topic, p.Name()))
			if err == nil {
				if until, err = strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64); err != nil {
					return fmt.Errorf("group %s: offset of %s-%s is %q", group, topic, p.Name(), data)
				}
			} else if !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
		if err := readPartition(p, topic, until, fn); err != nil {
			return err
		}
	}
	return nil
}

func readPartition(p etl.Partition, topic string, until int64, fn func([]byte)) error {
	sc := consumer.NewSimpleConsumer(p.Addr, 30*time.Second)
	defer sc.Close()
	off, err := sc.EarliestOffset(topic, p.Part)
	if err != nil {
		return err
	}
	if until < 0 {
		if until, err = sc.LatestOffset(topic, p.Part); err != nil {
			return err
		}
	}
	for off < until {
		set, err := sc.Fetch(topic, p.Part, off, 1<<20)
		if err != nil {
			return err
		}
		if len(set) == 0 {
			return fmt.Errorf("%s-%s: nothing to read at offset %d below %d", topic, p.Name(), off, until)
		}
		d := message.NewDeepIterator(set, off)
		for d.Next() && d.Offset() < until {
			fn(d.Message().Payload())
			off = d.NextOffset()
		}
		if d.Err() != nil {
			return fmt.Errorf("%s-%s: %w", topic, p.Name(), d.Err())
		}
		if d.Consumed() == 0 {
			return fmt.Errorf("%s-%s: no whole message at offset %d", topic, p.Name(), off)
		}
	}
	return nil
}

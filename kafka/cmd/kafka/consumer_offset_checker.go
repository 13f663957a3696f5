package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "consumer-offset-checker",
		Args:    "--zookeeper HOST:PORT[/chroot] --group G [--topic T]",
		Summary: "print each partition's owner, committed offset, log end and lag for a consumer group",
		Run:     consumerOffsetChecker,
	})
}

// consumerOffsetChecker is 0.7's ConsumerOffsetChecker: for every topic the group has offsets or owners for
// (paper §3.2: the offset registry /consumers/<group>/offsets and the ownership registry
// /consumers/<group>/owners), and every partition of it, the owning stream, the committed offset (the next
// byte to consume), the broker's log end (OFFSETS latest) and the lag between them, in bytes — offsets are
// byte positions (§3.1).
func consumerOffsetChecker(args []string, std stdio) error {
	fs := newFlags(commands["consumer-offset-checker"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[,host:port][/chroot]")
	group := fs.String("group", "", "consumer group")
	topicFlag := fs.String("topic", "", "only this topic (default: every topic of the group)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "group"); err != nil {
		return err
	}
	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	if ok, err := c.Exists(zk.ConsumerGroupPath(*group)); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("group %q: no %s in ZooKeeper", *group, zk.ConsumerGroupPath(*group))
	}
	topics := []string{*topicFlag}
	if *topicFlag == "" {
		topics = nil
		for _, p := range []string{zk.ConsumerGroupPath(*group) + "/offsets", zk.ConsumerGroupPath(*group) + "/owners"} {
			names, err := c.Children(p)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			topics = append(topics, names...)
		}
		slices.Sort(topics)
		topics = slices.Compact(topics)
	}
	brokers, err := zk.LiveBrokers(c, nil)
	if err != nil {
		return err
	}
	clients := map[int]*consumer.SimpleConsumer{}
	defer func() {
		for _, sc := range clients {
			sc.Close()
		}
	}()
	tw := tabwriter.NewWriter(std.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC\tPARTITION\tOFFSET\tLOG-END\tLAG\tOWNER")
	for _, topic := range topics {
		if a, err := replication.ReadAssignment(c, topic); err == nil {
			// docs/PROTOCOL.md §10: a replicated topic's partitions are named by number, and their leader
			// answers where they end (committed and flushed).
			for p := range a {
				name := strconv.Itoa(p)
				offset, end, lag, owner := "none", "?", "?", "none"
				if data, err := c.Get(zk.OffsetPath(*group, topic, name)); err == nil {
					offset = strings.TrimSpace(string(data))
				}
				if data, err := c.Get(zk.OwnerPath(*group, topic, name)); err == nil {
					owner = string(data)
				}
				s, err := replication.ReadState(c, topic, p)
				if br, ok := brokers[int(s.Leader)]; err == nil && ok {
					sc := clients[br.ID]
					if sc == nil {
						sc = consumer.NewSimpleConsumer(br.Addr(), 5*time.Second)
						clients[br.ID] = sc
					}
					if e, err := sc.LatestOffset(topic, int32(p)); err == nil {
						end = strconv.FormatInt(e, 10)
						if o, err := strconv.ParseInt(offset, 10, 64); err == nil {
							lag = strconv.FormatInt(e-o, 10)
						}
					}
				} else {
					end = "no leader"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", *group, topic, name, offset, end, lag, owner)
			}
			continue
		}
		parts, err := groupPartitions(c, *group, topic)
		if err != nil {
			return err
		}
		for _, p := range parts {
			b, part, _ := zk.ParsePartitionName(p)
			offset, end, lag, owner := "none", "?", "?", "none"
			if data, err := c.Get(zk.OffsetPath(*group, topic, p)); err == nil {
				offset = strings.TrimSpace(string(data))
			}
			if data, err := c.Get(zk.OwnerPath(*group, topic, p)); err == nil {
				owner = string(data)
			}
			if br, ok := brokers[b]; ok {
				sc := clients[b]
				if sc == nil {
					sc = consumer.NewSimpleConsumer(br.Addr(), 5*time.Second)
					clients[b] = sc
				}
				if e, err := sc.LatestOffset(topic, int32(part)); err == nil {
					end = strconv.FormatInt(e, 10)
					if o, err := strconv.ParseInt(offset, 10, 64); err == nil {
						lag = strconv.FormatInt(e-o, 10)
					}
				}
			} else {
				end = "broker down"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", *group, topic, p, offset, end, lag, owner)
		}
	}
	return tw.Flush()
}

// groupPartitions is the union of the topic's registered partitions and those the group has offsets or
// owners for, sorted by broker id then partition number.
func groupPartitions(c *zk.Client, group, topic string) ([]string, error) {
	set := map[string]bool{}
	regs, _, err := topicRegistrations(c, topic)
	if err != nil {
		return nil, err
	}
	for id, n := range regs {
		for p := range n {
			set[zk.PartitionName(id, p)] = true
		}
	}
	for _, dir := range []string{zk.OffsetsPath(group, topic), zk.OwnersPath(group, topic)} {
		names, err := c.Children(dir)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return nil, err
		}
		for _, n := range names {
			if _, _, err := zk.ParsePartitionName(n); err == nil {
				set[n] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b string) int {
		ab, ap, _ := zk.ParsePartitionName(a)
		bb, bp, _ := zk.ParsePartitionName(b)
		if ab != bb {
			return ab - bb
		}
		return ap - bp
	})
	return out, nil
}

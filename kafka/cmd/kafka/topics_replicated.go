package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Replicated topics in the topics tool (docs/PROTOCOL.md §10): --create with a replication factor above 1
// or a --replica-assignment writes the topic's replica lists to ZooKeeper in one node, after checking the
// name and that enough brokers are alive, so a refused creation leaves nothing behind; the controller then
// elects the leaders. --describe prints 0.8's two-line format.

// partitionsSet reports whether --partitions was given on the command line.
func partitionsSet(fs *flag.FlagSet) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "partitions" })
	return set
}

func createReplicatedTopic(c *zk.Client, topic string, parts, factor int, assignment string, partsGiven bool, std stdio) error {
	if err := replication.ValidateTopicName(topic); err != nil {
		return err
	}
	var a replication.Assignment
	var err error
	if assignment != "" {
		if a, err = replication.ParseAssignmentFlag(assignment); err != nil {
			return err
		}
		if partsGiven && parts != len(a) {
			return usagef("--partitions %d contradicts --replica-assignment, which lists %d partitions", parts, len(a))
		}
	} else {
		live, err := replication.LiveBrokers(c)
		if err != nil {
			return err
		}
		ids := make([]int32, 0, len(live))
		for id := range live {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		if factor > len(ids) {
			return usagef("create topic %q: replication factor %d larger than the %d live brokers %v; nothing was created",
				topic, factor, len(ids), ids)
		}
		if a, err = replication.Assign(ids, parts, factor, -1, -1); err != nil {
			return err
		}
	}
	if err := replication.CreateTopic(c, topic, a); err != nil {
		return fmt.Errorf("create topic %q: %w; nothing was created", topic, err)
	}
	// The controller elects the leaders; wait for them, so that what comes next finds them.
	for deadline := time.Now().Add(topicsTimeout); ; time.Sleep(50 * time.Millisecond) {
		elected := 0
		for p := range a {
			if s, err := replication.ReadState(c, topic, p); err == nil && s.Leader >= 0 {
				elected++
			}
		}
		if elected == len(a) {
			break
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(std.Err, "kafka topics: %d of %d partitions of %q have no leader after %v: is a controller running (%s)?\n",
				len(a)-elected, len(a), topic, topicsTimeout, zk.ControllerPath)
			break
		}
	}
	fmt.Fprintf(std.Out, "Created topic %q: %s with replication factor %d.\n", topic, plural(len(a), "partition"), len(a[0]))
	return nil
}

// describeFilter is --under-replicated-partitions and --unavailable-partitions.
type describeFilter struct{ underReplicated, unavailable bool }

// describeReplicated prints, as Kafka 0.8's kafka-topics.sh did,
//
//	Topic:<t>\tPartitionCount:<n>\tReplicationFactor:<r>\tConfigs:
//	\tTopic: <t>\tPartition: <p>\tLeader: <id>\tReplicas: <a,b,c>\tIsr: <a,b,c>
//
// with Leader "none" when the partition has no live leader. With a filter only the matching partitions are
// printed (and no topic line), as 0.8 did.
func describeReplicated(c *zk.Client, topic string, a replication.Assignment, filter describeFilter, w io.Writer) error {
	live, err := replication.LiveBrokers(c)
	if err != nil {
		return err
	}
	filtered := filter.underReplicated || filter.unavailable
	if !filtered {
		fmt.Fprintf(w, "Topic:%s\tPartitionCount:%d\tReplicationFactor:%d\tConfigs:\n", topic, len(a), len(a[0]))
	}
	for p, replicas := range a {
		s, err := replication.ReadState(c, topic, p)
		if err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		leader := "none"
		_, leaderLive := live[s.Leader]
		if err == nil && s.Leader >= 0 && leaderLive {
			leader = strconv.Itoa(int(s.Leader))
		}
		if filter.underReplicated && len(s.ISR) >= len(replicas) || filter.unavailable && leader != "none" {
			continue
		}
		fmt.Fprintf(w, "\tTopic: %s\tPartition: %d\tLeader: %s\tReplicas: %s\tIsr: %s\n", topic, p, leader, ids(replicas), ids(s.ISR))
	}
	return nil
}

func ids(v []int32) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(int(x))
	}
	return strings.Join(s, ",")
}

package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "preferred-replica-election",
		Args:    "--zookeeper HOST:PORT[/chroot] [--path-to-json-file FILE]",
		Summary: "ask the controller to move each partition's leadership back to its preferred (first) replica",
		Run:     preferredReplicaElection,
	})
}

// preferredReplicaElection is 0.8's kafka-preferred-replica-election.sh: it writes
// /admin/preferred_replica_election, {"partitions":[{"topic":"t","partition":0},...]}, with the partitions of
// the JSON file or else every partition of every replicated topic; the controller moves leadership where the
// preferred replica is alive and in the ISR, and removes the node (docs/PROTOCOL.md §10).
func preferredReplicaElection(args []string, std stdio) error {
	fs := newFlags(commands["preferred-replica-election"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[,host:port][/chroot]")
	file := fs.String("path-to-json-file", "", `partitions as {"partitions":[{"topic":"t","partition":0}]} (default: all)`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper"); err != nil {
		return err
	}
	c, err := zk.Connect(*zkConnect, 6*time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	var parts []replication.TopicPartition
	if *file != "" {
		data, err := os.ReadFile(*file)
		if err != nil {
			return err
		}
		if parts, err = replication.ParseElection(data); err != nil {
			return err
		}
		for _, tp := range parts {
			if err := replication.ValidateTopicName(tp.Topic); err != nil {
				return err
			}
		}
	} else {
		topics, names, err := replication.ReplicatedTopics(c)
		if err != nil {
			return err
		}
		for _, t := range names {
			for p := range topics[t] {
				parts = append(parts, replication.TopicPartition{Topic: t, Partition: int32(p)})
			}
		}
	}
	if len(parts) == 0 {
		return fmt.Errorf("no replicated partitions to elect leaders for")
	}
	err = c.CreatePersistent(zk.PreferredReplicaElectionPath, replication.MarshalElection(parts))
	if errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("a preferred replica election is already in progress (%s exists)", zk.PreferredReplicaElectionPath)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(std.Out, "Successfully started preferred replica election for %s\n", plural(len(parts), "partition"))
	return nil
}

package replication

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Assign spreads partitions × replicationFactor replicas over brokers (sorted ids) the way Kafka 0.8's
// AdminUtils did: partition p's first replica (its preferred leader) is broker (start+p) mod n, so leaders go
// round the brokers, and its other replicas follow at a shift that grows every n partitions, so the
// followers of one broker's partitions are spread too. start and the first shift are chosen at random when
// negative.
func Assign(brokers []int32, partitions, replicationFactor int, start, shift int) (Assignment, error) {
	n := len(brokers)
	switch {
	case partitions < 1:
		return nil, fmt.Errorf("%w: %d partitions", ErrBadAssignment, partitions)
	case replicationFactor < 1:
		return nil, fmt.Errorf("%w: replication factor %d", ErrBadAssignment, replicationFactor)
	case replicationFactor > n:
		return nil, fmt.Errorf("%w: replication factor %d larger than the %d live brokers %v", ErrBadAssignment, replicationFactor, n, brokers)
	}
	if start < 0 {
		start = rand.IntN(n)
	}
	if shift < 0 {
		shift = rand.IntN(n)
	}
	a := make(Assignment, partitions)
	for p := range partitions {
		if p > 0 && p%n == 0 {
			shift++
		}
		first := (start + p) % n
		rs := []int32{brokers[first]}
		for j := 1; j < replicationFactor; j++ {
			// 0.8's replicaIndex: the followers of "first" never land on it.
			s := 1 + (shift+j-1)%(n-1)
			rs = append(rs, brokers[(first+s)%n])
		}
		a[p] = rs
	}
	return a, nil
}

// ParseAssignmentFlag reads --replica-assignment "1:2:0,2:0:1": partitions separated by commas, each one's
// replicas by colons, the first being its preferred leader. Every partition needs the same number of
// replicas, each a distinct broker.
func ParseAssignmentFlag(s string) (Assignment, error) {
	var a Assignment
	for i, part := range strings.Split(s, ",") {
		var rs []int32
		seen := map[int32]bool{}
		for _, f := range strings.Split(strings.TrimSpace(part), ":") {
			id, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || id < 0 {
				return nil, fmt.Errorf("%w: partition %d in %q: %q is not a broker id", ErrBadAssignment, i, s, f)
			}
			if seen[int32(id)] {
				return nil, fmt.Errorf("%w: partition %d in %q names broker %d twice", ErrBadAssignment, i, s, id)
			}
			seen[int32(id)] = true
			rs = append(rs, int32(id))
		}
		if len(a) > 0 && len(rs) != len(a[0]) {
			return nil, fmt.Errorf("%w: partition %d in %q has %d replicas, partition 0 has %d", ErrBadAssignment, i, s, len(rs), len(a[0]))
		}
		a = append(a, rs)
	}
	return a, nil
}

// CreateTopic writes a replicated topic: one persistent node /brokers/topics/<topic> whose data is the
// assignment, created in one step so that a refused or failed creation leaves nothing behind. The name is
// checked before any path is built from it; every broker of the assignment must be alive; a topic of that
// name, replicated or 0.7's, is ErrTopicExists. The controller then creates the partitions' state nodes and
// tells the brokers to lead and follow.
func CreateTopic(c Store, topicName string, a Assignment) error {
	if err := topic.Validate(topicName); err != nil {
		return err
	}
	if len(a) == 0 {
		return fmt.Errorf("%w: topic %q with no partitions", ErrBadAssignment, topicName)
	}
	live, err := LiveBrokers(c)
	if err != nil {
		return err
	}
	for p, rs := range a {
		for _, id := range rs {
			if _, ok := live[id]; !ok {
				return fmt.Errorf("%w: partition %d of %q names broker %d, which is not alive (live: %v)",
					ErrBadAssignment, p, topicName, id, slices.Sorted(maps.Keys(live)))
			}
		}
	}
	if err := c.EnsurePath(zk.BrokerTopicsPath); err != nil {
		return err
	}
	err = c.CreatePersistent(zk.BrokerTopicPath(topicName), MarshalAssignment(a))
	if errors.Is(err, zk.ErrNodeExists) {
		if _, aerr := ReadAssignment(c, topicName); errors.Is(aerr, ErrNotReplicated) {
			return fmt.Errorf("%w: %q is an unreplicated topic (created by a produce, paper §3): choose another name", ErrTopicExists, topicName)
		}
		return fmt.Errorf("%w: %q", ErrTopicExists, topicName)
	}
	return err
}

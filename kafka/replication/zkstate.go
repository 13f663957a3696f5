package replication

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Assignment is a replicated topic's replica lists, the data of /brokers/topics/<topic>:
// {"version":1,"partitions":{"0":[1,2,0],"1":[2,0,1]}}. Assignment[p] lists partition p's replicas, the first
// being its preferred leader.
type Assignment [][]int32

// MarshalAssignment is the node's data for a.
func MarshalAssignment(a Assignment) []byte { return zk.MarshalReplicaAssignment(a) }

// ParseAssignment reads the data of /brokers/topics/<topic>. Empty data (a 0.7 topic's node) is
// ErrNotReplicated.
func ParseAssignment(topicName string, data []byte) (Assignment, error) {
	a, ok, err := zk.ParseReplicaAssignment(topicName, data)
	switch {
	case err != nil:
		return nil, fmt.Errorf("%w: %w", ErrBadState, err)
	case !ok:
		return nil, fmt.Errorf("%w: %q has no replica assignment", ErrNotReplicated, topicName)
	}
	return a, nil
}

// State is a partition's state node, /brokers/topics/<topic>/partitions/<p>/state:
// {"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2,0],
// "broker_epochs":{"0":4294967339,"1":4294967311,"2":4294967352}}. 0.8's node had the first five fields;
// broker_epochs records, for each ISR member, the broker epoch (zk.Broker.Epoch) of the registration it
// was in sync in (Decide says why). It changes only by a conditional set on the node's version (ZKVersion,
// not part of the JSON).
type State struct {
	ControllerEpoch int32           `json:"controller_epoch"`
	Leader          int32           `json:"leader"`
	Version         int             `json:"version"`
	LeaderEpoch     int32           `json:"leader_epoch"`
	ISR             []int32         `json:"isr"`
	BrokerEpochs    map[int32]int64 `json:"broker_epochs,omitempty"`
	ZKVersion       int32           `json:"-"`
}

// Marshal is the node's data.
func (s State) Marshal() []byte {
	s.Version = 1
	if s.ISR == nil {
		s.ISR = []int32{}
	}
	b, _ := json.Marshal(s)
	return b
}

// ParseState reads a state node's data.
func ParseState(data []byte, zkVersion int32) (State, error) {
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return State{}, fmt.Errorf("%w: partition state %q", ErrBadState, data)
	}
	s.ZKVersion = zkVersion
	return s, nil
}

// ValidateTopicName applies the one rule for topic names (package topic) before a name becomes a path.
func ValidateTopicName(name string) error { return topic.Validate(name) }

// ReadAssignment reads a topic's replica assignment; a 0.7 topic or a missing one is ErrNotReplicated.
func ReadAssignment(c Store, topicName string) (Assignment, error) {
	if err := topic.Validate(topicName); err != nil {
		return nil, err
	}
	data, err := c.Get(zk.BrokerTopicPath(topicName))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, fmt.Errorf("%w: no topic %q", ErrNotReplicated, topicName)
	}
	if err != nil {
		return nil, err
	}
	return ParseAssignment(topicName, data)
}

// ReadState reads one partition's state node.
func ReadState(c Store, topicName string, partition int) (State, error) {
	data, v, err := c.GetVersion(zk.PartitionStatePath(topicName, partition))
	if err != nil {
		return State{}, err
	}
	return ParseState(data, v)
}

// WriteState sets a partition's state if its node is still at s.ZKVersion and returns s with the new
// version; a lost race is zk.ErrBadVersion (wrapped). A state node that does not exist yet is created
// (ZKVersion must then be -1).
func WriteState(c Store, topicName string, partition int, s State) (State, error) {
	p := zk.PartitionStatePath(topicName, partition)
	if s.ZKVersion < 0 {
		if err := c.CreatePersistent(p, s.Marshal()); err != nil {
			return s, err
		}
		s.ZKVersion = 0
		return s, nil
	}
	v, err := c.SetVersion(p, s.Marshal(), s.ZKVersion)
	if err != nil {
		return s, err
	}
	s.ZKVersion = v
	return s, nil
}

// ReadControllerEpoch reads /controller_epoch (0 when there is none yet) and its version (-1 then).
func ReadControllerEpoch(c Store) (int32, int32, error) {
	data, v, err := c.GetVersion(zk.ControllerEpochPath)
	if errors.Is(err, zk.ErrNoNode) {
		return 0, -1, nil
	}
	if err != nil {
		return 0, 0, err
	}
	e, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %s holds %q", ErrBadState, zk.ControllerEpochPath, data)
	}
	return int32(e), v, nil
}

// controllerJSON is /controller's data: {"version":1,"brokerid":1,"timestamp":"<ms>"}.
type controllerJSON struct {
	Version   int    `json:"version"`
	BrokerID  int32  `json:"brokerid"`
	Timestamp string `json:"timestamp"`
}

func marshalController(id int32, now time.Time) []byte {
	b, _ := json.Marshal(controllerJSON{Version: 1, BrokerID: id, Timestamp: strconv.FormatInt(now.UnixMilli(), 10)})
	return b
}

// ReadController returns the id of the current controller, -1 if there is none.
func ReadController(c Store) (int32, error) {
	data, err := c.Get(zk.ControllerPath)
	if errors.Is(err, zk.ErrNoNode) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	var j controllerJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return -1, fmt.Errorf("%w: %s holds %q", ErrBadState, zk.ControllerPath, data)
	}
	return j.BrokerID, nil
}

// TopicPartition names one partition of a replicated topic.
type TopicPartition struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

func (tp TopicPartition) String() string { return tp.Topic + "-" + strconv.Itoa(int(tp.Partition)) }

type electionJSON struct {
	Partitions []TopicPartition `json:"partitions"`
}

// MarshalElection is /admin/preferred_replica_election's data: {"partitions":[{"topic":"t","partition":0}]}.
func MarshalElection(ps []TopicPartition) []byte {
	b, _ := json.Marshal(electionJSON{Partitions: ps})
	return b
}

// ParseElection reads it.
func ParseElection(data []byte) ([]TopicPartition, error) {
	var j electionJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("%w: %s holds %q", ErrBadState, zk.PreferredReplicaElectionPath, data)
	}
	return j.Partitions, nil
}

// ReplicatedTopics lists the replicated topics, sorted, with their assignments; 0.7 topics are left out.
func ReplicatedTopics(c Store) (map[string]Assignment, []string, error) {
	names, err := c.Children(zk.BrokerTopicsPath)
	if errors.Is(err, zk.ErrNoNode) {
		return map[string]Assignment{}, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	out := map[string]Assignment{}
	for _, n := range names {
		a, err := ReadAssignment(c, n)
		if errors.Is(err, ErrNotReplicated) || errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		out[n] = a
	}
	sorted := make([]string, 0, len(out))
	for n := range out {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	return out, sorted, nil
}

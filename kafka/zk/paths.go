package zk

import (
	"path"
	"strconv"
)

// The ZooKeeper layout of docs/PROTOCOL.md §5 (paper §3.2: "Kafka uses Zookeeper for the following tasks: (1)
// detecting the addition and the removal of brokers and consumers, (2) triggering a rebalance process in each
// consumer when the above events happen, and (3) maintaining the consumption relationship and keeping track of
// the consumed offset of each partition"). Every path below is relative to
// the client's chroot (the optional "/chroot" suffix of the connect string).
const (
	// BrokerIDsPath holds one ephemeral node per live broker: /brokers/ids/<brokerid>.
	BrokerIDsPath = "/brokers/ids"
	// BrokerTopicsPath holds one persistent node per topic, with one ephemeral child per broker that serves it.
	BrokerTopicsPath = "/brokers/topics"
	// ConsumersPath holds one persistent node per consumer group.
	ConsumersPath = "/consumers"
)

// BrokerIDPath is /brokers/ids/<id>; its data is "<creator>:<host>:<port>".
func BrokerIDPath(id int) string { return BrokerIDsPath + "/" + strconv.Itoa(id) }

// BrokerTopicPath is /brokers/topics/<topic>; its children are the ids of the brokers that serve the topic.
func BrokerTopicPath(topic string) string { return BrokerTopicsPath + "/" + topic }

// BrokerTopicBrokerPath is /brokers/topics/<topic>/<id>; its data is the number of partitions of the topic on
// that broker, in decimal.
func BrokerTopicBrokerPath(topic string, id int) string {
	return BrokerTopicPath(topic) + "/" + strconv.Itoa(id)
}

// ConsumerGroupPath is /consumers/<group>.
func ConsumerGroupPath(group string) string { return ConsumersPath + "/" + group }

// ConsumerIDsPath is /consumers/<group>/ids: the registry of the group's live consumers.
func ConsumerIDsPath(group string) string { return ConsumerGroupPath(group) + "/ids" }

// ConsumerIDPath is /consumers/<group>/ids/<consumerid>; its data is the JSON map topic → number of streams.
func ConsumerIDPath(group, id string) string { return ConsumerIDsPath(group) + "/" + id }

// OwnersPath is /consumers/<group>/owners/<topic>: the ownership registry of the topic's partitions.
func OwnersPath(group, topic string) string { return ConsumerGroupPath(group) + "/owners/" + topic }

// OwnerPath is /consumers/<group>/owners/<topic>/<part>, where part is "<brokerid>-<partition>" (see
// PartitionName); its ephemeral data is the id of the consumer stream that owns the partition.
func OwnerPath(group, topic, part string) string { return OwnersPath(group, topic) + "/" + part }

// OffsetsPath is /consumers/<group>/offsets/<topic>: the offset registry of the topic's partitions.
func OffsetsPath(group, topic string) string { return ConsumerGroupPath(group) + "/offsets/" + topic }

// OffsetPath is /consumers/<group>/offsets/<topic>/<part>; its persistent data is the next offset to consume,
// in decimal.
func OffsetPath(group, topic, part string) string { return OffsetsPath(group, topic) + "/" + part }

// PartitionName is the registry name "<brokerid>-<partition>" of a partition (docs/PROTOCOL.md §5: a partition is named by
// the broker that holds it and its number on that broker).
func PartitionName(brokerID, partition int) string {
	return strconv.Itoa(brokerID) + "-" + strconv.Itoa(partition)
}

// ParsePartitionName is the inverse of PartitionName.
func ParsePartitionName(name string) (brokerID, partition int, err error) {
	for i := len(name) - 1; i > 0; i-- {
		if name[i] != '-' {
			continue
		}
		b, err1 := strconv.Atoi(name[:i])
		p, err2 := strconv.Atoi(name[i+1:])
		if err1 != nil || err2 != nil || b < 0 || p < 0 {
			break
		}
		return b, p, nil
	}
	return 0, 0, &pathError{what: "partition name", input: name}
}

// parent is the parent of an absolute path ("/" for a top-level node).
func parent(p string) string { return path.Dir(p) }

type pathError struct{ what, input string }

func (e *pathError) Error() string { return "zk: bad " + e.what + " " + strconv.Quote(e.input) }
func (e *pathError) Unwrap() error { return ErrBadPath }

// The nodes replication adds (docs/PROTOCOL.md §10). A replicated topic's node /brokers/topics/<topic> is
// persistent and holds its replica assignment as JSON, where a 0.7 topic's node is empty and has one
// ephemeral child per broker; the two kinds are told apart by that data.
const (
	// ControllerPath is the ephemeral node of the broker that is the controller.
	ControllerPath = "/controller"
	// ControllerEpochPath holds the controller epoch, a decimal number that grows by one at each election.
	ControllerEpochPath = "/controller_epoch"
	// PreferredReplicaElectionPath asks the controller to move leadership back to the preferred replicas.
	PreferredReplicaElectionPath = "/admin/preferred_replica_election"
)

// TopicPartitionsPath is /brokers/topics/<topic>/partitions, the parent of a replicated topic's partitions.
func TopicPartitionsPath(topic string) string { return BrokerTopicPath(topic) + "/partitions" }

// PartitionStatePath is /brokers/topics/<topic>/partitions/<p>/state: leader, leader epoch, ISR.
func PartitionStatePath(topic string, partition int) string {
	return TopicPartitionsPath(topic) + "/" + strconv.Itoa(partition) + "/state"
}

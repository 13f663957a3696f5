// Package zk keeps Kafka's registries in ZooKeeper, as §3.2 of the paper describes: "Kafka uses Zookeeper for
// the following tasks: (1) detecting the addition and the removal of brokers and consumers, (2) triggering a
// rebalance process in each consumer when the above events happen, and (3) maintaining the consumption
// relationship and keeping track of the consumed offset of each partition."
//
// The layout is 0.7's (docs/PROTOCOL.md §5, see paths.go). A broker announces itself with an ephemeral node under
// /brokers/ids and one ephemeral node per topic it serves under /brokers/topics/<topic> (BrokerRegistry). A
// producer reads those two registries and watches them to learn where a topic's partitions are (Discovery).
// Consumers keep their group membership, partition ownership and offsets under /consumers/<group> (used by
// kafka/consumer's group consumer through Client).
//
// Ephemeral nodes vanish with the session that created them, which is how a dead broker or consumer leaves the
// registries; the other side of that coin is that a live process whose session expired (a long pause, a network
// cut) must re-create its nodes once the client library opens a new session — Client.NewSessions signals that.
package zk

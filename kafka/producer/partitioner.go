package producer

import (
	"fmt"
	"math/rand/v2"
	"slices"
)

// Partitioner chooses one of numPartitions partitions for a message (docs/PROTOCOL.md
// §7): without a key any partition will do, with a key the same key always
// lands in the same partition, so its messages stay in order (paper §3.3:
// order is kept within a partition).
type Partitioner interface {
	// Partition returns an index in [0, numPartitions). numPartitions > 0.
	Partition(key []byte, numPartitions int) int
}

// DefaultPartitioner is random without a key and a hash of the key modulo
// the partition count with a key.
type DefaultPartitioner struct{}

// Partition implements Partitioner. The FNV-1a hash is unsigned, so the
// result is never negative (0.7 had to take abs of Java's hashCode).
func (DefaultPartitioner) Partition(key []byte, numPartitions int) int {
	if numPartitions <= 1 {
		return 0
	}
	if key == nil {
		return rand.IntN(numPartitions)
	}
	return int(HashKey(key) % uint32(numPartitions))
}

// HashKey is the 32-bit FNV-1a hash of key, computed without allocating.
func HashKey(key []byte) uint32 {
	h := uint32(2166136261)
	for _, b := range key {
		h ^= uint32(b)
		h *= 16777619
	}
	return h
}

// Partition is one place a message set can go: a broker and a partition
// on it. Part -1 lets the broker pick one of its partitions at random
// (0.7's broker.list mode).
type Partition struct {
	BrokerID int
	Part     int32
}

func (p Partition) String() string { return fmt.Sprintf("%d-%d", p.BrokerID, p.Part) }

// Discovery tells the producer which brokers exist and which partitions a
// topic has. The static broker.list is one implementation; the ZooKeeper
// registry of paper §3.2 is another (it watches /brokers/ids and
// /brokers/topics/<topic>).
type Discovery interface {
	// Partitions returns the topic's partitions sorted by broker id, then
	// partition number (numerically). The slice is shared: do not modify it.
	Partitions(topic string) ([]Partition, error)
	// Broker returns the broker with that id, if it is known and alive.
	Broker(id int) (Broker, bool)
	// Close stops any watching.
	Close() error
}

// staticDiscovery is broker.list: every topic has one partition "-1" per
// listed broker, and each broker picks the real partition itself.
type staticDiscovery struct {
	brokers []Broker    // sorted by id
	parts   []Partition // one {id, -1} per broker
}

func newStaticDiscovery(list string) (*staticDiscovery, error) {
	brokers, err := ParseBrokerList(list)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(brokers, func(a, b Broker) int { return a.ID - b.ID })
	d := &staticDiscovery{brokers: brokers}
	for _, b := range brokers {
		d.parts = append(d.parts, Partition{BrokerID: b.ID, Part: -1})
	}
	return d, nil
}

func (d *staticDiscovery) Partitions(string) ([]Partition, error) { return d.parts, nil }

func (d *staticDiscovery) Broker(id int) (Broker, bool) {
	for _, b := range d.brokers {
		if b.ID == id {
			return b, true
		}
	}
	return Broker{}, false
}

func (d *staticDiscovery) Close() error { return nil }

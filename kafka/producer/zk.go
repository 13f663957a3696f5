package producer

import (
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// DefaultZKSessionTimeout is the session timeout of the producer's ZooKeeper discovery (0.7's
// zk.sessiontimeout.ms default).
const DefaultZKSessionTimeout = 6 * time.Second

func init() {
	newZKDiscovery = func(cfg Config) (Discovery, error) {
		return NewZKDiscovery(cfg.ZkConnect, DefaultZKSessionTimeout)
	}
}

// ZKDiscovery is the Discovery of zk.connect (paper §3.2, docs/PROTOCOL.md §7): the brokers are the live nodes under
// /brokers/ids and a topic's partitions the union of /brokers/topics/<topic>/<brokerid> counts, sorted by
// broker id then partition number, both kept current by ZooKeeper watches. A topic no broker has registered
// yet gets partition 0 of every live broker, so its first messages create it there.
//
// With a key, DefaultPartitioner takes the hash of the key modulo the total number of partitions over every
// broker, and the message goes to that entry's broker with that broker's own partition number: a key stays on
// one partition for as long as the set of partitions does not change.
type ZKDiscovery struct {
	d *zk.Discovery

	mu    sync.Mutex
	cache map[string]zkParts
}

// zkParts remembers the conversion of one zk.Discovery slice: the registry hands out a new slice on every
// change, so an unchanged slice means the converted one is still right and Partitions allocates nothing.
type zkParts struct {
	src []zk.Partition
	out []Partition
}

// NewZKDiscovery connects to ZooKeeper (connect may end with a /chroot) and reads the broker registry.
func NewZKDiscovery(connect string, sessionTimeout time.Duration) (*ZKDiscovery, error) {
	d, err := zk.NewDiscovery(connect, sessionTimeout)
	if err != nil {
		return nil, err
	}
	return &ZKDiscovery{d: d, cache: map[string]zkParts{}}, nil
}

// Partitions implements Discovery.
func (z *ZKDiscovery) Partitions(topic string) ([]Partition, error) {
	src, err := z.d.Partitions(topic)
	if err != nil {
		return nil, err
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if c, ok := z.cache[topic]; ok && sameSlice(c.src, src) {
		return c.out, nil
	}
	out := make([]Partition, len(src))
	for i, p := range src {
		out[i] = Partition{BrokerID: p.BrokerID, Part: int32(p.Partition)}
	}
	z.cache[topic] = zkParts{src: src, out: out}
	return out, nil
}

func sameSlice(a, b []zk.Partition) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Broker implements Discovery.
func (z *ZKDiscovery) Broker(id int) (Broker, bool) {
	b, ok := z.d.Broker(id)
	if !ok {
		return Broker{}, false
	}
	return Broker{ID: b.ID, Host: b.Host, Port: b.Port}, true
}

// Close stops watching and ends the ZooKeeper session.
func (z *ZKDiscovery) Close() error { return z.d.Close() }

package zk

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// Broker is one live broker as /brokers/ids/<id> describes it.
type Broker struct {
	ID      int
	Creator string // "<host>-<ms timestamp>"
	Host    string
	Port    int
	// Epoch is the broker epoch: the zxid of the transaction that created this registration node (its
	// czxid). Every registration, a restart's or a new session's, gets a larger one, so a changed epoch
	// means the broker died (or lost its session) and came back. 0: not read (ParseBroker alone).
	Epoch int64
}

// Addr is "host:port".
func (b Broker) Addr() string { return net.JoinHostPort(b.Host, strconv.Itoa(b.Port)) }

// registration08 is Kafka 0.8's /brokers/ids/<id>, in its field order.
type registration08 struct {
	JMXPort   int    `json:"jmx_port"`
	Timestamp string `json:"timestamp"`
	Host      string `json:"host"`
	Version   int    `json:"version"`
	Port      int    `json:"port"`
}

// ParseBroker parses the data of /brokers/ids/<id>: 0.7's "<creator>:<host>:<port>", where the creator is
// "<host>-<ms>", so the host and port are the last two fields; or 0.8's JSON (BrokerRegistry.UseJSON), whose
// creator is then "<host>-<timestamp>".
func ParseBroker(id int, data string) (Broker, error) {
	if strings.HasPrefix(data, "{") {
		var r registration08
		if err := json.Unmarshal([]byte(data), &r); err != nil || r.Host == "" || r.Port <= 0 || r.Port > 65535 {
			return Broker{}, fmt.Errorf("%w: broker %d: %q", ErrBadRegistration, id, data)
		}
		return Broker{ID: id, Creator: r.Host + "-" + r.Timestamp, Host: r.Host, Port: r.Port}, nil
	}
	i := strings.LastIndexByte(data, ':')
	if i < 0 {
		return Broker{}, fmt.Errorf("%w: broker %d: %q", ErrBadRegistration, id, data)
	}
	port, err := strconv.Atoi(data[i+1:])
	j := strings.LastIndexByte(data[:i], ':')
	if err != nil || port <= 0 || port > 65535 || j < 0 || j+1 == i {
		return Broker{}, fmt.Errorf("%w: broker %d: %q", ErrBadRegistration, id, data)
	}
	return Broker{ID: id, Creator: data[:j], Host: data[j+1 : i], Port: port}, nil
}

// Partition names one partition of a topic: a broker and the partition's number on that broker (docs/PROTOCOL.md §5).
type Partition struct {
	BrokerID  int
	Partition int
}

// Name is the registry name "<brokerid>-<partition>".
func (p Partition) Name() string { return PartitionName(p.BrokerID, p.Partition) }

func comparePartitions(a, b Partition) int {
	if a.BrokerID != b.BrokerID {
		return a.BrokerID - b.BrokerID
	}
	return a.Partition - b.Partition
}

// Discovery is a producer's view of the broker and topic registries (docs/PROTOCOL.md §7): it reads /brokers/ids and
// /brokers/topics/<topic>, keeps them cached and re-reads them whenever a watch fires, so Partitions costs a
// map lookup.
type Discovery struct {
	c     *Client
	owned bool
	log   *slog.Logger

	mu       sync.RWMutex
	brokers  map[int]Broker
	topics   map[string][]Partition // registered partitions, sorted; absent key: not watched yet
	regs     map[string]map[int]int // topic → broker → partition count
	watching map[string]bool
	closed   bool
	changed  chan struct{} // closed and replaced on every change
	stop     chan struct{}
	wg       sync.WaitGroup
}

// NewDiscovery opens its own session.
func NewDiscovery(connect string, sessionTimeout time.Duration) (*Discovery, error) {
	c, err := Connect(connect, sessionTimeout)
	if err != nil {
		return nil, err
	}
	d, err := NewDiscoveryClient(c)
	if err != nil {
		c.Close()
		return nil, err
	}
	d.owned = true
	return d, nil
}

// NewDiscoveryClient uses an existing session; Close then leaves the session open.
func NewDiscoveryClient(c *Client) (*Discovery, error) {
	d := &Discovery{c: c, log: c.log, brokers: map[int]Broker{}, topics: map[string][]Partition{},
		regs: map[string]map[int]int{}, watching: map[string]bool{}, changed: make(chan struct{}), stop: make(chan struct{})}
	if err := c.EnsurePath(BrokerIDsPath); err != nil {
		return nil, err
	}
	if err := c.EnsurePath(BrokerTopicsPath); err != nil {
		return nil, err
	}
	w, err := d.readBrokers()
	if err != nil {
		return nil, err
	}
	d.wg.Add(1)
	go d.watch(w, d.readBrokers)
	return d, nil
}

// Brokers returns the live brokers sorted by id.
func (d *Discovery) Brokers() []Broker {
	d.mu.RLock()
	defer d.mu.RUnlock()
	out := make([]Broker, 0, len(d.brokers))
	for _, b := range d.brokers {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b Broker) int { return a.ID - b.ID })
	return out
}

// Broker returns the live broker with that id.
func (d *Discovery) Broker(id int) (Broker, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	b, ok := d.brokers[id]
	return b, ok
}

// Partitions returns the topic's partitions on live brokers, sorted by broker id then partition number
// (numerically). A topic no broker has registered yet gets partition 0 of every live broker, so the first
// message creates it there. The slice is shared: do not modify it. The first call for a topic reads ZooKeeper
// and starts watching the topic.
func (d *Discovery) Partitions(topic string) ([]Partition, error) {
	d.mu.RLock()
	ps, ok := d.topics[topic]
	d.mu.RUnlock()
	if ok {
		return ps, nil
	}
	if err := ValidTopic(topic); err != nil {
		return nil, err
	}
	w, err := d.readTopic(topic)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrClosed
	}
	ps = d.topics[topic]
	if d.watching[topic] {
		d.mu.Unlock() // a concurrent first call won: its watch covers this read too
		return ps, nil
	}
	d.watching[topic] = true
	d.wg.Add(1)
	d.mu.Unlock()
	go d.watch(w, func() (<-chan gozk.Event, error) { return d.readTopic(topic) })
	return ps, nil
}

// Changed returns a channel closed at the next change of any watched registry.
func (d *Discovery) Changed() <-chan struct{} {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return d.changed
}

// ValidTopic refuses a topic name that cannot be a registry node (and so a
// log directory); the rule is package topic's.
func ValidTopic(name string) error {
	if err := topic.Validate(name); err != nil {
		return fmt.Errorf("%w: %w", ErrBadPath, err)
	}
	return nil
}

// watch re-reads a registry each time its watch fires (or is lost with an expired session) until Close.
func (d *Discovery) watch(w <-chan gozk.Event, read func() (<-chan gozk.Event, error)) {
	defer d.wg.Done()
	backoff := 100 * time.Millisecond
	for {
		select {
		case <-d.stop:
			return
		case <-w:
		}
		for {
			var err error
			if w, err = read(); err == nil {
				backoff = 100 * time.Millisecond
				break
			}
			d.log.Warn("discovery re-read failed", "err", err, "retry", backoff)
			select {
			case <-d.stop:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
		}
	}
}

func (d *Discovery) readBrokers() (<-chan gozk.Event, error) {
	ids, w, err := d.c.ChildrenW(BrokerIDsPath)
	if err != nil {
		return nil, err
	}
	brokers, err := ReadBrokers(d.c, ids, d.log)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.brokers = brokers
	d.rebuildLocked()
	d.mu.Unlock()
	return w, nil
}

func (d *Discovery) readTopic(topic string) (<-chan gozk.Event, error) {
	p := BrokerTopicPath(topic)
	ids, w, err := d.c.ChildrenW(p)
	if errors.Is(err, ErrNoNode) {
		// Not registered yet: watch for its creation.
		var ok bool
		if ok, w, err = d.c.ExistsW(p); err == nil && ok {
			return d.readTopic(topic) // created in between
		}
	}
	if err != nil {
		return nil, err
	}
	regs, err := ReadTopicRegistrations(d.c, topic, ids, d.log)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	d.regs[topic] = regs
	d.rebuildLocked()
	d.mu.Unlock()
	return w, nil
}

// rebuildLocked recomputes every watched topic's partition list from the registrations and the live brokers.
func (d *Discovery) rebuildLocked() {
	for topic, regs := range d.regs {
		var ps []Partition
		for id, n := range regs {
			if _, live := d.brokers[id]; !live {
				continue
			}
			for p := range n {
				ps = append(ps, Partition{BrokerID: id, Partition: p})
			}
		}
		if len(ps) == 0 { // docs/PROTOCOL.md §7: partition 0 of every live broker
			for id := range d.brokers {
				ps = append(ps, Partition{BrokerID: id})
			}
		}
		slices.SortFunc(ps, comparePartitions)
		d.topics[topic] = ps
	}
	close(d.changed)
	d.changed = make(chan struct{})
}

// Close stops watching; it closes the session only if NewDiscovery opened it.
func (d *Discovery) Close() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	close(d.stop)
	d.wg.Wait()
	if d.owned {
		return d.c.Close()
	}
	return nil
}

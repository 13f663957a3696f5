package producer

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// The producer's side of replication (docs/PROTOCOL.md §10). A replicated topic's partitions are sent to
// their leaders, which a METADATA request names; a topic METADATA does not know (one of 0.7's, or one a
// produce will create) goes the 0.7 way of sync.go. request.required.acks decides whether and when the
// leader answers: 0 never (the paper's §5 producer), 1 once it has the set, -1 once every in-sync replica
// has it (committed). A produce to a broker that no longer leads the partition gets "not leader for
// partition": the producer asks for the metadata again, waits retry.backoff.ms and sends again, at most
// message.send.max.retries times. A retry after a timeout may write a set twice.
//
// With broker.list and acks 0 (0.7's exact mode) the producer never asks for metadata, so its bytes on the
// wire are 0.7's; metadata.broker.list (0.8's name), zk.connect, or acks 1 or -1 turn the lookup on.

// ErrNotAcknowledged: a set was not acknowledged after message.send.max.retries retries.
var ErrNotAcknowledged = errors.New("producer: not acknowledged")

// metadataCache holds what METADATA said of each topic the producer sends to.
type metadataCache struct {
	cfg       *Config
	bootstrap func() []Broker // brokers to ask

	mu     sync.Mutex
	topics map[string]*topicMeta
}

// topicMeta is one topic's metadata: nil leaders for a topic that is not replicated.
type topicMeta struct {
	replicated bool
	leaders    []int32 // per partition; -1 none
	brokers    map[int32]Broker
	fetched    time.Time
}

func newMetadataCache(cfg *Config, bootstrap func() []Broker) *metadataCache {
	return &metadataCache{cfg: cfg, bootstrap: bootstrap, topics: map[string]*topicMeta{}}
}

// get returns the topic's metadata, asking a broker when there is none or it is older than
// topic.metadata.refresh.interval.ms.
func (mc *metadataCache) get(topic string) (*topicMeta, error) {
	mc.mu.Lock()
	tm := mc.topics[topic]
	mc.mu.Unlock()
	if tm != nil && (mc.cfg.MetadataRefreshInterval <= 0 || time.Since(tm.fetched) < mc.cfg.MetadataRefreshInterval) {
		return tm, nil
	}
	return mc.refresh(topic)
}

// refresh asks the bootstrap brokers, in random order, until one answers.
func (mc *metadataCache) refresh(topic string) (*topicMeta, error) {
	brokers := mc.bootstrap()
	if len(brokers) == 0 {
		return nil, fmt.Errorf("producer: metadata of %q: %w", topic, ErrNoBrokers)
	}
	var last error
	for _, i := range rand.Perm(len(brokers)) {
		m, err := askMetadata(brokers[i].Addr(), mc.cfg.RequestTimeout, topic)
		if err != nil {
			last = err
			continue
		}
		tm := &topicMeta{brokers: map[int32]Broker{}, fetched: time.Now()}
		for _, b := range m.Brokers {
			tm.brokers[b.ID] = Broker{ID: int(b.ID), Host: b.Host, Port: int(b.Port)}
		}
		for _, t := range m.Topics {
			if t.Topic != topic || t.Error == protocol.ErrUnknownTopicOrPartition {
				continue
			}
			tm.replicated = true
			tm.leaders = make([]int32, len(t.Partitions))
			for _, p := range t.Partitions {
				if int(p.Partition) < len(tm.leaders) {
					tm.leaders[p.Partition] = p.Leader
				}
			}
		}
		mc.mu.Lock()
		mc.topics[topic] = tm
		mc.mu.Unlock()
		return tm, nil
	}
	return nil, fmt.Errorf("producer: metadata of %q from %d brokers: %w", topic, len(brokers), last)
}

// askMetadata sends one METADATA request on a connection of its own (it is rare: once per topic, and after
// errors).
func askMetadata(addr string, timeout time.Duration, topics ...string) (protocol.MetadataResponse, error) {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return protocol.MetadataResponse{}, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(protocol.MetadataRequest{Topics: topics}.AppendTo(nil)); err != nil {
		return protocol.MetadataResponse{}, err
	}
	code, payload, _, err := protocol.ReadResponse(c, nil)
	if err != nil {
		return protocol.MetadataResponse{}, fmt.Errorf("metadata from %s: %w", addr, err)
	}
	if code != protocol.ErrNone {
		return protocol.MetadataResponse{}, fmt.Errorf("metadata from %s: %w", addr, code)
	}
	return protocol.DecodeMetadataResponse(payload)
}

// leaderConns holds one connection per leader address.
type leaderConns struct {
	cfg    *Config
	mu     sync.Mutex
	conns  map[string]*brokerConn
	closed bool
}

func (lc *leaderConns) get(b Broker) (*brokerConn, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if lc.closed {
		return nil, ErrClosed
	}
	if lc.conns == nil {
		lc.conns = map[string]*brokerConn{}
	}
	c := lc.conns[b.Addr()]
	if c == nil {
		c = &brokerConn{broker: b, cfg: lc.cfg}
		lc.conns[b.Addr()] = c
	}
	return c, nil
}

// all returns the leader connections opened so far.
func (lc *leaderConns) all() []*brokerConn {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	out := make([]*brokerConn, 0, len(lc.conns))
	for _, c := range lc.conns {
		out = append(out, c)
	}
	return out
}

func (lc *leaderConns) close() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	lc.closed = true
	for _, c := range lc.conns {
		c.shut()
	}
}

// replicated returns the topic's metadata if it is replicated, nil otherwise (or when metadata is off).
func (p *SyncProducer) replicated(topic string) (*topicMeta, error) {
	if p.meta == nil {
		return nil, nil
	}
	tm, err := p.meta.get(topic)
	if err != nil || !tm.replicated {
		return nil, err
	}
	return tm, nil
}

// sendReplicated sends one set to partition part of a replicated topic (part -1: the partitioner picks,
// by key if there is one) and, with acks, waits for the answer, retrying on the errors that mean "the
// leader moved" after looking it up again.
func (p *SyncProducer) sendReplicated(tm *topicMeta, topic string, part int32, key []byte, msgs [][]byte, set []byte) error {
	if part < 0 {
		part = int32(p.partitioner.Partition(key, len(tm.leaders)))
	} else if int(part) >= len(tm.leaders) {
		return fmt.Errorf("producer: topic %q has partitions 0..%d, not %d: %w", topic, len(tm.leaders)-1, part, ErrUnknownPartition)
	}
	for _, m := range msgs {
		if p.cfg.MaxMessageSize > 0 && len(m) > p.cfg.MaxMessageSize {
			return fmt.Errorf("producer: topic %q: message of %d bytes > %d: %w", topic, len(m), p.cfg.MaxMessageSize, ErrMessageTooLarge)
		}
	}
	owned := msgs != nil || p.pipelined() // set is ours: encoded here, or copied to be kept until its answer
	if msgs != nil {
		set = p.encodeSet(topic, msgs)
	} else if owned {
		set = append(p.sets.get(len(set)), set...) // the caller may reuse its own
	}
	err := p.sendSetReplicated(tm, topic, part, set)
	if owned && !p.pipelined() {
		p.sets.put(set) // sent (and retried) already; when pipelined, its answer gives it back
	}
	return err
}

// encodeSet builds the message set of msgs in the configured format (one compressed wrapper when the topic
// is compressed).
func (p *SyncProducer) encodeSet(topic string, msgs [][]byte) []byte {
	n := 0
	for _, m := range msgs {
		n += message.Size(p.cfg.Magic, len(m))
	}
	set := p.sets.get(n) // the exact size at once, not a slice grown (and copied) as it fills; recycled
	for _, m := range msgs {
		set = message.Append(set, p.cfg.Magic, m)
	}
	if p.cfg.compresses(topic) {
		if w, err := message.Compress(p.cfg.Compression, set); err == nil {
			p.sets.put(set)
			return w
		}
	}
	return set
}

func (p *SyncProducer) sendSetReplicated(tm *topicMeta, topic string, part int32, set []byte) error {
	if p.pipelined() {
		return p.sendPipelined(tm, topic, part, set) // inflight.go
	}
	return p.sendAttempts(tm, topic, part, set, 0, nil)
}

// retrySet sends a set again from attempt from (from > 0: the leader is looked up first), after last.
func (p *SyncProducer) retrySet(topic string, part int32, set []byte, from int, last error) error {
	return p.sendAttempts(nil, topic, part, set, from, last)
}

// sendAttempts sends one set and waits for its answer, attempts from..message.send.max.retries; every
// attempt but the first (attempt 0) looks the leader up again after retry.backoff.ms.
func (p *SyncProducer) sendAttempts(tm *topicMeta, topic string, part int32, set []byte, from int, last error) error {
	for attempt := from; attempt <= p.cfg.MessageSendMaxRetries; attempt++ {
		if attempt > 0 {
			time.Sleep(p.cfg.RetryBackoff)
			var err error
			if tm, err = p.meta.refresh(topic); err != nil {
				last = err
				continue
			}
			if !tm.replicated || int(part) >= len(tm.leaders) {
				return fmt.Errorf("producer: topic %q partition %d is no longer there: %w", topic, part, ErrUnknownPartition)
			}
		}
		leader := tm.leaders[part]
		b, ok := tm.brokers[leader]
		if leader < 0 || !ok {
			last = fmt.Errorf("producer: %s-%d: %w", topic, part, protocol.ErrLeaderNotAvailable)
			continue
		}
		code, err := p.ackedSend(b, topic, part, set)
		if err == nil && code == protocol.ErrNone {
			return nil
		}
		if err == nil {
			last = fmt.Errorf("producer: %s-%d on broker %d: %w", topic, part, leader, code)
			if !code.Retriable() {
				return last
			}
		} else {
			last = err
		}
	}
	return fmt.Errorf("%w: %s-%d after %d retries (message.send.max.retries): %w", ErrNotAcknowledged, topic, part, p.cfg.MessageSendMaxRetries, last)
}

// ackedSend writes one ACKED_PRODUCE and, unless acks is 0, reads its answer.
func (p *SyncProducer) ackedSend(b Broker, topic string, part int32, set []byte) (protocol.ErrorCode, error) {
	c, err := p.leaders.get(b)
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	req := protocol.AckedProduceRequest{Acks: p.cfg.RequiredAcks, TimeoutMs: int32(p.cfg.RequestTimeout.Milliseconds()),
		Produces: []protocol.ProduceRequest{{Topic: topic, Partition: part, Messages: set}}}
	c.buf = req.AppendTo(c.buf[:0])
	if err := c.writeLocked(); err != nil {
		return 0, err
	}
	if p.cfg.RequiredAcks == protocol.AcksNone {
		return protocol.ErrNone, nil
	}
	return c.readAnswerLocked(p.cfg.RequestTimeout)
}

// bootstrapBrokers is where the producer asks for metadata: metadata.broker.list, else the brokers its
// discovery knows (broker.list or ZooKeeper's registry).
func (p *SyncProducer) bootstrapBrokers() []Broker {
	if p.cfg.MetadataBrokerList != "" {
		bs, _ := ParseBrokerList(p.cfg.MetadataBrokerList)
		return bs
	}
	if s, ok := p.disc.(*staticDiscovery); ok {
		return s.brokers
	}
	if z, ok := p.disc.(*ZKDiscovery); ok {
		var out []Broker
		for _, b := range z.d.Brokers() {
			out = append(out, Broker{ID: b.ID, Host: b.Host, Port: b.Port})
		}
		return out
	}
	return nil
}

// usesMetadata says whether the producer asks for metadata (see the top of this file).
func (c Config) usesMetadata() bool {
	return c.MetadataBrokerList != "" || c.ZkConnect != "" || c.RequiredAcks != protocol.AcksNone
}

// Package producer publishes messages to Kafka brokers (paper §3, docs/PROTOCOL.md §7).
//
// The paper's producer is deliberately simple: it batches messages into one
// message set per request, writes the request and does not wait for any
// acknowledgement (paper §5: "the Kafka producer currently doesn't wait for
// acknowledgements from the broker"). The bytes it builds — [4-byte length,
// magic, CRC-32, payload] per message, back to back — are exactly what the
// broker appends to its segment file and later sends to consumers (§3.1:
// nothing is re-encoded on the way through).
//
// SyncProducer keeps one TCP connection per broker and writes one PRODUCE
// request per Send, built in a reused buffer and handed to the kernel with a
// single write, so a steady-state Send allocates nothing. Where a message
// goes is decided by a Discovery (the static broker.list here; ZooKeeper's
// registry of §3.2 elsewhere) and a Partitioner (random, or by key).
package producer

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// newZKDiscovery builds the ZooKeeper-based Discovery for zk.connect. It is
// nil until the ZooKeeper discovery file of this package sets it in init.
var newZKDiscovery func(cfg Config) (Discovery, error)

// SyncProducer sends each batch straight away on the caller's goroutine.
// It is safe for concurrent use; sends to one broker are serialised on
// that broker's connection.
type SyncProducer struct {
	cfg         Config
	disc        Discovery
	partitioner Partitioner
	pool        *pool

	topics topicCache // names that passed validation (topics.go)
	routes routeCache // where sends went, where that cannot change (route.go)

	meta    *metadataCache // nil in 0.7's exact mode (replicated.go)
	leaders *leaderConns   // connections to leaders found by metadata
	pipeMu  sync.Mutex     // held by every acknowledged send while MaxInFlight > 1 (inflight.go)
	sets    setPool        // encoded sets to replicated topics, recycled (sets.go)
}

// NewSync returns a producer for cfg: broker.list if set, else zk.connect.
// Connections are opened on first use.
func NewSync(cfg Config) (*SyncProducer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var disc Discovery
	var err error
	switch {
	case cfg.BrokerList != "":
		disc, err = newStaticDiscovery(cfg.BrokerList)
	case cfg.ZkConnect == "" && cfg.MetadataBrokerList != "":
		disc, err = newStaticDiscovery(cfg.MetadataBrokerList)
	case newZKDiscovery != nil:
		disc, err = newZKDiscovery(cfg)
	default:
		err = fmt.Errorf("producer: zk.connect=%q given but ZooKeeper discovery is not built in: %w", cfg.ZkConnect, ErrBadConfig)
	}
	if err != nil {
		return nil, err
	}
	return NewSyncWithDiscovery(cfg, disc, nil), nil
}

// NewSyncWithDiscovery returns a producer that asks disc where to send and
// p (DefaultPartitioner if nil) which partition to pick.
func NewSyncWithDiscovery(cfg Config, disc Discovery, p Partitioner) *SyncProducer {
	if p == nil {
		p = DefaultPartitioner{}
	}
	sp := &SyncProducer{cfg: cfg, disc: disc, partitioner: p, pool: newPool(cfg)}
	sp.leaders = &leaderConns{cfg: &sp.cfg}
	if cfg.usesMetadata() {
		sp.meta = newMetadataCache(&sp.cfg, sp.bootstrapBrokers)
	}
	return sp
}

// Send writes msgs as one message set to one PRODUCE request. Partition -1
// lets the producer pick a broker at random and that broker pick the
// partition; an explicit partition goes to the lowest-id broker that has it
// (with broker.list: the lowest-id broker), so its order is kept.
func (p *SyncProducer) Send(topic string, partition int32, msgs ...[]byte) error {
	if r := p.routes.find(topic, partition); r != nil {
		// The short way (route.go), written out here rather than called,
		// so that few of our frames are under the write(2): each ends in a
		// return made after the kernel's deep call chain has replaced the
		// processor's predictions of where returns go.
		if err := p.checkSizes(topic, msgs); err != nil {
			return err
		}
		c := r.c
		c.mu.Lock()
		c.frameLocked(topic, r.dst.Part, p.cfg.Magic, msgs)
		err := c.writeLocked()
		c.mu.Unlock()
		return err
	}
	return p.sendLong(topic, partition, msgs)
}

// sendLong is Send without a remembered route: the topic check, the
// partition's choice and the connection's lookup come first.
func (p *SyncProducer) sendLong(topic string, partition int32, msgs [][]byte) error {
	if tm, err := p.replicatedChecked(topic); tm != nil || err != nil {
		if err != nil {
			return err
		}
		return p.sendReplicated(tm, topic, partition, nil, msgs, nil)
	}
	dst, err := p.pick(topic, partition, nil)
	if err != nil {
		return err
	}
	if p.routes.room() && p.routable(partition) && !p.cfg.compresses(topic) {
		c, err := p.pool.get(dst.BrokerID, p.disc)
		if err != nil {
			return err
		}
		p.routes.add(route{topic: topic, partition: partition, dst: dst, c: c})
	}
	return p.send(dst, topic, msgs, nil)
}

// SendKeyed sends msgs to the partition the Partitioner picks for key: the
// same key always reaches the same partition while the partitions stay.
func (p *SyncProducer) SendKeyed(topic string, key []byte, msgs ...[]byte) error {
	if tm, err := p.replicatedChecked(topic); tm != nil || err != nil {
		if err != nil {
			return err
		}
		return p.sendReplicated(tm, topic, -1, key, msgs, nil)
	}
	dst, err := p.pick(topic, -1, key)
	if err != nil {
		return err
	}
	return p.send(dst, topic, msgs, nil)
}

// SendSet sends an already encoded message set as is (for instance a
// compressed wrapper, or a deliberately corrupt set in a test).
func (p *SyncProducer) SendSet(topic string, partition int32, set []byte) error {
	if tm, err := p.replicatedChecked(topic); tm != nil || err != nil {
		if err != nil {
			return err
		}
		return p.sendReplicated(tm, topic, partition, nil, nil, set)
	}
	dst, err := p.pick(topic, partition, nil)
	if err != nil {
		return err
	}
	return p.send(dst, topic, nil, set)
}

// SendTo sends msgs to one partition of one broker, bypassing the
// Partitioner (part -1: the broker picks).
func (p *SyncProducer) SendTo(brokerID int, topic string, part int32, msgs ...[]byte) error {
	if err := p.checkTopic(topic); err != nil {
		return err
	}
	return p.send(Partition{BrokerID: brokerID, Part: part}, topic, msgs, nil)
}

// MultiSend writes one MULTIPRODUCE request holding every produce, each
// with an encoded message set, to one broker (docs/PROTOCOL.md §4; what the async
// producer sends).
func (p *SyncProducer) MultiSend(brokerID int, produces []protocol.ProduceRequest) error {
	for i := range produces {
		if err := p.checkTopic(produces[i].Topic); err != nil {
			return err
		}
	}
	c, err := p.pool.get(brokerID, p.disc)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = protocol.MultiProduceRequest{Produces: produces}.AppendTo(c.buf[:0])
	return c.writeLocked()
}

// Discovery returns the producer's discovery (for tools that list brokers).
func (p *SyncProducer) Discovery() Discovery { return p.disc }

// Close reads the answers still in flight (Flush), then closes every connection and the discovery; it
// returns the errors of sets that were not acknowledged.
func (p *SyncProducer) Close() error {
	ferr := p.Flush()
	p.pool.close()
	p.leaders.close()
	return errors.Join(ferr, p.disc.Close())
}

// replicatedChecked is replicated after the topic name check.
func (p *SyncProducer) replicatedChecked(topic string) (*topicMeta, error) {
	if p.meta == nil {
		return nil, nil
	}
	if err := p.checkTopic(topic); err != nil {
		return nil, err
	}
	return p.replicated(topic)
}

// pick chooses where a batch goes.
func (p *SyncProducer) pick(topic string, partition int32, key []byte) (Partition, error) {
	if err := p.checkTopic(topic); err != nil {
		return Partition{}, err
	}
	parts, err := p.disc.Partitions(topic)
	if err != nil {
		return Partition{}, err
	}
	if len(parts) == 0 {
		return Partition{}, fmt.Errorf("producer: topic %q: %w", topic, ErrNoBrokers)
	}
	if partition >= 0 {
		for _, pt := range parts {
			if pt.Part == partition || pt.Part == -1 {
				return Partition{BrokerID: pt.BrokerID, Part: partition}, nil
			}
		}
		return Partition{}, fmt.Errorf("producer: topic %q partition %d: %w", topic, partition, ErrUnknownPartition)
	}
	if len(parts) == 1 {
		return parts[0], nil // the only answer a Partitioner may give
	}
	return parts[p.partitioner.Partition(key, len(parts))], nil
}

// send frames one PRODUCE request (msgs encoded in format cfg.Magic, or
// set as is) in the connection's reused buffer with protocol's encoder and
// writes it once.
func (p *SyncProducer) send(dst Partition, topic string, msgs [][]byte, set []byte) error {
	if err := p.checkSizes(topic, msgs); err != nil {
		return err
	}
	if p.cfg.RequiredAcks != protocol.AcksNone {
		// docs/PROTOCOL.md §10: an acknowledged produce to a 0.7 topic goes to the same broker and partition.
		b, ok := p.disc.Broker(dst.BrokerID)
		if !ok {
			return fmt.Errorf("producer: broker id %d: %w", dst.BrokerID, ErrNoBrokers)
		}
		if msgs != nil {
			set = p.encodeSet(topic, msgs)
		}
		var flushed error
		if p.pipelined() {
			// One set at a time on a connection that may carry pipelined ones: read theirs first.
			p.pipeMu.Lock()
			defer p.pipeMu.Unlock()
			var errs []error
			if failed := p.drainAllLocked(&errs); len(failed) > 0 {
				errs = p.resendLocked(failed, errs)
			}
			flushed = errors.Join(errs...)
		}
		// A retriable code (a storage error the broker may recover from, a timeout) is retried on the same
		// broker and partition, message.send.max.retries times, retry.backoff.ms apart.
		var code protocol.ErrorCode
		var err error
		for attempt := 0; ; attempt++ {
			code, err = p.ackedSend(b, topic, dst.Part, set)
			if err != nil || code == protocol.ErrNone || !code.Retriable() || attempt >= p.cfg.MessageSendMaxRetries {
				break
			}
			time.Sleep(p.cfg.RetryBackoff)
		}
		if err == nil && code != protocol.ErrNone {
			err = fmt.Errorf("producer: %s-%d on broker %d: %w", topic, dst.Part, b.ID, code)
			if code.Retriable() {
				err = fmt.Errorf("%w after %d retries (message.send.max.retries): %w", ErrNotAcknowledged, p.cfg.MessageSendMaxRetries, err)
			}
		}
		return errors.Join(flushed, err)
	}
	c, err := p.pool.get(dst.BrokerID, p.disc)
	if err != nil {
		return err
	}
	c.mu.Lock()
	err = p.sendUnanswered(c, dst, topic, msgs, set)
	c.mu.Unlock()
	return err
}

// checkSizes refuses a message over max.message.size before anything is sent.
func (p *SyncProducer) checkSizes(topic string, msgs [][]byte) error {
	if p.cfg.MaxMessageSize <= 0 {
		return nil
	}
	for _, m := range msgs {
		if len(m) > p.cfg.MaxMessageSize {
			return fmt.Errorf("producer: topic %q: message of %d bytes > %d: %w", topic, len(m), p.cfg.MaxMessageSize, ErrMessageTooLarge)
		}
	}
	return nil
}

// sendUnanswered frames one PRODUCE request that gets no answer in c's
// buffer and writes it, with c.mu held.
func (p *SyncProducer) sendUnanswered(c *brokerConn, dst Partition, topic string, msgs [][]byte, set []byte) error {
	if msgs != nil && p.cfg.compresses(topic) {
		// §3.1/0.7: a compressed batch is one magic-1 wrapper message.
		c.scratch = c.scratch[:0]
		for _, m := range msgs {
			c.scratch = message.Append(c.scratch, p.cfg.Magic, m)
		}
		w, err := message.Compress(p.cfg.Compression, c.scratch)
		if err != nil {
			return fmt.Errorf("producer: compress %d messages for %q: %w", len(msgs), topic, err)
		}
		msgs, set = nil, w
	}
	if set != nil {
		c.buf = protocol.ProduceRequest{Topic: topic, Partition: dst.Part, Messages: set}.AppendTo(c.buf[:0])
		return c.writeLocked()
	}
	c.frameLocked(topic, dst.Part, p.cfg.Magic, msgs)
	return c.writeLocked()
}

// frameLocked frames one PRODUCE request of msgs, encoded in format magic,
// in c.buf. The messages are encoded straight into the request buffer: the
// same bytes as ProduceRequest.AppendTo with the set built beforehand,
// without the second buffer and copy.
func (c *brokerConn) frameLocked(topic string, part int32, magic byte, msgs [][]byte) {
	b, f := protocol.AppendProduceHeader(c.buf[:0], topic, part)
	for _, m := range msgs {
		b = message.Append(b, magic, m)
	}
	c.buf = f.Finish(b)
}

// checkTopic refuses a name the broker would refuse: without a response,
// a refused request would otherwise vanish silently (topics.go).
func (p *SyncProducer) checkTopic(topic string) error { return p.topics.check(topic) }

// ValidateTopic applies the broker's rule for topic names (package topic),
// so a name the broker would refuse fails here, where the caller sees it.
func ValidateTopic(name string) error {
	if err := topic.Validate(name); err != nil {
		return fmt.Errorf("producer: %w", err)
	}
	return nil
}

// brokerConn is one broker's connection and its reused request buffer.
type brokerConn struct {
	mu     sync.Mutex
	broker Broker
	cfg    *Config
	conn   net.Conn
	buf    []byte // the framed request being sent
	// unanswered: the connection carries only requests that get no answer
	// (the pool's), so Nagle's algorithm stays on (Config.NagleDisable).
	unanswered bool
	scratch    []byte // the uncompressed set of a compressed batch
	closed     bool   // its producer was closed: no more dials (shut)

	// Answers to ACKED_PRODUCE (replicated.go).
	r        *bufio.Reader
	rconn    net.Conn // the connection r reads
	rbuf     []byte
	results  []protocol.ProduceResult
	inflight []inflightSet // written, answers not read yet, oldest first (inflight.go)
}

// writeLocked writes c.buf with one write call. A failed write closes the
// connection and is retried once on a fresh one (the broker discards a
// request cut short by a closed connection, so nothing is applied twice).
func (c *brokerConn) writeLocked() error {
	if c.conn == nil {
		return c.dialWriteLocked(2, nil)
	}
	_, err := c.conn.Write(c.buf)
	if err == nil {
		return nil
	}
	c.closeLocked()
	return c.dialWriteLocked(1, err)
}

// dialWriteLocked is writeLocked without an open connection: it dials and
// writes, at most attempts times; err is the failed write before it, if any.
func (c *brokerConn) dialWriteLocked(attempts int, err error) error {
	for attempt := 0; attempt < attempts; attempt++ {
		if c.conn == nil {
			if err = c.dialLocked(); errors.Is(err, ErrClosed) {
				break
			} else if err != nil {
				continue
			}
		}
		if _, err = c.conn.Write(c.buf); err == nil {
			return nil
		}
		c.closeLocked()
	}
	return fmt.Errorf("producer: send %d bytes to broker %d (%s): %w", len(c.buf), c.broker.ID, c.broker.Addr(), err)
}

// dialLocked opens the connection, unless its holder was closed (shut): a
// send that found the connection just before Close then gets ErrClosed
// instead of a connection nobody will close.
func (c *brokerConn) dialLocked() error {
	if c.closed {
		return ErrClosed
	}
	timeout := c.cfg.ConnectTimeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	conn, err := net.DialTimeout("tcp", c.broker.Addr(), timeout)
	if err != nil {
		return err
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		if c.cfg.SocketBufferSize > 0 {
			_ = tc.SetWriteBuffer(c.cfg.SocketBufferSize)
		}
		if c.unanswered && !c.cfg.NagleDisable {
			// Config.NagleDisable: Go sets TCP_NODELAY on every connection; 0.7's producer left Nagle on.
			_ = tc.SetNoDelay(false)
		}
	}
	c.conn = conn
	return nil
}

// shut closes the connection for good, as its producer closes.
func (c *brokerConn) shut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.closeLocked()
}

func (c *brokerConn) closeLocked() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

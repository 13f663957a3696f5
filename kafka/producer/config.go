package producer

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/properties"
)

// Config holds the producer settings under their Kafka 0.7 property names.
type Config struct {
	// BrokerList is broker.list: "id:host:port,id:host:port". With it the
	// producer lets the broker pick the partition (docs/PROTOCOL.md §7).
	BrokerList string
	// ZkConnect is zk.connect: discovery through ZooKeeper's broker registry
	// (paper §3.2). It is read by the ZooKeeper discovery, not by this file.
	ZkConnect string
	// ProducerType is producer.type: "sync" (default) or "async".
	ProducerType string
	// BatchSize is batch.size: messages the async producer gathers before it
	// sends (200).
	BatchSize int
	// QueueSize is queue.size: the async producer's bounded queue (10000).
	QueueSize int
	// QueueTime is queue.time: the longest a message waits in the async
	// queue (5000 ms).
	QueueTime time.Duration
	// EnqueueTimeoutMs is queue.enqueueTimeout.ms: 0 drops when the queue is
	// full, -1 blocks, >0 waits that long.
	EnqueueTimeoutMs int
	// Compression is compression.codec: 0 none, 1 gzip, 2 snappy. A
	// compressed batch travels as one magic-1 wrapper message.
	Compression message.Codec
	// CompressedTopics is compressed.topics: the topics Compression applies
	// to; empty means every topic.
	CompressedTopics []string
	// Magic is message.magic, the format of the messages the producer
	// writes (docs/PROTOCOL.md §2): 1, as Kafka 0.7 writes (10 bytes of
	// overhead; the default), or 0, the paper's format (9 bytes), which the
	// §5 experiments use. Inside a compressed wrapper (always magic 1) the
	// inner messages take this format too. The property is ours: 0.7 had
	// no way to write magic 0.
	Magic byte
	// ConnectTimeout is connect.timeout.ms (5000).
	ConnectTimeout time.Duration
	// SocketBufferSize is buffer.size, the socket send buffer. 0 (our
	// default) keeps the kernel's auto-tuned size, which is faster on
	// loopback than 0.7's fixed 100 KB.
	SocketBufferSize int
	// NagleDisable is socket.nagle.disable (librdkafka's name; false): on
	// a connection that carries only requests that get no answer (acks 0,
	// 0.7's produce), false leaves Nagle's algorithm on, as 0.7's
	// SyncProducer did by not touching TCP_NODELAY (Java's default), so
	// that while one small segment is unacknowledged the kernel gathers the
	// next requests into one segment: a batch-1 producer that writes faster
	// than the broker reads sends segments of many requests, and each
	// write(2) only copies its request. A connection that waits for answers
	// (acks 1 or -1, metadata) always sets TCP_NODELAY, as 0.8's
	// BlockingChannel did.
	NagleDisable bool
	// MaxMessageSize is max.message.size: a larger single message is refused
	// before it is sent (1,000,000).
	MaxMessageSize int
	// Logger is where the async producer reports what it dropped or failed
	// to send, with component=producer (not a property; nil: slog.Default()).
	Logger *slog.Logger

	// Replication (docs/PROTOCOL.md §10), with Kafka 0.8's names and defaults.

	// MetadataBrokerList is metadata.broker.list (0.8's name for the list):
	// brokers to ask which broker leads each partition.
	MetadataBrokerList string
	// RequiredAcks is request.required.acks: 0 no answer, 1 the leader has
	// the set, -1 every in-sync replica has it (0).
	RequiredAcks int16
	// RequestTimeout is request.timeout.ms: how long the leader waits for
	// its followers with acks -1 (10000 ms).
	RequestTimeout time.Duration
	// MessageSendMaxRetries is message.send.max.retries (3).
	MessageSendMaxRetries int
	// RetryBackoff is retry.backoff.ms: the wait before a retry, after which
	// the leader is looked up again (100 ms).
	RetryBackoff time.Duration
	// MaxInFlight is max.in.flight.requests.per.connection (Kafka's later
	// producer's name; 1, 0.8's sync producer): how many acknowledged
	// produces (acks 1 or -1) to a replicated topic may wait for their
	// answers on one leader connection. Above 1, Send returns once its set
	// is written and the window has room, and its answer is read by a later
	// Send, Flush or Close (inflight.go says what happens on a failure).
	MaxInFlight int
	// MetadataRefreshInterval is topic.metadata.refresh.interval.ms: cached
	// metadata older than this is asked again on the next send (600000 ms).
	MetadataRefreshInterval time.Duration
}

// DefaultConfig returns 0.7's defaults.
func DefaultConfig() Config {
	return Config{
		ProducerType:     "sync",
		BatchSize:        200,
		QueueSize:        10000,
		QueueTime:        5000 * time.Millisecond,
		EnqueueTimeoutMs: 0,
		ConnectTimeout:   5000 * time.Millisecond,
		MaxMessageSize:   1000000,
		Magic:            message.MagicV1,

		RequestTimeout:          10000 * time.Millisecond,
		MessageSendMaxRetries:   3,
		RetryBackoff:            100 * time.Millisecond,
		MaxInFlight:             1,
		MetadataRefreshInterval: 600000 * time.Millisecond,
	}
}

// compresses reports whether a batch for topic is compressed: a codec is
// set and compressed.topics is empty or names the topic.
func (c *Config) compresses(topic string) bool {
	if c.Compression == message.CodecNone {
		return false
	}
	if len(c.CompressedTopics) == 0 {
		return true
	}
	for _, t := range c.CompressedTopics {
		if t == topic {
			return true
		}
	}
	return false
}

// ConfigFromProperties builds a Config from 0.7 property names, starting
// from DefaultConfig. Unknown keys (serializer.class and friends, which have
// no meaning for []byte messages) are ignored.
func ConfigFromProperties(props map[string]string) (Config, error) {
	cfg := DefaultConfig()
	fields := cfg.fields()
	for k, v := range props {
		if _, err := properties.Set(fields, k, v); err != nil {
			return cfg, fmt.Errorf("producer: property %s=%q: %w (%v)", k, v, ErrBadConfig, err)
		}
	}
	return cfg, cfg.Validate()
}

// Set sets one property by its 0.7 name (or one of the later names
// fields lists), refusing a name it does not know, unlike
// ConfigFromProperties, which reads whole files written for the JVM's
// producer.
func (c *Config) Set(key, value string) error {
	known, err := properties.Set(c.fields(), key, value)
	if !known {
		return fmt.Errorf("producer: unknown property %q: %w", key, ErrBadConfig)
	}
	if err != nil {
		return fmt.Errorf("producer: property %s=%q: %w (%v)", key, value, ErrBadConfig, err)
	}
	return nil
}

// fields maps each producer property name to the field of c it sets.
func (c *Config) fields() map[string]properties.Field {
	return map[string]properties.Field{
		"broker.list":             properties.String(&c.BrokerList),
		"zk.connect":              properties.String(&c.ZkConnect),
		"producer.type":           properties.String(&c.ProducerType),
		"batch.size":              properties.Int(&c.BatchSize),
		"queue.size":              properties.Int(&c.QueueSize),
		"queue.time":              properties.Millis(&c.QueueTime),
		"queue.enqueueTimeout.ms": properties.Int(&c.EnqueueTimeoutMs),
		"compression.codec": func(v string) error {
			var n int
			err := properties.Int(&n)(v)
			c.Compression = message.Codec(n)
			return err
		},
		"compressed.topics": func(v string) error {
			c.CompressedTopics = nil
			for _, t := range strings.Split(v, ",") {
				if t = strings.TrimSpace(t); t != "" {
					c.CompressedTopics = append(c.CompressedTopics, t)
				}
			}
			return nil
		},
		"message.magic": func(v string) error {
			var n int
			if err := properties.Int(&n)(v); err != nil {
				return err
			}
			if n != 0 && n != 1 {
				return fmt.Errorf("%w: the message format is 0 or 1", properties.ErrValue)
			}
			c.Magic = byte(n)
			return nil
		},
		"connect.timeout.ms":   properties.Millis(&c.ConnectTimeout),
		"buffer.size":          properties.Int(&c.SocketBufferSize),
		"socket.nagle.disable": properties.Bool(&c.NagleDisable),
		"max.message.size":     properties.Int(&c.MaxMessageSize),
		"metadata.broker.list": properties.String(&c.MetadataBrokerList),
		"request.required.acks": func(v string) error {
			var n int
			err := properties.Int(&n)(v)
			c.RequiredAcks = int16(n)
			return err
		},
		"request.timeout.ms":                    properties.Millis(&c.RequestTimeout),
		"message.send.max.retries":              properties.Int(&c.MessageSendMaxRetries),
		"retry.backoff.ms":                      properties.Millis(&c.RetryBackoff),
		"max.in.flight.requests.per.connection": properties.Int(&c.MaxInFlight),
		"topic.metadata.refresh.interval.ms":    properties.Millis(&c.MetadataRefreshInterval),
	}
}

// Validate checks the settings that can be checked without the network.
func (c Config) Validate() error {
	switch c.ProducerType {
	case "", "sync", "async":
	default:
		return fmt.Errorf("producer: producer.type %q is not sync or async: %w", c.ProducerType, ErrBadConfig)
	}
	if c.BrokerList == "" && c.ZkConnect == "" && c.MetadataBrokerList == "" {
		return fmt.Errorf("producer: none of broker.list, metadata.broker.list and zk.connect is set: %w", ErrBadConfig)
	}
	if c.MetadataBrokerList != "" {
		if _, err := ParseBrokerList(c.MetadataBrokerList); err != nil {
			return err
		}
	}
	if c.RequiredAcks != 0 && c.RequiredAcks != 1 && c.RequiredAcks != -1 {
		return fmt.Errorf("producer: request.required.acks %d is not 0, 1 or -1: %w", c.RequiredAcks, ErrBadConfig)
	}
	if c.MaxInFlight < 0 || c.MaxInFlight > maxInFlight {
		return fmt.Errorf("producer: max.in.flight.requests.per.connection %d is not 0..%d: %w", c.MaxInFlight, maxInFlight, ErrBadConfig)
	}
	if c.MessageSendMaxRetries < 0 {
		return fmt.Errorf("producer: message.send.max.retries %d is negative: %w", c.MessageSendMaxRetries, ErrBadConfig)
	}
	if c.BrokerList != "" {
		if _, err := ParseBrokerList(c.BrokerList); err != nil {
			return err
		}
	}
	if c.Compression > message.CodecSnappy {
		return fmt.Errorf("producer: compression.codec %d is not 0, 1 or 2: %w", c.Compression, ErrBadConfig)
	}
	if c.Magic > message.MagicV1 {
		return fmt.Errorf("producer: message.magic %d is not 0 or 1: %w", c.Magic, ErrBadConfig)
	}
	for _, t := range c.CompressedTopics {
		if err := ValidateTopic(t); err != nil {
			return fmt.Errorf("producer: compressed.topics: %w: %w", err, ErrBadConfig)
		}
	}
	return nil
}

// Broker is one broker as the producer knows it.
type Broker struct {
	ID   int
	Host string
	Port int
}

// Addr is host:port.
func (b Broker) Addr() string { return fmt.Sprintf("%s:%d", b.Host, b.Port) }

// ParseBrokerList parses broker.list, "id:host:port,..." (0.7's static
// list). Ids must be distinct.
func ParseBrokerList(s string) ([]Broker, error) {
	var out []Broker
	seen := map[int]bool{}
	for _, item := range strings.Split(s, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		first := strings.IndexByte(item, ':')
		last := strings.LastIndexByte(item, ':')
		if first < 0 || first == last {
			return nil, fmt.Errorf("producer: broker.list entry %q is not id:host:port: %w", item, ErrBadConfig)
		}
		id, err1 := strconv.Atoi(item[:first])
		port, err2 := strconv.Atoi(item[last+1:])
		host := item[first+1 : last]
		if err1 != nil || err2 != nil || id < 0 || port <= 0 || port > 65535 || host == "" {
			return nil, fmt.Errorf("producer: broker.list entry %q is not id:host:port: %w", item, ErrBadConfig)
		}
		if seen[id] {
			return nil, fmt.Errorf("producer: broker.list names broker id %d twice: %w", id, ErrBadConfig)
		}
		seen[id] = true
		out = append(out, Broker{ID: id, Host: host, Port: port})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("producer: broker.list %q names no broker: %w", s, ErrBadConfig)
	}
	return out, nil
}

package broker

import (
	"fmt"
	"log/slog"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/properties"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// Config is server.properties (docs/PROTOCOL.md §3, §8) with Kafka 0.7's property names
// and defaults; the property each field comes from is named next to it.
type Config struct {
	BrokerID            int            // brokerid: this broker's id in ZooKeeper (§3.2)
	Hostname            string         // hostname: address to listen on and to register; "" = every interface
	Port                int            // port: TCP port; 0 picks a free one (see Broker.Addr)
	LogDir              string         // log.dir: where partition directories live (§3.1)
	NumPartitions       int            // num.partitions: partitions of a topic created by its first produce
	TopicPartitions     map[string]int // topic.partition.count.map: per-topic partitions, "t1:4,t2:2"
	LogFileSize         int64          // log.file.size: roll a segment at this many bytes
	FlushInterval       int            // log.flush.interval: fsync after this many messages
	FlushIntervalMs     int            // log.default.flush.interval.ms: fsync at least this often
	RetentionHours      int            // log.retention.hours: delete segments older than this
	RetentionSize       int64          // log.retention.size: delete oldest segments beyond this size; -1 off
	CleanupIntervalMins int            // log.cleanup.interval.mins: how often retention runs
	LogGrownBuffersMax  int            // log.grown.buffers.max: logs whose write buffer may grow to 1 MiB (package log); 0 none
	SocketSendBuffer    int            // socket.send.buffer: SO_SNDBUF of accepted sockets; 0 = kernel default
	SocketReceiveBuffer int            // socket.receive.buffer: SO_RCVBUF of accepted sockets; 0 = kernel default
	MaxRequestBytes     int            // max.socket.request.bytes: larger requests close the connection
	// produce.coalesce.max.us: how long, at most, an unacknowledged
	// producer's connection sleeps to be woken once for many requests
	// (package coalesce); 0 off.
	ProduceCoalesceMaxUs int

	// Resource limits (docs/ROBUSTNESS.md), named as later Kafka names them.
	QueuedMaxRequestBytes  int64 // queued.max.request.bytes: request bodies held in memory at once; -1 no budget
	QueuedMaxRequestWaitMs int   // queued.max.request.wait.ms: how long a body over 64 KiB may wait for the budget; -1 for ever
	RequestMinBytesPerSec  int   // request.min.bytes.per.sec: a body over 64 KiB must arrive this fast (after 10 s); 0 off
	ConnectionsMaxIdleMs   int   // connections.max.idle.ms: close a connection silent this long; -1 never
	MaxConnectionsPerIP    int   // max.connections.per.ip: connections from one address; more are refused
	MaxConnections         int   // max.connections: connections in all; 0 = the descriptor limit minus a reserve

	NumThreads          int    // num.threads: accepted for compatibility (see Broker doc)
	EnableZooKeeper     bool   // enable.zookeeper: register in ZooKeeper (§3.2)
	Registration08      bool   // register in Kafka 0.8's JSON: set by zookeeper.connect, 0.8's name (config08.go)
	ZKConnect           string // zk.connect: host:port[,host:port...][/chroot]
	ZKConnectionTimeout int    // zk.connectiontimeout.ms
	ZKSessionTimeout    int    // zk.sessiontimeout.ms

	// Replication (docs/PROTOCOL.md §10), with Kafka 0.8's names and defaults.
	DefaultReplicationFactor    int  // default.replication.factor: must be 1 (topics created by a produce are unreplicated)
	NumReplicaFetchers          int  // num.replica.fetchers
	ReplicaFetchMaxBytes        int  // replica.fetch.max.bytes
	ReplicaFetchWaitMaxMs       int  // replica.fetch.wait.max.ms
	ReplicaFetchMinBytes        int  // replica.fetch.min.bytes
	ReplicaLagTimeMaxMs         int  // replica.lag.time.max.ms
	ReplicaLagMaxMessages       int  // replica.lag.max.messages
	ReplicaHWCheckpointMs       int  // replica.high.watermark.checkpoint.interval.ms
	ControllerSocketTimeoutMs   int  // controller.socket.timeout.ms
	AutoLeaderRebalance         bool // auto.leader.rebalance.enable
	LeaderImbalanceCheckSeconds int  // leader.imbalance.check.interval.seconds
	UncleanLeaderElection       bool // unclean.leader.election.enable
	MinInsyncReplicas           int  // min.insync.replicas
}

// DefaultConfig returns Kafka 0.7's defaults.
func DefaultConfig() Config {
	return Config{
		Port:                9092,
		LogDir:              "/tmp/kafka-logs",
		NumPartitions:       1,
		LogFileSize:         1 << 30,
		FlushInterval:       500,
		FlushIntervalMs:     3000,
		RetentionHours:      168,
		RetentionSize:       -1,
		CleanupIntervalMins: 10,
		LogGrownBuffersMax:  log.DefaultGrownWriteBuffers,
		SocketSendBuffer:    100 << 10,
		SocketReceiveBuffer: 100 << 10,
		MaxRequestBytes:     100 << 20,
		// A millisecond: the Go runtime's timer granularity when the
		// machine is idle, and a tenth of figure 7's lowest latency.
		ProduceCoalesceMaxUs: 1000,
		// Room for two and a half maximum-size requests at once.
		QueuedMaxRequestBytes: 256 << 20,
		// A body waits for the budget at most 30 s, and must arrive at 1 MiB/s
		// after 10 s of grace (100 MiB in 110 s).
		QueuedMaxRequestWaitMs: 30000,
		RequestMinBytesPerSec:  1 << 20,
		// Kafka's defaults: ten minutes, no per-address cap.
		ConnectionsMaxIdleMs: 600000,
		MaxConnectionsPerIP:  math.MaxInt32,
		MaxConnections:       0,
		NumThreads:           runtime.NumCPU(),
		ZKConnectionTimeout:  6000,
		ZKSessionTimeout:     6000,

		DefaultReplicationFactor:    1,
		NumReplicaFetchers:          1,
		ReplicaFetchMaxBytes:        1048576,
		ReplicaFetchWaitMaxMs:       500,
		ReplicaFetchMinBytes:        1,
		ReplicaLagTimeMaxMs:         10000,
		ReplicaLagMaxMessages:       4000,
		ReplicaHWCheckpointMs:       5000,
		ControllerSocketTimeoutMs:   30000,
		LeaderImbalanceCheckSeconds: 300,
		MinInsyncReplicas:           1,
	}
}

// ReplicationConfig is the part of the configuration the replica manager uses.
func (c Config) ReplicationConfig() replication.Config {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	return replication.Config{
		BrokerID:                int32(c.BrokerID),
		NumReplicaFetchers:      c.NumReplicaFetchers,
		FetchMaxBytes:           c.ReplicaFetchMaxBytes,
		FetchWaitMax:            ms(c.ReplicaFetchWaitMaxMs),
		FetchMinBytes:           c.ReplicaFetchMinBytes,
		LagTimeMax:              ms(c.ReplicaLagTimeMaxMs),
		LagMaxMessages:          c.ReplicaLagMaxMessages,
		HWCheckpointInterval:    ms(c.ReplicaHWCheckpointMs),
		ControllerSocketTimeout: ms(c.ControllerSocketTimeoutMs),
		AutoLeaderRebalance:     c.AutoLeaderRebalance,
		LeaderImbalanceInterval: time.Duration(c.LeaderImbalanceCheckSeconds) * time.Second,
		UncleanLeaderElection:   c.UncleanLeaderElection,
		MinInsyncReplicas:       c.MinInsyncReplicas,
	}
}

// LogConfig is the part of the configuration the log manager uses.
func (c Config) LogConfig() log.Config {
	return log.Config{
		FileSize:            c.LogFileSize,
		FlushInterval:       c.FlushInterval,
		FlushIntervalMs:     c.FlushIntervalMs,
		RetentionHours:      c.RetentionHours,
		RetentionSize:       c.RetentionSize,
		CleanupIntervalMins: c.CleanupIntervalMins,
		NumPartitions:       c.NumPartitions,
		TopicPartitions:     c.TopicPartitions,
		GrownWriteBuffers:   c.LogGrownBuffersMax,
	}
}

// LoadConfig reads a Java-style properties file (path "" means none: the
// defaults) and then applies overrides, key by key, as if they were lines
// appended to the file. Unknown keys are logged to slog's default logger
// (component=broker) and ignored, as 0.7 did; a value that does not parse
// or is out of range is an error naming the key, the value and the file.
func LoadConfig(path string, overrides map[string]string) (Config, error) {
	cfg := DefaultConfig()
	var props []properties.Property
	if path != "" {
		var err error
		if props, err = properties.ReadFile(path); err != nil {
			return cfg, fmt.Errorf("%w: %w", ErrConfig, err)
		}
	}
	keys := make([]string, 0, len(overrides))
	for k := range overrides {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic error messages
	for _, k := range keys {
		props = append(props, properties.Property{Key: k, Value: overrides[k], Line: -1})
	}
	fields := cfg.fields()
	for _, p := range props {
		known, err := properties.Set(fields, p.Key, p.Value)
		if !known {
			if near := properties.Nearest(fields, p.Key); near != "" {
				slog.Warn("unknown server.properties key ignored: did you mean "+near+"?", "component", "broker", "key", p.Key, "value", p.Value, "where", p.Where(path))
			} else {
				slog.Warn("unknown server.properties key ignored", "component", "broker", "key", p.Key, "value", p.Value, "where", p.Where(path))
			}
			continue
		}
		if err != nil {
			return cfg, fmt.Errorf("%w: %s=%q (%s): %v", ErrConfig, p.Key, p.Value, p.Where(path), err)
		}
	}
	return cfg, cfg.Validate()
}

// Validate checks the values that have limits.
func (c Config) Validate() error {
	bad := func(key string, v any, why string) error {
		return fmt.Errorf("%w: %s=%v: %s", ErrConfig, key, v, why)
	}
	switch {
	case c.BrokerID < 0:
		return bad("brokerid", c.BrokerID, "must be >= 0")
	case c.Port < 0 || c.Port > 65535:
		return bad("port", c.Port, "must be in [0, 65535]")
	case c.LogDir == "":
		return bad("log.dir", `""`, "must name a directory")
	case c.NumPartitions < 1:
		return bad("num.partitions", c.NumPartitions, "must be >= 1")
	case c.LogFileSize <= 0:
		return bad("log.file.size", c.LogFileSize, "must be > 0")
	case c.LogGrownBuffersMax < 0:
		return bad("log.grown.buffers.max", c.LogGrownBuffersMax, "must be >= 0 (0: no log's buffer grows)")
	case c.SocketSendBuffer < 0:
		return bad("socket.send.buffer", c.SocketSendBuffer, "must be >= 0")
	case c.SocketReceiveBuffer < 0:
		return bad("socket.receive.buffer", c.SocketReceiveBuffer, "must be >= 0")
	case c.ProduceCoalesceMaxUs < 0 || c.ProduceCoalesceMaxUs > 1_000_000:
		return bad("produce.coalesce.max.us", c.ProduceCoalesceMaxUs, "must be in [0, 1000000] (0: off)")
	case c.MaxRequestBytes < 6:
		return bad("max.socket.request.bytes", c.MaxRequestBytes, "must be >= 6")
	case c.QueuedMaxRequestBytes != -1 && c.QueuedMaxRequestBytes < int64(c.MaxRequestBytes):
		return bad("queued.max.request.bytes", c.QueuedMaxRequestBytes,
			fmt.Sprintf("must be -1 (no budget) or at least max.socket.request.bytes (%d), or a request of the maximum size could never be read", c.MaxRequestBytes))
	case c.QueuedMaxRequestWaitMs != -1 && c.QueuedMaxRequestWaitMs <= 0:
		return bad("queued.max.request.wait.ms", c.QueuedMaxRequestWaitMs, "must be -1 (for ever) or > 0")
	case c.RequestMinBytesPerSec < 0:
		return bad("request.min.bytes.per.sec", c.RequestMinBytesPerSec, "must be >= 0 (0: off)")
	case c.ConnectionsMaxIdleMs != -1 && c.ConnectionsMaxIdleMs <= 0:
		return bad("connections.max.idle.ms", c.ConnectionsMaxIdleMs, "must be -1 (never) or > 0")
	case c.MaxConnectionsPerIP < 1:
		return bad("max.connections.per.ip", c.MaxConnectionsPerIP, "must be >= 1")
	case c.MaxConnections < 0:
		return bad("max.connections", c.MaxConnections, "must be >= 0 (0: the descriptor limit minus a reserve)")
	case c.NumThreads < 1:
		return bad("num.threads", c.NumThreads, "must be >= 1")
	case c.EnableZooKeeper && c.ZKConnect == "":
		return bad("zk.connect", `""`, "enable.zookeeper=true needs a ZooKeeper address")
	case c.DefaultReplicationFactor != 1:
		return bad("default.replication.factor", c.DefaultReplicationFactor,
			"must be 1: a topic created by its first produce is unreplicated (paper §3); create a replicated one with `kafka topics --create --replication-factor N`")
	case c.NumReplicaFetchers < 1:
		return bad("num.replica.fetchers", c.NumReplicaFetchers, "must be >= 1")
	case c.ReplicaFetchMaxBytes < 1:
		return bad("replica.fetch.max.bytes", c.ReplicaFetchMaxBytes, "must be >= 1")
	case c.ReplicaFetchWaitMaxMs < 0 || c.ReplicaFetchMinBytes < 0:
		return bad("replica.fetch.wait.max.ms/replica.fetch.min.bytes", c.ReplicaFetchWaitMaxMs, "must be >= 0")
	case c.ReplicaLagTimeMaxMs < 1:
		return bad("replica.lag.time.max.ms", c.ReplicaLagTimeMaxMs, "must be >= 1")
	case c.ReplicaHWCheckpointMs < 1:
		return bad("replica.high.watermark.checkpoint.interval.ms", c.ReplicaHWCheckpointMs, "must be >= 1")
	case c.MinInsyncReplicas < 1:
		return bad("min.insync.replicas", c.MinInsyncReplicas, "must be >= 1")
	}
	return nil
}

// fields maps each property name of server.properties to the field of c it
// sets: 0.7's names, and 0.8.1.1's for the same settings (config08.go).
func (c *Config) fields() map[string]properties.Field {
	fields := map[string]properties.Field{
		"brokerid":                                      properties.Int(&c.BrokerID),
		"hostname":                                      properties.String(&c.Hostname),
		"port":                                          properties.Int(&c.Port),
		"log.dir":                                       properties.String(&c.LogDir),
		"num.partitions":                                properties.Int(&c.NumPartitions),
		"topic.partition.count.map":                     func(v string) error { return parseTopicPartitions(c, v) },
		"log.file.size":                                 properties.Int64(&c.LogFileSize),
		"log.flush.interval":                            properties.Int(&c.FlushInterval),
		"log.default.flush.interval.ms":                 properties.Int(&c.FlushIntervalMs),
		"log.retention.hours":                           properties.Int(&c.RetentionHours),
		"log.retention.size":                            properties.Int64(&c.RetentionSize),
		"log.cleanup.interval.mins":                     properties.Int(&c.CleanupIntervalMins),
		"log.grown.buffers.max":                         properties.Int(&c.LogGrownBuffersMax),
		"socket.send.buffer":                            properties.Int(&c.SocketSendBuffer),
		"socket.receive.buffer":                         properties.Int(&c.SocketReceiveBuffer),
		"max.socket.request.bytes":                      properties.Int(&c.MaxRequestBytes),
		"produce.coalesce.max.us":                       properties.Int(&c.ProduceCoalesceMaxUs),
		"num.threads":                                   properties.Int(&c.NumThreads),
		"queued.max.request.bytes":                      properties.Int64(&c.QueuedMaxRequestBytes),
		"queued.max.request.wait.ms":                    properties.Int(&c.QueuedMaxRequestWaitMs),
		"request.min.bytes.per.sec":                     properties.Int(&c.RequestMinBytesPerSec),
		"connections.max.idle.ms":                       properties.Int(&c.ConnectionsMaxIdleMs),
		"max.connections.per.ip":                        properties.Int(&c.MaxConnectionsPerIP),
		"max.connections":                               properties.Int(&c.MaxConnections),
		"enable.zookeeper":                              properties.Bool(&c.EnableZooKeeper),
		"zk.connect":                                    properties.String(&c.ZKConnect),
		"default.replication.factor":                    properties.Int(&c.DefaultReplicationFactor),
		"num.replica.fetchers":                          properties.Int(&c.NumReplicaFetchers),
		"replica.fetch.max.bytes":                       properties.Int(&c.ReplicaFetchMaxBytes),
		"replica.fetch.wait.max.ms":                     properties.Int(&c.ReplicaFetchWaitMaxMs),
		"replica.fetch.min.bytes":                       properties.Int(&c.ReplicaFetchMinBytes),
		"replica.lag.time.max.ms":                       properties.Int(&c.ReplicaLagTimeMaxMs),
		"replica.lag.max.messages":                      properties.Int(&c.ReplicaLagMaxMessages),
		"replica.high.watermark.checkpoint.interval.ms": properties.Int(&c.ReplicaHWCheckpointMs),
		"controller.socket.timeout.ms":                  properties.Int(&c.ControllerSocketTimeoutMs),
		"auto.leader.rebalance.enable":                  properties.Bool(&c.AutoLeaderRebalance),
		"leader.imbalance.check.interval.seconds":       properties.Int(&c.LeaderImbalanceCheckSeconds),
		"unclean.leader.election.enable":                properties.Bool(&c.UncleanLeaderElection),
		"min.insync.replicas":                           properties.Int(&c.MinInsyncReplicas),
		"zk.connectiontimeout.ms":                       properties.Int(&c.ZKConnectionTimeout),
		"zk.sessiontimeout.ms":                          properties.Int(&c.ZKSessionTimeout),
	}
	c.add08(fields)
	return fields
}

// parseTopicPartitions parses "t1:4,t2:2" (spaces allowed, "" = no entries).
func parseTopicPartitions(c *Config, v string) error {
	m := make(map[string]int)
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		topic, count, ok := strings.Cut(item, ":")
		topic, count = strings.TrimSpace(topic), strings.TrimSpace(count)
		if !ok {
			return fmt.Errorf("entry %q is not topic:count", item)
		}
		if err := log.ValidateTopic(topic); err != nil {
			return err
		}
		n, err := strconv.Atoi(count)
		if err != nil || n < 1 {
			return fmt.Errorf("entry %q: the count must be an integer >= 1", item)
		}
		m[topic] = n
	}
	c.TopicPartitions = m
	return nil
}

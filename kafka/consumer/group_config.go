package consumer

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/properties"
)

// GroupConfig holds the high-level (group) consumer's settings under their Kafka 0.7 property names.
type GroupConfig struct {
	// GroupID is groupid: consumers with the same group id share the topic's partitions; every group receives
	// the whole stream (paper §3.2: "different consumer groups each independently consume the full set").
	GroupID string
	// ConsumerID is consumerid: optional. Empty gives 0.7's "<host>-<ms timestamp>-<random>"; either way the
	// registered id is "<group>_<that>".
	ConsumerID string
	// ZkConnect is zk.connect: "host:port,host:port[/chroot]".
	ZkConnect string
	// ZkSessionTimeout is zk.sessiontimeout.ms (6000): a consumer that dies without closing leaves the group
	// when its session expires, so this bounds the pause of the others.
	ZkSessionTimeout time.Duration
	// ZkConnectionTimeout is zk.connectiontimeout.ms (6000).
	ZkConnectionTimeout time.Duration
	// ZkSyncTime is zk.synctime.ms (2000), how far a ZooKeeper follower may lag; the default rebalance backoff.
	ZkSyncTime time.Duration
	// FetchSize is fetch.size (307200): the bytes asked for per partition in each MULTIFETCH. A single message
	// larger than this cannot be fetched and is reported as ErrMessageTooLarge.
	FetchSize int
	// FetcherBackoff is fetcher.backoff.ms (1000): the pause after a fetch round that brought nothing.
	FetcherBackoff time.Duration
	// AutoCommitEnable is autocommit.enable (true).
	AutoCommitEnable bool
	// AutoCommitInterval is autocommit.interval.ms (10000).
	AutoCommitInterval time.Duration
	// AutoOffsetReset is autooffset.reset: where a partition with no committed offset starts, "smallest"
	// (default) or "largest".
	AutoOffsetReset string
	// ConsumerTimeoutMs is consumer.timeout.ms (-1): with a value ≥ 0 a stream's Next gives up after waiting
	// that long and reports ErrConsumerTimeout; -1 waits forever (paper §3: "the message stream iterator never terminates").
	ConsumerTimeoutMs int
	// RebalanceRetriesMax is rebalance.retries.max (4): attempts before a rebalance is declared failed.
	RebalanceRetriesMax int
	// RebalanceBackoff is rebalance.backoff.ms; 0 means ZkSyncTime, as in 0.7.
	RebalanceBackoff time.Duration
	// QueuedChunksMax is queuedchunks.max (10): fetched chunks a stream buffers ahead of the application.
	QueuedChunksMax int
	// OwnershipOnly makes a member that takes part in Algorithm 1 (§3.2) and claims its partitions in the
	// ownership registry but starts no fetchers: its streams stay empty. For a caller that reads the
	// partitions it owns itself (kafka/stream's Runner), from Owned, told of changes by OwnershipChanges. Not a
	// property.
	OwnershipOnly bool
	// SocketTimeout is socket.timeout.ms (30000): the longest a fetch or offsets request may take.
	SocketTimeout time.Duration

	// Logger receives the group's log lines (component=consumer) and its ZooKeeper session's (component=zk),
	// each with the group and consumer id. It is not a property. nil: slog.Default().
	Logger *slog.Logger
}

// Offset-reset policies of autooffset.reset.
const (
	OffsetResetSmallest = "smallest"
	OffsetResetLargest  = "largest"
)

// DefaultGroupConfig returns 0.7's defaults; GroupID and ZkConnect must still be set.
func DefaultGroupConfig() GroupConfig {
	return GroupConfig{
		ZkSessionTimeout:    6000 * time.Millisecond,
		ZkConnectionTimeout: 6000 * time.Millisecond,
		ZkSyncTime:          2000 * time.Millisecond,
		FetchSize:           300 << 10,
		FetcherBackoff:      1000 * time.Millisecond,
		AutoCommitEnable:    true,
		AutoCommitInterval:  10000 * time.Millisecond,
		AutoOffsetReset:     OffsetResetSmallest,
		ConsumerTimeoutMs:   -1,
		RebalanceRetriesMax: 4,
		QueuedChunksMax:     10,
		SocketTimeout:       30000 * time.Millisecond,
	}
}

// GroupConfigFromProperties builds a GroupConfig from 0.7 property names, starting from DefaultGroupConfig.
// Unknown keys are ignored, as 0.7 did.
func GroupConfigFromProperties(props map[string]string) (GroupConfig, error) {
	cfg := DefaultGroupConfig()
	fields := cfg.fields()
	for k, v := range props {
		if _, err := properties.Set(fields, k, v); err != nil {
			return cfg, fmt.Errorf("%w: %s=%q: %v", ErrBadGroupConfig, k, v, err)
		}
	}
	return cfg, cfg.validate()
}

// fields maps each consumer property name to the field of c it sets.
func (c *GroupConfig) fields() map[string]properties.Field {
	return map[string]properties.Field{
		"groupid":                 properties.String(&c.GroupID),
		"consumerid":              properties.String(&c.ConsumerID),
		"zk.connect":              properties.String(&c.ZkConnect),
		"zk.sessiontimeout.ms":    properties.Millis(&c.ZkSessionTimeout),
		"zk.connectiontimeout.ms": properties.Millis(&c.ZkConnectionTimeout),
		"zk.synctime.ms":          properties.Millis(&c.ZkSyncTime),
		"fetch.size":              properties.Int(&c.FetchSize),
		"fetcher.backoff.ms":      properties.Millis(&c.FetcherBackoff),
		"autocommit.enable":       properties.Bool(&c.AutoCommitEnable),
		"autocommit.interval.ms":  properties.Millis(&c.AutoCommitInterval),
		"autooffset.reset":        properties.String(&c.AutoOffsetReset),
		"consumer.timeout.ms":     properties.Int(&c.ConsumerTimeoutMs),
		"rebalance.retries.max":   properties.Int(&c.RebalanceRetriesMax),
		"rebalance.backoff.ms":    properties.Millis(&c.RebalanceBackoff),
		"queuedchunks.max":        properties.Int(&c.QueuedChunksMax),
		"socket.timeout.ms":       properties.Millis(&c.SocketTimeout),
	}
}

// rebalanceBackoff is rebalance.backoff.ms, defaulting to zk.synctime.ms.
func (c GroupConfig) rebalanceBackoff() time.Duration {
	if c.RebalanceBackoff > 0 {
		return c.RebalanceBackoff
	}
	return c.ZkSyncTime
}

func (c GroupConfig) validate() error {
	bad := func(what string, v any) error { return fmt.Errorf("%w: %s = %v", ErrBadGroupConfig, what, v) }
	switch {
	case c.GroupID == "" || strings.ContainsAny(c.GroupID, "/\x00") || c.GroupID == "." || c.GroupID == "..":
		return bad("groupid", strconv.Quote(c.GroupID))
	case strings.ContainsAny(c.ConsumerID, "/\x00"):
		return bad("consumerid", strconv.Quote(c.ConsumerID))
	case c.ZkConnect == "":
		return bad("zk.connect", `""`)
	case c.FetchSize <= 0:
		return bad("fetch.size", c.FetchSize)
	case c.AutoOffsetReset != OffsetResetSmallest && c.AutoOffsetReset != OffsetResetLargest:
		return bad("autooffset.reset", strconv.Quote(c.AutoOffsetReset)+` (want "smallest" or "largest")`)
	case c.RebalanceRetriesMax < 1:
		return bad("rebalance.retries.max", c.RebalanceRetriesMax)
	case c.QueuedChunksMax < 1:
		return bad("queuedchunks.max", c.QueuedChunksMax)
	case c.AutoCommitEnable && c.AutoCommitInterval <= 0:
		return bad("autocommit.interval.ms", c.AutoCommitInterval.Milliseconds())
	case c.ZkSessionTimeout <= 0:
		return bad("zk.sessiontimeout.ms", c.ZkSessionTimeout.Milliseconds())
	}
	return nil
}

package log

import (
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// Config holds the storage settings of server.properties (docs/PROTOCOL.md §3). The
// property each field comes from is named next to it.
type Config struct {
	// FileSize is log.file.size: a new segment is rolled once the active one
	// has reached this many bytes.
	FileSize int64
	// FlushInterval is log.flush.interval: fsync after this many messages.
	// Zero or less turns the count-based flush off (the timer still runs).
	FlushInterval int
	// FlushIntervalMs is log.default.flush.interval.ms: the Manager fsyncs a
	// partition with unflushed data at least this often. Zero or less turns
	// the timer off.
	FlushIntervalMs int
	// RetentionHours is log.retention.hours: segments whose file was last
	// modified longer ago than this are deleted. Zero or less turns it off.
	RetentionHours int
	// RetentionSize is log.retention.size: the oldest segments are deleted
	// while the partition is larger than this. -1 (or any value <= 0) is off.
	RetentionSize int64
	// CleanupIntervalMins is log.cleanup.interval.mins: how often the Manager
	// applies the retention rules. Zero or less turns the check off.
	CleanupIntervalMins int
	// NumPartitions is num.partitions: partitions of a topic on this broker.
	NumPartitions int
	// TopicPartitions is topic.partition.count.map: per-topic overrides of
	// NumPartitions.
	TopicPartitions map[string]int
	// GrownWriteBuffers is log.grown.buffers.max: how many of the Manager's
	// logs may grow their write buffer from 64 KiB to 1 MiB once appends
	// fill it (writebuffer.go). Zero: none.
	GrownWriteBuffers int

	// Logger receives what the logs and the Manager report (recovery,
	// rolls, deletions, storage errors), with the attribute component=log.
	// It is not a setting: the broker passes its own. nil: slog.Default().
	Logger *slog.Logger
}

// DefaultConfig returns the defaults of Kafka 0.7 (docs/PROTOCOL.md §3).
func DefaultConfig() Config {
	return Config{
		FileSize:            1 << 30,
		FlushInterval:       500,
		FlushIntervalMs:     3000,
		RetentionHours:      168,
		RetentionSize:       -1,
		CleanupIntervalMins: 10,
		NumPartitions:       1,
		GrownWriteBuffers:   DefaultGrownWriteBuffers,
	}
}

// logger is Logger (slog.Default() if nil) with component=log.
func (c Config) logger() *slog.Logger {
	l := c.Logger
	if l == nil {
		l = slog.Default()
	}
	return l.With("component", "log")
}

func (c Config) validate() error {
	if c.FileSize <= 0 {
		return fmt.Errorf("log: invalid config: log.file.size %d must be positive", c.FileSize)
	}
	if c.GrownWriteBuffers < 0 {
		return fmt.Errorf("log: invalid config: log.grown.buffers.max %d must be >= 0", c.GrownWriteBuffers)
	}
	return nil
}

// ValidateTopic reports whether name may be used as a topic. A topic name
// becomes a directory name, so it is checked before any path is built from
// it; the rule itself lives in package topic, shared with the clients and the
// ZooKeeper registry.
func ValidateTopic(name string) error { return topic.Validate(name) }

// partitionDirName is "<topic>-<partition>"; the topic must be valid.
func partitionDirName(topic string, partition int) string {
	return topic + "-" + strconv.Itoa(partition)
}

// parsePartitionDir splits "<topic>-<partition>" at the last '-'.
func parsePartitionDir(name string) (topic string, partition int, ok bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 || i == len(name)-1 {
		return "", 0, false
	}
	topic, num := name[:i], name[i+1:]
	for j := 0; j < len(num); j++ {
		if num[j] < '0' || num[j] > '9' {
			return "", 0, false
		}
	}
	p, err := strconv.Atoi(num)
	if err != nil || ValidateTopic(topic) != nil {
		return "", 0, false
	}
	return topic, p, true
}

// segmentExt is the extension of segment files.
const segmentExt = ".kafka"

// segmentFileName is the start offset zero-padded to 20 digits plus ".kafka".
func segmentFileName(start int64) string {
	return fmt.Sprintf("%020d%s", start, segmentExt)
}

// parseSegmentFileName returns the start offset of a segment file name.
func parseSegmentFileName(name string) (int64, bool) {
	if len(name) != 20+len(segmentExt) || !strings.HasSuffix(name, segmentExt) {
		return 0, false
	}
	digits := name[:20]
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	start, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return 0, false
	}
	return start, true
}

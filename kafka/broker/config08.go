package broker

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kafkarepro/kafkarepro/kafka/properties"
)

// Kafka 0.8 renamed most of 0.7's server.properties keys, and the textbook's
// chapter 3 (Kafka 0.8.1.1) copies its server.properties, adding broker.id,
// port and log.dir lines for the second and third brokers. So that file
// runs as printed, the broker reads 0.8.1.1's names as the same settings as
// 0.7's: renamed08 maps each 0.8 name to the 0.7 name whose field it sets.
// The two names are one setting, so in a file that has both, the later line
// wins, as for any repeated key. That is where this broker departs from
// 0.8.1.1 on purpose: 0.8 read log.dirs before log.dir, so the book's copies
// (which keep log.dirs=/tmp/kafka-logs and add log.dir=/tmp/kafka-logs-1)
// all pointed at one directory, and the second broker stopped on its lock;
// the book means one directory per broker, and here each gets its own.
var renamed08 = map[string]string{
	"broker.id":                       "brokerid",
	"host.name":                       "hostname",
	"log.dirs":                        "log.dir",
	"log.segment.bytes":               "log.file.size",
	"log.flush.interval.messages":     "log.flush.interval",
	"log.flush.interval.ms":           "log.default.flush.interval.ms",
	"log.retention.bytes":             "log.retention.size",
	"socket.send.buffer.bytes":        "socket.send.buffer",
	"socket.receive.buffer.bytes":     "socket.receive.buffer",
	"socket.request.max.bytes":        "max.socket.request.bytes",
	"num.network.threads":             "num.threads",
	"num.io.threads":                  "num.threads",
	"zookeeper.connect":               "zk.connect",
	"zookeeper.connection.timeout.ms": "zk.connectiontimeout.ms",
	"zookeeper.session.timeout.ms":    "zk.sessiontimeout.ms",
}

// add08 adds 0.8.1.1's names to fields, the map of 0.7's names.
func (c *Config) add08(fields map[string]properties.Field) {
	for name08, name07 := range renamed08 {
		fields[name08] = fields[name07]
	}
	// log.dirs lists several directories in 0.8; this broker keeps one log.dir.
	fields["log.dirs"] = func(v string) error {
		if strings.Contains(v, ",") {
			return fmt.Errorf("%w: this broker keeps its log in one directory (log.dir), not a list", properties.ErrValue)
		}
		return fields["log.dir"](v)
	}
	// 0.8 has no enable.zookeeper: a broker with zookeeper.connect registers,
	// in 0.8's JSON (docs/PROTOCOL.md §5), since a file with 0.8's names is
	// one 0.8's clients are pointed at.
	fields["zookeeper.connect"] = func(v string) error {
		c.EnableZooKeeper = true
		c.Registration08 = true
		return fields["zk.connect"](v)
	}
	// 0.7 counted the retention check in minutes, 0.8 in milliseconds: a
	// part of a minute rounds up, so that the check never runs more often
	// than asked.
	fields["log.retention.check.interval.ms"] = func(v string) error {
		ms, err := strconv.ParseInt(v, 10, 64)
		if err != nil || ms < 1 {
			return fmt.Errorf("%w: not a positive number of milliseconds", properties.ErrValue)
		}
		c.CleanupIntervalMins = int((ms + 59_999) / 60_000)
		return nil
	}
	// Log compaction (0.8.1's cleaner) is not built: false, the book's value,
	// is what this broker does; true is refused rather than ignored.
	fields["log.cleaner.enable"] = func(v string) error {
		on, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			return fmt.Errorf("%w: not true or false", properties.ErrValue)
		case on:
			return fmt.Errorf("%w: this broker has no log cleaner (0.8.1's compaction); retention deletes whole segments", properties.ErrValue)
		}
		return nil
	}
}

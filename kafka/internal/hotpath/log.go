package hotpath

import (
	"fmt"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/log"
)

// shippedConfig is broker.Shipped on 127.0.0.1, a free port and log.dir dir.
func shippedConfig(dir string) (broker.Config, error) {
	props := broker.Shipped()
	props["hostname"], props["port"], props["log.dir"] = "127.0.0.1", "0", dir
	cfg, err := broker.LoadConfig("", props)
	if err != nil {
		return cfg, fmt.Errorf("hotpath: %s settings: %w", broker.ShippedName, err)
	}
	return cfg, nil
}

// logAppend appends one set to a partition log (§3.1: "simple storage"),
// the broker's work for one PRODUCE once the set is validated; the log's
// flusher goroutine fsyncs every log.flush.interval messages.
//
// With replica set it is a follower's work for the same set fetched from its
// leader (log.AppendReplicaPrefix, docs/PROTOCOL.md §10): every CRC checked
// once and the bytes written to the segment file at once, straight from the
// fetched buffer.
type logAppend struct {
	inMemory
	l       *log.Log
	set     []byte
	replica bool
}

func openLogAppendReplica(batch int) func(dir string) (Op, error) {
	open := openLogAppend(batch)
	return func(dir string) (Op, error) {
		op, err := open(dir)
		if err != nil {
			return nil, err
		}
		op.(*logAppend).replica = true
		return op, nil
	}
}

func openLogAppend(batch int) func(dir string) (Op, error) {
	return func(dir string) (Op, error) {
		cfg, err := shippedConfig(dir)
		if err != nil {
			return nil, err
		}
		l, err := log.Open(dir, cfg.LogConfig(), false)
		if err != nil {
			return nil, fmt.Errorf("hotpath: log/append: %w", err)
		}
		return &logAppend{l: l, set: newSet(batch)}, nil
	}
}

func (o *logAppend) Do() error {
	if o.replica {
		if _, valid, err := o.l.AppendReplicaPrefix(o.set); err != nil || valid != len(o.set) {
			return fmt.Errorf("hotpath: log/append-replica of %d bytes: %d appended, %v", len(o.set), valid, err)
		}
		return nil
	}
	if _, err := o.l.Append(o.set); err != nil {
		return fmt.Errorf("hotpath: log/append of %d bytes: %w", len(o.set), err)
	}
	return nil
}

func (o *logAppend) Close() error { return o.l.Close() }

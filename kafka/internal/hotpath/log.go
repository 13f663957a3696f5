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
type logAppend struct {
	inMemory
	l   *log.Log
	set []byte
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
	if _, err := o.l.Append(o.set); err != nil {
		return fmt.Errorf("hotpath: log/append of %d bytes: %w", len(o.set), err)
	}
	return nil
}

func (o *logAppend) Close() error { return o.l.Close() }

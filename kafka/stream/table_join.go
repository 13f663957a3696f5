package stream

// The stream–table join of §6: "joining each message with records in a secondary store". Each message of the
// stage is published again with the latest value its key has in a table (a Table: a topic read as key →
// latest value), so a click stream gains the item's name and price. A task keeps no state of its own: the table
// is rebuilt from its topic whenever it is opened, and what a message is joined with is the table's value at
// the moment the message is processed — a message processed again after a restart may meet a newer value.

import (
	"errors"
	"fmt"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// TableLookup is what a stream–table join reads; *Table is one.
type TableLookup interface {
	// AppendValue appends key's latest value to dst; ok is false when the key has none.
	AppendValue(dst, key []byte) ([]byte, bool)
}

// TableJoinConfig describes a stream–table join.
type TableJoinConfig struct {
	Table TableLookup
	// Key finds the table's key in a message; nil: the stage's key (Record.Key).
	Key KeyFunc
	// Output is the topic of the joined messages: "<message> <table value>", keyed by the record's key.
	Output string
	// Inner drops a message whose key is not in the table (counted as a skip); otherwise it is published with
	// "-" for the missing value (a left join).
	Inner bool
}

// ErrNotInTable is wrapped by the skip of an inner join's message without a row.
var ErrNotInTable = errors.New("stream: key not in the table")

// TableJoin checks cfg and returns the factory of its processor.
func TableJoin(cfg TableJoinConfig) (ProcessorFactory, error) {
	if cfg.Table == nil {
		return nil, fmt.Errorf("%w: table join without a table", ErrBadConfig)
	}
	if err := topic.Validate(cfg.Output); err != nil {
		return nil, fmt.Errorf("%w: table join output topic: %w", ErrBadConfig, err)
	}
	return func(string, string) (Processor, error) { return &tableJoin{cfg: cfg}, nil }, nil
}

type tableJoin struct {
	cfg TableJoinConfig
	buf []byte
}

func (p *tableJoin) Process(c *Context, r *Record) error {
	key := r.Key
	if p.cfg.Key != nil {
		var err error
		if key, err = p.cfg.Key(r.Value); err != nil {
			if !errors.Is(err, ErrSkip) {
				err = fmt.Errorf("%w: table key: %w", ErrSkip, err)
			}
			return err
		}
	}
	b := append(p.buf[:0], r.Value...)
	b = append(b, ' ')
	b, ok := p.cfg.Table.AppendValue(b, key)
	if !ok {
		if p.cfg.Inner {
			return fmt.Errorf("%w: %w: %s", ErrSkip, ErrNotInTable, quoteKey(key))
		}
		b = append(b, '-')
	}
	p.buf = b
	if err := c.Out.Emit(p.cfg.Output, r.Key, b); err != nil {
		return fmt.Errorf("stream: table join to %q: %w", p.cfg.Output, err)
	}
	c.Report.Emitted++
	return nil
}

// The join keeps no state (the table is its topic's).
func (p *tableJoin) AppendState(dst []byte) ([]byte, error) { return dst, nil }
func (p *tableJoin) RestoreState(b []byte) error {
	if len(b) != 0 {
		return fmt.Errorf("%w: a table join has no state, the checkpoint has %d bytes", ErrBadCheckpoint, len(b))
	}
	return nil
}

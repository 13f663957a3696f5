package stream

// Repartitioning by a new key through an intermediate topic. §6: "semantically partitioning messages on the
// join key during publishing" is what lets one task see every message of a key. When the messages of a topic were not
// published by the key a later step needs (clicks published by user, counted by item), a Repartition stage
// publishes each message again to an intermediate topic with the new key; the producer's key-hash partitioner
// (kafka/producer, §3.3) puts every message of a new key in one partition of that topic, and a stage reading
// it has, in each task, all the messages of its keys. The intermediate topic is an ordinary topic: the
// repartitioning stage's output is at-least-once, like any stage's (the package doc's guarantees), so the
// stage that reads it must tolerate a message seen twice (the join ignores a pending impression seen again, CTRRates a decision number it has counted).
//
// Two topics whose messages a task must see together (the two inputs of a join, or a topic and the one it
// is repartitioned into) must also have the same partitions: CheckCopartitioned says whether they do.

import (
	"errors"
	"fmt"
	"slices"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// ErrNotCopartitioned: two topics that a task must read together have different partitions, so the same key
// would be in different partition numbers of them.
var ErrNotCopartitioned = errors.New("stream: topics not partitioned alike")

// RepartitionConfig describes a repartitioning step.
type RepartitionConfig struct {
	// Output is the intermediate topic.
	Output string
	// Key finds the new key in the message; a message without one is a counted skip. nil: the stage's own
	// key (the record's Key), which copies a topic into one partitioned by the stage's key.
	Key KeyFunc
}

// Repartition checks cfg and returns the factory of its processor: each message is published unchanged to
// cfg.Output, with the new key choosing its partition.
func Repartition(cfg RepartitionConfig) (ProcessorFactory, error) {
	if err := topic.Validate(cfg.Output); err != nil {
		return nil, fmt.Errorf("%w: repartition output topic: %w", ErrBadConfig, err)
	}
	return func(string, string) (Processor, error) { return &repartitioner{cfg: cfg}, nil }, nil
}

type repartitioner struct{ cfg RepartitionConfig }

func (p *repartitioner) Process(c *Context, r *Record) error {
	key := r.Key
	if p.cfg.Key != nil {
		var err error
		if key, err = p.cfg.Key(r.Value); err != nil {
			if !errors.Is(err, ErrSkip) {
				err = fmt.Errorf("%w: repartition key: %w", ErrSkip, err)
			}
			return err
		}
	}
	if err := c.Out.Emit(p.cfg.Output, key, r.Value); err != nil {
		return fmt.Errorf("stream: repartition to %q: %w", p.cfg.Output, err)
	}
	c.Report.Emitted++
	return nil
}

// A repartitioner keeps no state: what it has published is in the intermediate topic, and the checkpoint's
// offset says where to go on.
func (p *repartitioner) AppendState(dst []byte) ([]byte, error) { return dst, nil }
func (p *repartitioner) RestoreState(b []byte) error {
	if len(b) != 0 {
		return fmt.Errorf("%w: a repartitioner has no state, the checkpoint has %d bytes", ErrBadCheckpoint, len(b))
	}
	return nil
}

// CheckCopartitioned returns nil if every topic has the same partitions as the first ("<brokerid>-<n>", as
// d lists them), so that the key-hash partitioner puts a key in the same partition of each; otherwise an
// error wrapping ErrNotCopartitioned that names the first difference.
func CheckCopartitioned(d *zk.Discovery, topics ...string) error {
	var first []zk.Partition
	for i, t := range topics {
		ps, err := d.Partitions(t)
		if err != nil {
			return fmt.Errorf("stream: partitions of %q: %w", t, err)
		}
		if i == 0 {
			first = ps
			continue
		}
		if !slices.Equal(ps, first) {
			return fmt.Errorf("%w: %q has partitions %s, %q has %s", ErrNotCopartitioned, topics[0],
				partNames(first), t, partNames(ps))
		}
	}
	return nil
}

func partNames(ps []zk.Partition) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

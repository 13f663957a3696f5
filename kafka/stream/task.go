package stream

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kafkarepro/kafkarepro/kafka/audit"
	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// Stage is one step of a topology: an input topic read by the group, each of its partitions by one task,
// and what each task does with a message — find its key and event time, then hand it to its processors in
// order. Stages are joined through topics: a stage's processors publish to a topic another stage reads
// (repartitioning by a new key is such a pair).
type Stage struct {
	// Input is the topic the stage reads.
	Input string
	// Key finds a message's key; required.
	Key KeyFunc
	// Time finds a message's event time. nil with Envelope set: the envelope's time.
	Time TimeFunc
	// Envelope says the payloads are audit envelopes (package audit): Key, Time and the processors see the
	// application's bytes inside, and the envelope's time is the event time unless Time is set. A payload
	// that is not an envelope is skipped, counted in Report.SkippedTime.
	Envelope bool
	// Processors make each task's processors; at least one.
	Processors []ProcessorFactory
}

func (s *Stage) validate() error {
	switch {
	case s.Key == nil:
		return fmt.Errorf("%w: stage on %q has no Key function", ErrBadConfig, s.Input)
	case s.Time == nil && !s.Envelope:
		return fmt.Errorf("%w: stage on %q has no Time function and no audit Envelope to take the time from", ErrBadConfig, s.Input)
	case len(s.Processors) == 0:
		return fmt.Errorf("%w: stage on %q has no processor", ErrBadConfig, s.Input)
	}
	if err := topic.Validate(s.Input); err != nil {
		return fmt.Errorf("%w: input topic: %w", ErrBadConfig, err)
	}
	return nil
}

// Event times outside ±2^62 ms (about 146 million years) are refused (a counted skip), so that window
// arithmetic cannot overflow.
const maxEventTime = 1 << 62

// Task processes one input partition: every message of the partition is handed, in offset order, to this
// one task of the group (Algorithm 1 gives each partition to one consumer), so the per-key state its
// processors keep is complete for the keys of that partition (the producer's key hash sends every message of
// a key to one partition, §3.3). A task is used by one goroutine. After Process returns an error other than a
// skip its state is undefined: drop the task and restore a new one from the last checkpoint.
type Task struct {
	stage  Stage
	ctx    Context
	procs  []Processor
	offset int64 // the next offset to process; -1 before any
	report Report
	rec    Record
	state  []byte // the last checkpoint's buffer, reused
}

// NewTask makes the task of one partition of stage.Input, publishing through out.
func NewTask(stage Stage, partition string, out Emitter) (*Task, error) {
	if err := stage.validate(); err != nil {
		return nil, err
	}
	t := &Task{stage: stage, offset: -1}
	for i, f := range stage.Processors {
		p, err := f(stage.Input, partition)
		if err != nil {
			return nil, fmt.Errorf("stream: processor %d of the task of %s/%s: %w", i, stage.Input, partition, err)
		}
		t.procs = append(t.procs, p)
	}
	t.ctx = Context{Topic: stage.Input, Partition: partition, Out: out, Report: &t.report}
	t.rec.Topic, t.rec.Partition = stage.Input, partition
	return t, nil
}

// Topic and Partition name the task's input.
func (t *Task) Topic() string     { return t.stage.Input }
func (t *Task) Partition() string { return t.ctx.Partition }

// Offset is where the task resumes: the offset after the last message processed, the checkpoint's, or -1
// before any.
func (t *Task) Offset() int64 { return t.offset }

// Report is the task's report so far.
func (t *Task) Report() Report {
	r := t.report
	r.Reasons = append([]string(nil), r.Reasons...)
	return r
}

// Processors are the task's processors, in Stage order.
func (t *Task) Processors() []Processor { return t.procs }

// Process handles the message at offset (next: the offset after it) with payload. A message whose key or
// time cannot be extracted, or that a processor refuses with ErrSkip, is counted in the report with its
// reason and passed over; any other error of a processor is returned and the task must be restored.
func (t *Task) Process(offset, next int64, payload []byte) error {
	t.report.Read++
	r := &t.rec
	r.Offset, r.NextOffset, r.Value = offset, next, payload
	var err error
	if t.stage.Envelope {
		var ms int64
		if ms, r.Value, err = audit.EnvelopeTime(payload); err != nil {
			t.report.SkippedTime++
			t.report.reason(offset, fmt.Errorf("%w: time: %v", ErrSkip, err))
			t.offset = next
			return nil
		}
		r.Time = ms
	}
	if t.stage.Time != nil {
		if r.Time, err = t.stage.Time(r.Value); err != nil {
			t.report.SkippedTime++
			t.report.reason(offset, err)
			t.offset = next
			return nil
		}
	}
	if r.Time > maxEventTime || r.Time < -maxEventTime {
		t.report.SkippedTime++
		t.report.reason(offset, fmt.Errorf("%w: time: %d ms is out of range", ErrSkip, r.Time))
		t.offset = next
		return nil
	}
	if r.Key, err = t.stage.Key(r.Value); err != nil {
		t.report.SkippedKey++
		t.report.reason(offset, err)
		t.offset = next
		return nil
	}
	skipped := false
	for i, p := range t.procs {
		if err := p.Process(&t.ctx, r); err != nil {
			if !errors.Is(err, ErrSkip) {
				return fmt.Errorf("stream: task %s/%s, processor %d, message at offset %d: %w", t.stage.Input, t.ctx.Partition, i, offset, err)
			}
			if !skipped {
				skipped = true
				t.report.Skipped++
				t.report.reason(offset, err)
			}
		}
	}
	t.offset = next
	return nil
}

// MaxCheckpoint is the largest checkpoint a task writes: one ZooKeeper node holds at most jute.maxbuffer,
// 1 MiB by default, with the request around it. A larger state is ErrStateTooLarge.
const MaxCheckpoint = 1000 * 1000

// checkpointMagic starts every checkpoint (format version 1).
var checkpointMagic = [4]byte{'K', 'S', 'C', '1'}

// Checkpoint encodes the task's state together with its input offset, as one value to be written in one
// atomic write (as §4's loader stores data and offsets together; see the package doc). The slice is reused by the
// next call.
func (t *Task) Checkpoint() ([]byte, error) {
	b := append(t.state[:0], checkpointMagic[:]...)
	b = binary.AppendVarint(b, t.offset)
	b = t.report.appendTo(b)
	b = binary.AppendUvarint(b, uint64(len(t.procs)))
	var scratch []byte
	for i, p := range t.procs {
		var err error
		if scratch, err = p.AppendState(scratch[:0]); err != nil {
			return nil, fmt.Errorf("stream: task %s/%s: state of processor %d: %w", t.stage.Input, t.ctx.Partition, i, err)
		}
		b = appendBytes(b, scratch)
		if len(b) > MaxCheckpoint {
			break
		}
	}
	t.state = b
	if len(b) > MaxCheckpoint {
		return nil, fmt.Errorf("%w: task %s/%s at offset %d: more than %d bytes (ZooKeeper's jute.maxbuffer); use fewer keys per window, shorter windows or more partitions",
			ErrStateTooLarge, t.stage.Input, t.ctx.Partition, t.offset, MaxCheckpoint)
	}
	return b, nil
}

// Restore replaces the task's state and offset with a checkpoint's. On an error the task is back at its
// initial state.
func (t *Task) Restore(b []byte) error {
	err := t.restore(b)
	if err != nil {
		t.offset, t.report = -1, Report{}
		for _, p := range t.procs {
			_ = p.RestoreState(nil)
		}
		return fmt.Errorf("stream: restoring task %s/%s: %w", t.stage.Input, t.ctx.Partition, err)
	}
	return nil
}

func (t *Task) restore(b []byte) error {
	if len(b) < len(checkpointMagic) || [4]byte(b[:4]) != checkpointMagic {
		return fmt.Errorf("%w: %d bytes starting %q, not a version 1 checkpoint", ErrBadCheckpoint, len(b), clip(b[:min(len(b), 4)]))
	}
	d := &decoder{b: b[4:]}
	off := d.varint()
	var rep Report
	rep.decode(d)
	n := d.count(len(t.procs))
	if d.err == nil && n != len(t.procs) {
		return fmt.Errorf("%w: state of %d processors, the stage has %d", ErrBadCheckpoint, n, len(t.procs))
	}
	states := make([][]byte, n)
	for i := range states {
		states[i] = d.bytes()
	}
	if err := d.end(); err != nil {
		return err
	}
	for i, p := range t.procs {
		if err := p.RestoreState(states[i]); err != nil {
			return fmt.Errorf("processor %d: %w", i, err)
		}
	}
	t.offset, t.report = off, rep
	return nil
}

// ReadCheckpoint decodes the offset and the report of a checkpoint without the processors' state (tools, and
// tests that check a group's checkpoints).
func ReadCheckpoint(b []byte) (offset int64, rep Report, err error) {
	if len(b) < len(checkpointMagic) || [4]byte(b[:4]) != checkpointMagic {
		return 0, Report{}, fmt.Errorf("%w: %d bytes starting %q, not a version 1 checkpoint", ErrBadCheckpoint, len(b), clip(b[:min(len(b), 4)]))
	}
	d := &decoder{b: b[4:]}
	offset = d.varint()
	rep.decode(d)
	return offset, rep, d.err
}

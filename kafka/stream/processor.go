package stream

// Processor is one step of a task: it sees every usable record of the task's partition, in offset order
// (§3.3: order is kept within a partition), and keeps whatever per-key state it needs in memory. It is not
// shared: each task makes its own with the Stage's factories, so the state of a partition lives in the one
// task that owns it. Process may return an error wrapping ErrSkip to have the record counted as skipped (the
// error's text is its reason); any other error stops the task, which then resumes from its last checkpoint.
//
// The state a Processor appends to a checkpoint must hold everything that the records already processed
// have changed: a task restored with RestoreState and fed the records after the checkpoint's offset must
// reach the same state as one that never stopped (the exactly-once property of the package doc).
type Processor interface {
	// Process handles one record. r and its slices are valid only during the call.
	Process(c *Context, r *Record) error
	// AppendState appends the processor's state to dst for a checkpoint.
	AppendState(dst []byte) ([]byte, error)
	// RestoreState replaces the processor's state with one AppendState made (an empty b: the initial state).
	RestoreState(b []byte) error
}

// ProcessorFactory makes a task's Processor for one input partition.
type ProcessorFactory func(topic, partition string) (Processor, error)

// Emitter publishes a processor's results. Emit copies key and value before it returns. What is emitted is
// published before the next checkpoint is written (a Runner flushes its producer first), so a checkpoint
// never covers a result that was not published: at-least-once to the output topic.
type Emitter interface {
	// Emit publishes value to topic; key chooses the partition (the producer's key hash, §3.3's semantic
	// partitioning) and is not itself part of the message (0.7's messages have no key field).
	Emit(topic string, key, value []byte) error
}

// Context is what a task gives its processors with each record.
type Context struct {
	Topic     string
	Partition string
	Out       Emitter
	// Report is the task's report: a processor counts its late messages and published results here.
	Report *Report
}

// Emitted is one result held by MemoryEmitter.
type Emitted struct {
	Topic      string
	Key, Value []byte
}

// MemoryEmitter keeps what is emitted in memory, in order (tests, a task run without Kafka).
type MemoryEmitter struct {
	Out []Emitted
	// Fail, if set, is returned by every Emit (a test's unreachable broker).
	Fail error
}

// Emit implements Emitter.
func (m *MemoryEmitter) Emit(topic string, key, value []byte) error {
	if m.Fail != nil {
		return m.Fail
	}
	m.Out = append(m.Out, Emitted{Topic: topic, Key: append([]byte(nil), key...), Value: append([]byte(nil), value...)})
	return nil
}

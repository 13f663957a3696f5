package stream

import "errors"

// Errors of the package, wrapped with the input that failed.
var (
	// ErrBadWindow: a window of zero or negative length, an advance larger than the window, a negative grace.
	ErrBadWindow = errors.New("stream: bad window")
	// ErrBadConfig: a stage, aggregation or runner setting that cannot work (no key function, two stages on one
	// topic, an output topic the broker would refuse, which then also wraps topic.ErrInvalid).
	ErrBadConfig = errors.New("stream: bad configuration")
	// ErrSkip is wrapped by what a key, time or value function (or a Processor) returns to say "this message
	// cannot be used": the task counts it as a skip with the error's text as its reason and goes on. Any other
	// error a Processor returns stops the task.
	ErrSkip = errors.New("stream: message skipped")
	// ErrBadCheckpoint: a checkpoint that does not decode (a different format, a truncated znode).
	ErrBadCheckpoint = errors.New("stream: bad checkpoint")
	// ErrStateTooLarge: a task's checkpoint is larger than one ZooKeeper node holds (MaxCheckpoint); nothing is
	// written, the task stops with this error.
	ErrStateTooLarge = errors.New("stream: task state too large for its checkpoint")
	// ErrDeposed: a checkpoint write found a newer checkpoint than the one this task restored or last wrote —
	// another task of the group has taken the partition over. The write is refused, and the deposed task drops
	// its state; it never overwrites the newer one.
	ErrDeposed = errors.New("stream: deposed: a newer checkpoint exists")
	// ErrBadResult: an output message that is not a result line (ParseResult).
	ErrBadResult = errors.New("stream: not a result")
)

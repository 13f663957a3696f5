package log

import (
	"errors"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// Errors of the log, wrapped with the topic, partition, offsets, sizes or
// paths involved; test with errors.Is.
var (
	// ErrInvalidTopic: the topic name cannot be used as a directory name
	// (the same value as topic.ErrInvalid).
	ErrInvalidTopic = topic.ErrInvalid
	// ErrInvalidPartition: the partition number is outside [0, Partitions(topic)).
	ErrInvalidPartition = errors.New("log: invalid partition")
	// ErrOffsetOutOfRange: a read below the first segment or past the high-water mark.
	ErrOffsetOutOfRange = errors.New("log: offset out of range")
	// ErrInvalidMessage: an appended set has a bad CRC, bad magic or a partial tail.
	ErrInvalidMessage = errors.New("log: invalid message set")
	// ErrInvalidFetchSize: a read asked for a negative number of bytes.
	ErrInvalidFetchSize = errors.New("log: invalid fetch size")
	// ErrClosed: the log or manager has been closed.
	ErrClosed = errors.New("log: closed")
	// ErrSegmentGap: consecutive segment files do not tile the logical log
	// (start[i] + size[i] != start[i+1]).
	ErrSegmentGap = errors.New("log: segments do not tile")
	// ErrStorage: writing or fsyncing the partition's files failed (a full
	// disk, an I/O error). The append that hit it was undone, and the
	// partition refuses appends until a probe write succeeds (after an
	// fsync failure, until the broker restarts); the error wraps the cause.
	// Reads are not affected.
	ErrStorage = errors.New("log: storage error")
)

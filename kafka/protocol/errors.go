package protocol

import "fmt"

// ErrorCode is the int16 error field that starts every response payload
// (docs/PROTOCOL.md §4). It implements error so a client can return it directly; use
// Err to turn ErrNone into a nil error.
type ErrorCode int16

// The error codes of Kafka 0.6/0.7.
const (
	ErrUnknown          ErrorCode = -1 // anything the broker could not classify
	ErrNone             ErrorCode = 0  // success
	ErrOffsetOutOfRange ErrorCode = 1  // the fetch offset is before the log start or past its flushed end
	ErrInvalidMessage   ErrorCode = 2  // a message failed its CRC or format check
	ErrWrongPartition   ErrorCode = 3  // the topic name or partition number does not exist on this broker
	ErrInvalidFetchSize ErrorCode = 4  // the fetch asked for a negative number of bytes
)

// Error returns a readable name for the code.
func (c ErrorCode) Error() string {
	switch c {
	case ErrUnknown:
		return "kafka: unknown broker error (-1)"
	case ErrNone:
		return "kafka: no error (0)"
	case ErrOffsetOutOfRange:
		return "kafka: offset out of range (1)"
	case ErrInvalidMessage:
		return "kafka: invalid message (2)"
	case ErrWrongPartition:
		return "kafka: wrong partition (3)"
	case ErrInvalidFetchSize:
		return "kafka: invalid fetch size (4)"
	}
	return fmt.Sprintf("kafka: unexpected error code %d", int16(c))
}

// Err returns nil for ErrNone and the code itself otherwise, so callers can
// write `if err := code.Err(); err != nil`.
func (c ErrorCode) Err() error {
	if c == ErrNone {
		return nil
	}
	return c
}

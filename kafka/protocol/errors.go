package protocol

import (
	"errors"
	"fmt"
)

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

// The error codes replication adds (docs/PROTOCOL.md §10), numbered as Kafka
// 0.8 numbered them. 0.8 also renamed 3 "unknown topic or partition"; the
// replication requests use 3 in that sense (ErrUnknownTopicOrPartition).
const (
	ErrUnknownTopicOrPartition      ErrorCode = 3  // = ErrWrongPartition: no such topic or partition here
	ErrLeaderNotAvailable           ErrorCode = 5  // the partition has no leader now (an election is due or impossible)
	ErrNotLeaderForPartition        ErrorCode = 6  // this broker does not lead the partition: ask for metadata again
	ErrRequestTimedOut              ErrorCode = 7  // acks=-1: not committed within the request's timeout
	ErrBrokerNotAvailable           ErrorCode = 8  // the broker named is not alive
	ErrReplicaNotAvailable          ErrorCode = 9  // the broker asking is not a replica of the partition
	ErrMessageSizeTooLarge          ErrorCode = 10 // a message set larger than the broker accepts
	ErrStaleControllerEpoch         ErrorCode = 11 // the request comes from a deposed controller
	ErrStaleLeaderEpoch             ErrorCode = 13 // the leader epoch is older than the one this broker knows
	ErrNotEnoughReplicas            ErrorCode = 19 // acks=-1 and the ISR is smaller than min.insync.replicas: not appended
	ErrNotEnoughReplicasAfterAppend ErrorCode = 20 // appended, but the ISR shrank below min.insync.replicas before it was committed
	// ErrKafkaStorage is later Kafka's KAFKA_STORAGE_ERROR: the partition's
	// log refuses appends after a storage error (a full disk; log.ErrStorage)
	// until it heals. The set was not appended; retrying later may succeed.
	ErrKafkaStorage ErrorCode = 56
	// ErrStaleBrokerEpoch is later Kafka's STALE_BROKER_EPOCH (KIP-380): a
	// LEADER_AND_ISR made for an earlier registration of the broker that got
	// it. The controller drops it; the new registration gets its own.
	ErrStaleBrokerEpoch ErrorCode = 77
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
	case ErrLeaderNotAvailable:
		return "kafka: leader not available (5)"
	case ErrNotLeaderForPartition:
		return "kafka: not leader for partition (6)"
	case ErrRequestTimedOut:
		return "kafka: request timed out (7)"
	case ErrBrokerNotAvailable:
		return "kafka: broker not available (8)"
	case ErrReplicaNotAvailable:
		return "kafka: replica not available (9)"
	case ErrMessageSizeTooLarge:
		return "kafka: message size too large (10)"
	case ErrStaleControllerEpoch:
		return "kafka: stale controller epoch (11)"
	case ErrStaleLeaderEpoch:
		return "kafka: stale leader epoch (13)"
	case ErrNotEnoughReplicas:
		return "kafka: not enough in-sync replicas (19)"
	case ErrNotEnoughReplicasAfterAppend:
		return "kafka: not enough in-sync replicas after append (20)"
	case ErrKafkaStorage:
		return "kafka: storage error on the broker, not appended (56)"
	case ErrStaleBrokerEpoch:
		return "kafka: stale broker epoch (77)"
	}
	return fmt.Sprintf("kafka: unexpected error code %d", int16(c))
}

// Retriable reports whether a producer or consumer should look the leader up
// again and retry: the partition moved, or has no leader for a moment, or
// the request timed out.
func (c ErrorCode) Retriable() bool {
	switch c {
	case ErrUnknownTopicOrPartition, ErrLeaderNotAvailable, ErrNotLeaderForPartition, ErrRequestTimedOut,
		ErrNotEnoughReplicas, ErrNotEnoughReplicasAfterAppend, ErrKafkaStorage:
		return true
	}
	return false
}

// Err returns nil for ErrNone and the code itself otherwise, so callers can
// write `if err := code.Err(); err != nil`.
func (c ErrorCode) Err() error {
	if c == ErrNone {
		return nil
	}
	return c
}

// Errors of reading and decoding requests, always wrapped with the offending
// value. (A request that decodes but cannot be served is answered with an
// ErrorCode instead, above.)
var (
	ErrRequestTooLarge = errors.New("protocol: request too large")
	ErrMalformed       = errors.New("protocol: malformed request")
	ErrUnknownRequest  = errors.New("protocol: unknown request id")
)

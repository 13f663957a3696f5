package consumer

import (
	"errors"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// Errors of the simple consumer, wrapped with the topic, partition, offset
// and sizes involved.
var (
	// ErrMessageTooLarge: the message at the fetch offset does not fit in the
	// fetch size, so no progress is possible until the fetch size grows.
	// (0.7 returned an empty set here and its consumers stalled silently.)
	ErrMessageTooLarge = errors.New("consumer: message larger than the fetch size")
	// ErrNotMessageStart: the fetch offset falls inside a message, so the
	// bytes there are not a message header. Offsets are byte positions
	// (§3.1) and the broker sends the bytes from any offset, as 0.7 did; a
	// consumer must start from an offset that OFFSETS or the end of a
	// message gave it.
	ErrNotMessageStart = errors.New("consumer: offset does not start a message")
	// ErrChecksum: a message's CRC does not match its payload (§3.3). It is
	// message.ErrChecksum, so either name matches with errors.Is.
	ErrChecksum = message.ErrChecksum
	// ErrBadResponse: the broker's answer could not be parsed.
	ErrBadResponse = errors.New("consumer: malformed response")
)

// Errors of the group consumer's streams.
var (
	// ErrConsumerTimeout: no message arrived within consumer.timeout.ms. It is not final: Next may be called
	// again and goes on waiting.
	ErrConsumerTimeout = errors.New("consumer: no message within consumer.timeout.ms")
	// ErrRebalanceFailed: the group's partitions could not be divided within rebalance.retries.max attempts
	// (paper §3.2: the consumer "releases all the partitions that it currently owns, waits a bit and retries").
	// It is final: every stream of the consumer ends with it.
	ErrRebalanceFailed = errors.New("consumer: rebalance failed")
	// ErrGroupClosed: an operation on a group consumer after Close.
	ErrGroupClosed = errors.New("consumer: group consumer closed")
)

// ErrBadGroupConfig reports an invalid group consumer setting.
var ErrBadGroupConfig = errors.New("consumer: bad group consumer config")

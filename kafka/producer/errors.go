package producer

import (
	"errors"

	"github.com/kafkarepro/kafkarepro/kafka/topic"
)

// Errors returned by the producer, wrapped with the failing input.
var (
	ErrNoBrokers        = errors.New("producer: no broker available")
	ErrUnknownPartition = errors.New("producer: unknown partition")
	ErrInvalidTopic     = topic.ErrInvalid
	ErrMessageTooLarge  = errors.New("producer: message larger than max.message.size")
	ErrClosed           = errors.New("producer: closed")
)

// ErrQueueFull is returned when the async queue is full and queue.enqueueTimeout.ms did not let the message
// wait (0: drop at once; >0: waited that long).
var ErrQueueFull = errors.New("producer: async queue full")

// ErrBadConfig is wrapped by every configuration error.
var ErrBadConfig = errors.New("producer: bad configuration")

package topic

import "errors"

// ErrInvalid is wrapped by every error Validate returns, with the name and
// what is wrong with it. kafka/log and kafka/producer re-export it as their
// ErrInvalidTopic.
var ErrInvalid = errors.New("topic: invalid topic name")

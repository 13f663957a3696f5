package replication

import "errors"

// Sentinel errors of the package, wrapped with what failed and with which input.
var (
	// ErrNotReplicated: the topic has no replica assignment (it is one of 0.7's, or does not exist).
	ErrNotReplicated = errors.New("replication: topic is not replicated")
	// ErrTopicExists: a topic of that name exists already (replicated, or 0.7's).
	ErrTopicExists = errors.New("replication: topic exists")
	// ErrBadAssignment: a replica assignment that cannot be used (too few brokers, a broker twice, ...).
	ErrBadAssignment = errors.New("replication: bad replica assignment")
	// ErrBadState: a ZooKeeper node whose JSON does not parse.
	ErrBadState = errors.New("replication: bad state in ZooKeeper")
	// ErrStaleEpoch: a request from a deposed controller, or an older leader epoch.
	ErrStaleEpoch = errors.New("replication: stale epoch")
)

package zk

import (
	"errors"

	gozk "github.com/go-zookeeper/zk"
)

// Sentinel errors. ErrNoNode and ErrNodeExists are the client library's own values, re-exported so callers can
// test with errors.Is without importing it.
var (
	ErrNoNode         = gozk.ErrNoNode
	ErrNodeExists     = gozk.ErrNodeExists
	ErrBadConnect     = errors.New("zk: bad connect string")
	ErrBadPath        = errors.New("zk: bad path")
	ErrConnectTimeout = errors.New("zk: no session established in time")
	ErrClosed         = errors.New("zk: client closed")
)

// ErrBrokerIDTaken is returned when another live broker already holds /brokers/ids/<id>.
var ErrBrokerIDTaken = errors.New("zk: broker id already registered by another broker")

// ErrBadRegistration is returned for a broker or topic node whose data does not parse.
var ErrBadRegistration = errors.New("zk: bad registration data")

// ErrBadVersion is the library's "version does not match" error: a conditional set lost a race (replication's
// partition state nodes are changed only this way, docs/PROTOCOL.md §10).
var ErrBadVersion = gozk.ErrBadVersion

package replication

import (
	"errors"
	"log/slog"
	"strconv"

	gozk "github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Store is the part of a ZooKeeper session replication uses (docs/PROTOCOL.md §10's nodes): *zk.Client is
// one; the package's tests use an in-memory one, so that the controller and the replicas run without a
// ZooKeeper server. Errors are zk's sentinels (zk.ErrNoNode, zk.ErrNodeExists, zk.ErrBadVersion,
// zk.ErrFenced), wrapped.
type Store interface {
	Get(p string) ([]byte, error)
	GetVersion(p string) ([]byte, int32, error)
	GetCreated(p string) ([]byte, int64, error)
	Children(p string) ([]string, error)
	ChildrenW(p string) ([]string, <-chan gozk.Event, error)
	ExistsW(p string) (bool, <-chan gozk.Event, error)
	CreateEphemeral(p string, data []byte) error
	CreatePersistent(p string, data []byte) error
	SetVersion(p string, data []byte, version int32) (int32, error)
	SetVersionFenced(p string, data []byte, version int32, create bool, fence string, fenceVersion int32) (int32, error)
	EnsurePath(p string) error
	Delete(p string) error
	// NewSessions returns a channel that receives each time the store starts a new session (the ephemeral
	// nodes of the old one are gone), and a function that stops it.
	NewSessions() (<-chan struct{}, func())
}

var _ Store = (*zk.Client)(nil)

// LiveBrokers reads the broker registry (/brokers/ids) keyed by the int32 broker ids of the replication
// requests, each with its broker epoch (zk.Broker.Epoch). A registration that does not parse is skipped
// with a warning; one gone since the listing is skipped quietly.
func LiveBrokers(c Store) (map[int32]zk.Broker, error) {
	ids, err := c.Children(zk.BrokerIDsPath)
	if errors.Is(err, zk.ErrNoNode) {
		return map[int32]zk.Broker{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make(map[int32]zk.Broker, len(ids))
	for _, s := range ids {
		id, err := strconv.Atoi(s)
		if err != nil {
			slog.Warn("replication: ignoring a broker registration whose name is not a number", "node", s)
			continue
		}
		data, epoch, err := c.GetCreated(zk.BrokerIDPath(id))
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return nil, err
		}
		b, err := zk.ParseBroker(id, string(data))
		if err != nil {
			slog.Warn("replication: ignoring a broker registration", "err", err)
			continue
		}
		b.Epoch = epoch
		out[int32(id)] = b
	}
	return out, nil
}

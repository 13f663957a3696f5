package stream

import (
	"errors"
	"fmt"
	"sync"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// NoCheckpoint is the version Store.Load reports for a partition without a checkpoint; Save with it creates
// the first one.
const NoCheckpoint int32 = -1

// Store keeps one checkpoint per input partition. A write is conditional on the version the writer last
// read or wrote, so that of two tasks that both believe they own a partition (one deposed by a rebalance
// it has not noticed yet) only one can extend the checkpoint; the other gets ErrDeposed and must restore.
type Store interface {
	// Load returns a partition's checkpoint and its version, or (nil, NoCheckpoint) when it has none.
	Load(topic, partition string) ([]byte, int32, error)
	// Save replaces the checkpoint if it is still at version (NoCheckpoint: if there is none) and returns the
	// new version; ErrDeposed (wrapped) if another write came first.
	Save(topic, partition string, data []byte, version int32) (int32, error)
}

// CheckpointPath is a task's checkpoint node, /consumers/<group>/checkpoints/<topic>/<partition>, beside
// the group's offset registry (docs/PROTOCOL.md §5): persistent, so it outlives every member of the group.
func CheckpointPath(group, topic, partition string) string {
	return zk.ConsumerGroupPath(group) + "/checkpoints/" + topic + "/" + partition
}

// ZKStore keeps checkpoints in ZooKeeper, one node per task (CheckpointPath), each written with a
// version-conditional set: state and offset change together in one atomic write, or not at all.
type ZKStore struct {
	c     *zk.Client
	group string
}

// NewZKStore returns the checkpoint store of group on c.
func NewZKStore(c *zk.Client, group string) *ZKStore { return &ZKStore{c: c, group: group} }

// Load implements Store.
func (s *ZKStore) Load(topic, partition string) ([]byte, int32, error) {
	data, v, err := s.c.GetVersion(CheckpointPath(s.group, topic, partition))
	if errors.Is(err, zk.ErrNoNode) {
		return nil, NoCheckpoint, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("stream: loading the checkpoint of %s/%s: %w", topic, partition, err)
	}
	return data, v, nil
}

// Save implements Store.
func (s *ZKStore) Save(topic, partition string, data []byte, version int32) (int32, error) {
	if len(data) > MaxCheckpoint {
		return 0, fmt.Errorf("%w: %d bytes for %s/%s, the limit is %d", ErrStateTooLarge, len(data), topic, partition, MaxCheckpoint)
	}
	p := CheckpointPath(s.group, topic, partition)
	if version == NoCheckpoint {
		err := s.c.CreatePersistent(p, data)
		if errors.Is(err, zk.ErrNodeExists) {
			return 0, fmt.Errorf("%w: %s was created by another task", ErrDeposed, p)
		}
		if err != nil {
			return 0, fmt.Errorf("stream: writing the checkpoint of %s/%s: %w", topic, partition, err)
		}
		return 0, nil
	}
	v, err := s.c.SetVersion(p, data, version)
	if errors.Is(err, zk.ErrBadVersion) || errors.Is(err, zk.ErrNoNode) {
		return 0, fmt.Errorf("%w: %s is no longer at version %d", ErrDeposed, p, version)
	}
	if err != nil {
		return 0, fmt.Errorf("stream: writing the checkpoint of %s/%s: %w", topic, partition, err)
	}
	return v, nil
}

// MemoryStore is a Store in memory, with ZooKeeper's version rule (tests, a single process).
type MemoryStore struct {
	mu sync.Mutex
	m  map[[2]string]memCheckpoint
	// Writes counts successful saves.
	Writes int
}

type memCheckpoint struct {
	data    []byte
	version int32
}

// Load implements Store.
func (s *MemoryStore) Load(topic, partition string) ([]byte, int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.m[[2]string{topic, partition}]
	if !ok {
		return nil, NoCheckpoint, nil
	}
	return append([]byte(nil), c.data...), c.version, nil
}

// Save implements Store.
func (s *MemoryStore) Save(topic, partition string, data []byte, version int32) (int32, error) {
	if len(data) > MaxCheckpoint {
		return 0, fmt.Errorf("%w: %d bytes for %s/%s, the limit is %d", ErrStateTooLarge, len(data), topic, partition, MaxCheckpoint)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	k := [2]string{topic, partition}
	c, ok := s.m[k]
	switch {
	case !ok && version != NoCheckpoint:
		return 0, fmt.Errorf("%w: %s/%s has no checkpoint, the write expected version %d", ErrDeposed, topic, partition, version)
	case ok && c.version != version:
		return 0, fmt.Errorf("%w: %s/%s is at version %d, the write expected %d", ErrDeposed, topic, partition, c.version, version)
	}
	if s.m == nil {
		s.m = map[[2]string]memCheckpoint{}
	}
	nv := int32(0)
	if ok {
		nv = c.version + 1
	}
	s.m[k] = memCheckpoint{data: append([]byte(nil), data...), version: nv}
	s.Writes++
	return nv, nil
}

package replication

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	gozk "github.com/go-zookeeper/zk"

	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// memStore is a Store in memory, for running the controller and the replicas without a ZooKeeper server:
// nodes with data, a version and the zxid of their creation; one-shot watches on a node's existence and on
// its children, fired as ZooKeeper fires them; the fence of SetVersionFenced. Ephemeral nodes are plain
// nodes here: a test removes them (drop) to play a session's end.
type memStore struct {
	mu      sync.Mutex
	nodes   map[string]*memNode
	zxid    int64
	watches map[string][]chan gozk.Event // "e"+path: existence and data; "c"+path: children
}

type memNode struct {
	data    []byte
	version int32
	czxid   int64
}

func newMemStore() *memStore {
	return &memStore{nodes: map[string]*memNode{"/": {}}, watches: map[string][]chan gozk.Event{}}
}

var _ Store = (*memStore)(nil)

func noNode(op, p string) error { return fmt.Errorf("memstore: %s %s: %w", op, p, zk.ErrNoNode) }
func nodeExists(op, p string) error {
	return fmt.Errorf("memstore: %s %s: %w", op, p, zk.ErrNodeExists)
}

// fireLocked fires and forgets the watches of key.
func (s *memStore) fireLocked(key string, t gozk.EventType, p string) {
	for _, ch := range s.watches[key] {
		ch <- gozk.Event{Type: t, Path: p}
	}
	delete(s.watches, key)
}

func (s *memStore) watchLocked(key string) <-chan gozk.Event {
	ch := make(chan gozk.Event, 1)
	s.watches[key] = append(s.watches[key], ch)
	return ch
}

func (s *memStore) Get(p string) ([]byte, error) {
	data, _, err := s.GetVersion(p)
	return data, err
}

func (s *memStore) GetVersion(p string) ([]byte, int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[p]
	if n == nil {
		return nil, 0, noNode("get", p)
	}
	return slices.Clone(n.data), n.version, nil
}

func (s *memStore) GetCreated(p string) ([]byte, int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.nodes[p]
	if n == nil {
		return nil, 0, noNode("get", p)
	}
	return slices.Clone(n.data), n.czxid, nil
}

func (s *memStore) childrenLocked(p string) ([]string, error) {
	if s.nodes[p] == nil {
		return nil, noNode("children", p)
	}
	var out []string
	prefix := strings.TrimSuffix(p, "/") + "/"
	for q := range s.nodes {
		if rest, ok := strings.CutPrefix(q, prefix); ok && rest != "" && !strings.Contains(rest, "/") {
			out = append(out, rest)
		}
	}
	slices.Sort(out)
	return out, nil
}

func (s *memStore) Children(p string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.childrenLocked(p)
}

func (s *memStore) ChildrenW(p string) ([]string, <-chan gozk.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, err := s.childrenLocked(p)
	if err != nil {
		return nil, nil, err
	}
	return out, s.watchLocked("c" + p), nil
}

func (s *memStore) ExistsW(p string) (bool, <-chan gozk.Event, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nodes[p] != nil, s.watchLocked("e" + p), nil
}

func (s *memStore) createLocked(p string, data []byte) error {
	if s.nodes[p] != nil {
		return nodeExists("create", p)
	}
	if s.nodes[path.Dir(p)] == nil {
		return noNode("create", p)
	}
	s.zxid++
	s.nodes[p] = &memNode{data: slices.Clone(data), czxid: s.zxid}
	s.fireLocked("e"+p, gozk.EventNodeCreated, p)
	s.fireLocked("c"+path.Dir(p), gozk.EventNodeChildrenChanged, path.Dir(p))
	return nil
}

func (s *memStore) CreateEphemeral(p string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.createLocked(p, data)
}

func (s *memStore) CreatePersistent(p string, data []byte) error { return s.CreateEphemeral(p, data) }

func (s *memStore) setLocked(p string, data []byte, version int32) (int32, error) {
	n := s.nodes[p]
	if n == nil {
		return 0, noNode("set", p)
	}
	if version >= 0 && version != n.version {
		return 0, fmt.Errorf("memstore: set %s at version %d, is %d: %w", p, version, n.version, zk.ErrBadVersion)
	}
	n.data, n.version = slices.Clone(data), n.version+1
	s.fireLocked("e"+p, gozk.EventNodeDataChanged, p)
	return n.version, nil
}

func (s *memStore) SetVersion(p string, data []byte, version int32) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.setLocked(p, data, version)
}

func (s *memStore) SetVersionFenced(p string, data []byte, version int32, create bool, fence string, fenceVersion int32) (int32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.nodes[fence]; f == nil || f.version != fenceVersion {
		return 0, fmt.Errorf("%w: %s is no longer at version %d; %s not written", zk.ErrFenced, fence, fenceVersion, p)
	}
	if create {
		return 0, s.createLocked(p, data)
	}
	return s.setLocked(p, data, version)
}

func (s *memStore) EnsurePath(p string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur := ""
	for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
		cur += "/" + part
		if s.nodes[cur] == nil {
			if err := s.createLocked(cur, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

// Delete removes a node (a missing one is no error, as zk.Client's Delete).
func (s *memStore) Delete(p string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.nodes[p] == nil {
		return nil
	}
	delete(s.nodes, p)
	s.fireLocked("e"+p, gozk.EventNodeDeleted, p)
	s.fireLocked("c"+path.Dir(p), gozk.EventNodeChildrenChanged, path.Dir(p))
	return nil
}

func (s *memStore) NewSessions() (<-chan struct{}, func()) { return make(chan struct{}), func() {} }

// register creates broker id's registration at addr ("host:port"), as zk.BrokerRegistry does, and returns
// its broker epoch.
func (s *memStore) register(id int32, addr string) int64 {
	s.EnsurePath(zk.BrokerIDsPath)
	host, port, _ := strings.Cut(addr, ":")
	if err := s.CreateEphemeral(zk.BrokerIDPath(int(id)), []byte(host+"-0:"+host+":"+port)); err != nil {
		panic(err)
	}
	_, e, _ := s.GetCreated(zk.BrokerIDPath(int(id)))
	return e
}

// reregister replaces broker id's registration with a new one in one step, as a controller that was
// paused sees a broker that restarted and registered again: one children event, the same id, a new epoch.
func (s *memStore) reregister(id int32, addr string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := zk.BrokerIDPath(int(id))
	host, port, _ := strings.Cut(addr, ":")
	s.zxid++
	s.nodes[p] = &memNode{data: []byte(host + "-1:" + host + ":" + port), czxid: s.zxid}
	s.fireLocked("c"+path.Dir(p), gozk.EventNodeChildrenChanged, path.Dir(p))
	return s.zxid
}

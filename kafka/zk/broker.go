package zk

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// BrokerRegistry is a broker's side of the registry (paper §3.2, "broker registry"): an ephemeral node
// /brokers/ids/<id> = "<host>-<ms>:<host>:<port>" and, for every topic it serves, an ephemeral node
// /brokers/topics/<topic>/<id> holding the topic's partition count on this broker. When its session expires
// it registers everything again in the new one. It satisfies kafka/broker's Registrar.
type BrokerRegistry struct {
	c       *Client
	id      int
	host    string
	port    int
	timeout time.Duration
	log     *slog.Logger

	epoch atomic.Int64 // the czxid of this broker's current registration (Broker.Epoch)
	json  atomic.Bool  // register in 0.8's JSON (UseJSON)

	mu         sync.Mutex
	registered bool // RegisterBroker has run: a new session registers the broker again
	topics     map[string]int
	stop       chan struct{}
	done       chan struct{}
	closed     bool
}

// NewBrokerRegistry connects to ZooKeeper (connect may carry a chroot) and registers broker brokerID at
// host:port. A broker listening on every interface (host "", "0.0.0.0" or "::") registers the machine's host
// name if it resolves, else 127.0.0.1.
func NewBrokerRegistry(connect string, brokerID int, host string, port int, sessionTimeout time.Duration) (*BrokerRegistry, error) {
	return NewBrokerRegistryOptions(connect, brokerID, host, port, Options{SessionTimeout: sessionTimeout})
}

// NewBrokerRegistryOptions is NewBrokerRegistry with every client option (connect timeout, logger).
func NewBrokerRegistryOptions(connect string, brokerID int, host string, port int, o Options) (*BrokerRegistry, error) {
	r, err := OpenBrokerRegistry(connect, brokerID, host, port, o)
	if err != nil {
		return nil, err
	}
	if err := r.RegisterBroker(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// OpenBrokerRegistry connects to ZooKeeper as NewBrokerRegistryOptions does but registers nothing yet:
// RegisterBroker creates /brokers/ids/<id>, once the broker can be reached at host:port (a broker that is
// registered before it listens sends the clients that find it there a refused connection; 0.7's server
// started its socket server first too). Topics may be registered before.
func OpenBrokerRegistry(connect string, brokerID int, host string, port int, o Options) (*BrokerRegistry, error) {
	if brokerID < 0 || port <= 0 || port > 65535 {
		return nil, fmt.Errorf("zk: register broker %d at %s:%d: bad id or port", brokerID, host, port)
	}
	host = advertisedHost(host)
	c, err := Open(connect, o)
	if err != nil {
		return nil, err
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 6 * time.Second
	}
	r := &BrokerRegistry{c: c, id: brokerID, host: host, port: port, timeout: o.SessionTimeout,
		log: c.log.With("broker", brokerID), topics: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
	sessions, cancel := c.NewSessions()
	go r.reregister(sessions, cancel)
	return r, nil
}

// UseJSON makes the registration Kafka 0.8's JSON, {"jmx_port":-1,"timestamp":"<ms>","host":"<host>",
// "version":1,"port":<port>}, which 0.8's clients parse, instead of 0.7's "<host>-<ms>:<host>:<port>", which
// 0.7's parse (docs/PROTOCOL.md §5); ParseBroker reads both. Call it before RegisterBroker.
func (r *BrokerRegistry) UseJSON() { r.json.Store(true) }

// RegisterBroker creates /brokers/ids/<id> (registerBroker); from then on a new session registers the
// broker again. Calling it again does nothing.
func (r *BrokerRegistry) RegisterBroker() error {
	r.mu.Lock()
	done := r.registered
	r.mu.Unlock()
	if done {
		return nil
	}
	if err := r.registerBroker(); err != nil {
		return err
	}
	r.mu.Lock()
	r.registered = true
	r.mu.Unlock()
	r.log.Info("broker registered", "path", BrokerIDPath(r.id), "host", r.host, "port", r.port)
	return nil
}

// Client is the registry's ZooKeeper session.
func (r *BrokerRegistry) Client() *Client { return r.c }

// Epoch is the broker epoch of this broker's current registration (Broker.Epoch): it changes when a new
// session registers the broker again.
func (r *BrokerRegistry) Epoch() int64 { return r.epoch.Load() }

// registerBroker creates /brokers/ids/<id>. A node left by this broker's previous, not yet expired session
// (a quick restart) is waited out for one session timeout; after that the id belongs to someone else.
func (r *BrokerRegistry) registerBroker() error {
	p := BrokerIDPath(r.id)
	deadline := time.Now().Add(r.timeout + time.Second)
	for {
		ms := strconv.FormatInt(time.Now().UnixMilli(), 10)
		data := r.host + "-" + ms + ":" + r.host + ":" + strconv.Itoa(r.port)
		if r.json.Load() {
			b, _ := json.Marshal(registration08{JMXPort: -1, Timestamp: ms, Host: r.host, Version: 1, Port: r.port})
			data = string(b)
		}
		err := r.c.CreateEphemeral(p, []byte(data))
		if err == nil || r.ownedByUs(p, err) {
			return r.readEpoch(p)
		}
		if !errors.Is(err, ErrNodeExists) {
			return fmt.Errorf("zk: register broker %d: %w", r.id, err)
		}
		if time.Now().After(deadline) {
			old, _ := r.c.Get(p)
			return fmt.Errorf("%w: %s holds %q", ErrBrokerIDTaken, p, old)
		}
		select {
		case <-r.stop:
			return ErrClosed
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// readEpoch records the czxid of the registration this session just made as the broker epoch.
func (r *BrokerRegistry) readEpoch(p string) error {
	a, _ := r.c.abs(p)
	ok, st, err := r.c.conn.Exists(a)
	switch {
	case err != nil:
		return fmt.Errorf("zk: register broker %d: read its epoch: %w", r.id, err)
	case !ok || st.EphemeralOwner != r.c.SessionID():
		return fmt.Errorf("zk: register broker %d: %s is gone or not this session's right after it was created", r.id, p)
	}
	r.epoch.Store(st.Czxid)
	return nil
}

// ownedByUs reports whether err is "node exists" for a node this very session created (a create retried
// after a lost answer).
func (r *BrokerRegistry) ownedByUs(p string, err error) bool {
	if !errors.Is(err, ErrNodeExists) {
		return false
	}
	a, _ := r.c.abs(p)
	ok, st, err := r.c.conn.Exists(a)
	return err == nil && ok && st.EphemeralOwner == r.c.SessionID()
}

// RegisterTopic announces that this broker serves topic with the given number of partitions (0.7 registered a
// topic when its first log was created). Calling it again updates the count.
func (r *BrokerRegistry) RegisterTopic(topic string, partitions int) error {
	if partitions <= 0 {
		return fmt.Errorf("zk: register topic %q on broker %d: bad partition count %d", topic, r.id, partitions)
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return ErrClosed
	}
	if r.topics[topic] == partitions {
		r.mu.Unlock()
		return nil
	}
	r.topics[topic] = partitions
	r.mu.Unlock()
	return r.registerTopic(topic, partitions)
}

func (r *BrokerRegistry) registerTopic(topic string, partitions int) error {
	p := BrokerTopicBrokerPath(topic, r.id)
	data := []byte(strconv.Itoa(partitions))
	for range 3 {
		err := r.c.CreateEphemeral(p, data)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrNodeExists) {
			return fmt.Errorf("zk: register topic %q on broker %d: %w", topic, r.id, err)
		}
		if r.ownedByUs(p, err) {
			return r.c.Set(p, data)
		}
		// Left by this broker's previous session: the id node is ours, so is this one.
		if err := r.c.Delete(p); err != nil {
			return err
		}
	}
	return fmt.Errorf("zk: register topic %q on broker %d: %s keeps coming back", topic, r.id, p)
}

// reregister is 0.7's handleNewSession: a new session has none of the old one's ephemeral nodes.
func (r *BrokerRegistry) reregister(sessions <-chan struct{}, cancel func()) {
	defer close(r.done)
	defer cancel()
	for {
		select {
		case <-r.stop:
			return
		case <-sessions:
		}
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			err := r.registerAll()
			if err == nil {
				r.log.Info("broker registered again in a new session")
				break
			}
			r.log.Warn("re-registration failed", "err", err, "retry", backoff)
			select {
			case <-r.stop:
				return
			case <-time.After(backoff):
			}
		}
	}
}

func (r *BrokerRegistry) registerAll() error {
	r.mu.Lock()
	registered := r.registered
	r.mu.Unlock()
	if registered {
		if err := r.registerBroker(); err != nil {
			return err
		}
	}
	r.mu.Lock()
	topics := make(map[string]int, len(r.topics))
	for t, n := range r.topics {
		topics[t] = n
	}
	r.mu.Unlock()
	for t, n := range topics {
		if err := r.registerTopic(t, n); err != nil {
			return err
		}
	}
	return nil
}

// Close deregisters the broker by ending its session.
func (r *BrokerRegistry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	<-r.done
	return r.c.Close()
}

// advertisedHost is the host a broker listening on host tells others to connect to.
func advertisedHost(host string) string {
	if host != "" && host != "0.0.0.0" && host != "::" {
		return host
	}
	if h, err := os.Hostname(); err == nil && h != "" {
		if _, err := net.LookupHost(h); err == nil {
			return h
		}
	}
	return "127.0.0.1"
}

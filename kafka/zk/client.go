package zk

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	gozk "github.com/go-zookeeper/zk"
)

// DefaultConnectTimeout is 0.7's zk.connectiontimeout.ms (6000).
const DefaultConnectTimeout = 6 * time.Second

// Options tune Open. Zero values take the defaults.
type Options struct {
	SessionTimeout time.Duration // zk.sessiontimeout.ms (0.7 default 6000)
	ConnectTimeout time.Duration // zk.connectiontimeout.ms: how long Open waits for the first session
	Logger         *slog.Logger  // gets component=zk; nil: slog.Default()
}

// Client is one ZooKeeper session shared by a broker, producer or consumer. Every path it takes is relative to
// the chroot of the connect string; paths in the events it hands out are relative too.
type Client struct {
	conn    *gozk.Conn
	chroot  string // "" or "/a/b"
	connect string
	log     *slog.Logger

	mu      sync.Mutex
	session int64 // id of the current session, 0 before the first
	subs    map[chan struct{}]struct{}
	closed  bool
	done    chan struct{}
	started chan struct{}
}

// Connect opens a session on the ensemble named by connect, "host:port,host:port[/chroot]" (the Java client's
// syntax), and waits up to DefaultConnectTimeout for it.
func Connect(connect string, sessionTimeout time.Duration) (*Client, error) {
	return Open(connect, Options{SessionTimeout: sessionTimeout})
}

// ParseConnect splits a connect string into its servers and its chroot ("" when there is none).
func ParseConnect(connect string) (servers []string, chroot string, err error) {
	hosts := connect
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], strings.TrimRight(connect[i:], "/")
		if strings.Contains(chroot, "//") || strings.Contains(chroot+"/", "/./") ||
			strings.Contains(chroot+"/", "/../") {
			return nil, "", fmt.Errorf("%w %q: chroot %q", ErrBadConnect, connect, chroot)
		}
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			servers = append(servers, h)
		}
	}
	if len(servers) == 0 {
		return nil, "", fmt.Errorf("%w %q: no host:port", ErrBadConnect, connect)
	}
	return servers, chroot, nil
}

// Open is Connect with every option.
func Open(connect string, o Options) (*Client, error) {
	servers, chroot, err := ParseConnect(connect)
	if err != nil {
		return nil, err
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 6 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	lg := o.Logger.With("component", "zk", "zk.connect", connect)
	conn, events, err := gozk.Connect(servers, o.SessionTimeout, gozk.WithLogger(slogAdapter{lg}))
	if err != nil {
		return nil, fmt.Errorf("zk: connect %q: %w", connect, err)
	}
	c := &Client{conn: conn, chroot: chroot, connect: connect, log: lg,
		subs: map[chan struct{}]struct{}{}, done: make(chan struct{}), started: make(chan struct{})}
	go c.watchSession(events)
	select {
	case <-c.started:
		return c, nil
	case <-time.After(o.ConnectTimeout):
		conn.Close()
		return nil, fmt.Errorf("%w: %q within %v", ErrConnectTimeout, connect, o.ConnectTimeout)
	}
}

// watchSession drains the library's event channel (it must never fill) and turns every session after the
// first into a signal for NewSessions subscribers: ephemeral nodes and watches died with the old one.
func (c *Client) watchSession(events <-chan gozk.Event) {
	defer close(c.done)
	for ev := range events {
		if ev.Type != gozk.EventSession {
			continue
		}
		switch ev.State {
		case gozk.StateExpired:
			c.log.Warn("session expired; a new one will be opened")
		case gozk.StateHasSession:
			id := c.conn.SessionID()
			c.mu.Lock()
			prev := c.session
			c.session = id
			if prev == 0 {
				close(c.started)
			} else if id != prev {
				c.log.Info("new session", "session", fmt.Sprintf("%#x", id), "previous", fmt.Sprintf("%#x", prev))
				for ch := range c.subs {
					select {
					case ch <- struct{}{}:
					default: // one pending signal is enough
					}
				}
			}
			c.mu.Unlock()
		}
	}
}

// NewSessions returns a channel that receives a value each time a new session replaces an expired one (0.7's
// handleNewSession): whoever holds ephemeral nodes or watches must re-create them then. cancel unsubscribes.
func (c *Client) NewSessions() (ch <-chan struct{}, cancel func()) {
	s := make(chan struct{}, 1)
	c.mu.Lock()
	c.subs[s] = struct{}{}
	c.mu.Unlock()
	return s, func() {
		c.mu.Lock()
		delete(c.subs, s)
		c.mu.Unlock()
	}
}

// SessionID is the id of the current session.
func (c *Client) SessionID() int64 { return c.conn.SessionID() }

// Close ends the session: every ephemeral node it created goes away.
func (c *Client) Close() error {
	c.mu.Lock()
	already := c.closed
	c.closed = true
	c.mu.Unlock()
	if !already {
		c.conn.Close()
		<-c.done
	}
	return nil
}

func (c *Client) abs(p string) (string, error) {
	if p == "" || p[0] != '/' || (len(p) > 1 && p[len(p)-1] == '/') {
		return "", fmt.Errorf("%w %q: not an absolute node path", ErrBadPath, p)
	}
	if p == "/" && c.chroot != "" {
		return c.chroot, nil
	}
	return c.chroot + p, nil
}

func (c *Client) rel(p string) string {
	if c.chroot == "" {
		return p
	}
	if r := strings.TrimPrefix(p, c.chroot); r != p {
		if r == "" {
			return "/"
		}
		return r
	}
	return p
}

// relay forwards a one-shot watch event with its path made relative to the chroot.
func (c *Client) relay(in <-chan gozk.Event) <-chan gozk.Event {
	if c.chroot == "" {
		return in
	}
	out := make(chan gozk.Event, 1)
	go func() {
		defer close(out)
		for ev := range in {
			ev.Path = c.rel(ev.Path)
			out <- ev
		}
	}()
	return out
}

func opErr(op, p string, err error) error { return fmt.Errorf("zk: %s %s: %w", op, p, err) }

// Get returns the data of a node.
func (c *Client) Get(p string) ([]byte, error) {
	a, err := c.abs(p)
	if err != nil {
		return nil, err
	}
	data, _, err := c.conn.Get(a)
	if err != nil {
		return nil, opErr("get", p, err)
	}
	return data, nil
}

// GetW returns the data of a node and a one-shot watch on it.
func (c *Client) GetW(p string) ([]byte, <-chan gozk.Event, error) {
	a, err := c.abs(p)
	if err != nil {
		return nil, nil, err
	}
	data, _, w, err := c.conn.GetW(a)
	if err != nil {
		return nil, nil, opErr("get", p, err)
	}
	return data, c.relay(w), nil
}

// Children returns the names of a node's children (unsorted).
func (c *Client) Children(p string) ([]string, error) {
	a, err := c.abs(p)
	if err != nil {
		return nil, err
	}
	ch, _, err := c.conn.Children(a)
	if err != nil {
		return nil, opErr("children", p, err)
	}
	return ch, nil
}

// ChildrenW returns the names of a node's children and a one-shot watch on the list.
func (c *Client) ChildrenW(p string) ([]string, <-chan gozk.Event, error) {
	a, err := c.abs(p)
	if err != nil {
		return nil, nil, err
	}
	ch, _, w, err := c.conn.ChildrenW(a)
	if err != nil {
		return nil, nil, opErr("children", p, err)
	}
	return ch, c.relay(w), nil
}

// Exists reports whether a node exists.
func (c *Client) Exists(p string) (bool, error) {
	a, err := c.abs(p)
	if err != nil {
		return false, err
	}
	ok, _, err := c.conn.Exists(a)
	if err != nil {
		return false, opErr("exists", p, err)
	}
	return ok, nil
}

// ExistsW reports whether a node exists and sets a one-shot watch on its creation, change or deletion.
func (c *Client) ExistsW(p string) (bool, <-chan gozk.Event, error) {
	a, err := c.abs(p)
	if err != nil {
		return false, nil, err
	}
	ok, _, w, err := c.conn.ExistsW(a)
	if err != nil {
		return false, nil, opErr("exists", p, err)
	}
	return ok, c.relay(w), nil
}

// EnsurePath creates p and its missing parents as empty persistent nodes; existing ones are left alone.
func (c *Client) EnsurePath(p string) error {
	a, err := c.abs(p)
	if err != nil {
		return err
	}
	return c.ensureAbs(a)
}

func (c *Client) ensureAbs(a string) error {
	if a == "/" {
		return nil
	}
	if ok, _, err := c.conn.Exists(a); err == nil && ok {
		return nil
	}
	if err := c.ensureAbs(parent(a)); err != nil {
		return err
	}
	if _, err := c.conn.Create(a, nil, 0, gozk.WorldACL(gozk.PermAll)); err != nil && !errors.Is(err, gozk.ErrNodeExists) {
		return opErr("create", c.rel(a), err)
	}
	return nil
}

func (c *Client) create(p string, data []byte, flags int32) error {
	a, err := c.abs(p)
	if err != nil {
		return err
	}
	if err := c.ensureAbs(parent(a)); err != nil {
		return err
	}
	if _, err := c.conn.Create(a, data, flags, gozk.WorldACL(gozk.PermAll)); err != nil {
		return opErr("create", p, err)
	}
	return nil
}

// CreateEphemeral creates an ephemeral node (it lives as long as this session) under persistent parents,
// creating the parents when missing. It fails with ErrNodeExists when the node is already there.
func (c *Client) CreateEphemeral(p string, data []byte) error {
	return c.create(p, data, gozk.FlagEphemeral)
}

// CreatePersistent creates a persistent node under persistent parents.
func (c *Client) CreatePersistent(p string, data []byte) error { return c.create(p, data, 0) }

// Set replaces the data of an existing node, whatever its version.
func (c *Client) Set(p string, data []byte) error {
	a, err := c.abs(p)
	if err != nil {
		return err
	}
	if _, err := c.conn.Set(a, data, -1); err != nil {
		return opErr("set", p, err)
	}
	return nil
}

// SetPersistent sets the data of a persistent node, creating it and its parents when missing (0.7's
// updatePersistentPath; the offset registry is written this way).
func (c *Client) SetPersistent(p string, data []byte) error {
	err := c.Set(p, data)
	if !errors.Is(err, gozk.ErrNoNode) {
		return err
	}
	if err = c.CreatePersistent(p, data); errors.Is(err, gozk.ErrNodeExists) {
		return c.Set(p, data)
	}
	return err
}

// Delete removes a node whatever its version; a missing node is not an error.
func (c *Client) Delete(p string) error {
	a, err := c.abs(p)
	if err != nil {
		return err
	}
	if err := c.conn.Delete(a, -1); err != nil && !errors.Is(err, gozk.ErrNoNode) {
		return opErr("delete", p, err)
	}
	return nil
}

// slogAdapter is the library's Logger on top of log/slog: routine connection chatter goes to Debug, failures
// to Warn.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Printf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	low := strings.ToLower(msg)
	if strings.Contains(low, "fail") || strings.Contains(low, "error") || strings.Contains(low, "expired") {
		a.l.Warn(msg)
		return
	}
	a.l.Debug(msg)
}

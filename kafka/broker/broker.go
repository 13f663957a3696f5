// Package broker is the Kafka server of the NetDB'11 paper (§3): a TCP
// server that appends producers' message sets to partition logs and sends
// log bytes to pulling consumers.
//
// The broker is deliberately simple (§3.1 "stateless broker"): it keeps no
// record of who consumed what. A PRODUCE appends a message set to one
// partition and is not answered (§5: the producer does not wait for
// acknowledgements). A FETCH names a byte offset and a size, and the answer is
// the log's bytes from there, sent from the segment file to the socket with
// sendfile (§3.1 "efficient transfer": no copy through user space, so the
// page cache is the only cache). OFFSETS tells a consumer where segments
// start so it can rewind.
//
// Concurrency: one goroutine per connection reads requests through a large
// bufio.Reader (a producer sending one message per request gets hundreds of
// requests per read system call) and answers them in order. Go's scheduler
// spreads those goroutines over GOMAXPROCS threads, so 0.7's num.threads
// (the size of its processor pool) is parsed but has no effect.
//
// Bad input never takes the broker down: a request that is too large,
// malformed or of an unknown id closes that one connection (logged with the
// remote address); a message set with a bad CRC, a bad topic name or a
// partition out of range drops that request (logged) and keeps the
// connection. The fetch error answers are described on (*Broker).Serve.
// Warnings a client can provoke at will are logged once per interval, with
// a count of those held back (ratelog.go).
//
// Resources are bounded (docs/ROBUSTNESS.md): request bodies larger than 64
// KiB are read only once the broker-wide budget queued.max.request.bytes
// admits them (memory.go); a connection silent for connections.max.idle.ms
// is closed; connections beyond max.connections.per.ip or max.connections
// are refused as they arrive, and running out of descriptors leaves the
// open connections served (limits.go).
//
// Reading order: one file per request type, named as in kafka/protocol, so
// a request can be followed by file name from its bytes to the log:
//
//	conn.go          the connection loop and the dispatch by request id
//	produce.go       PRODUCE: protocol/produce.go → log.Log.Append
//	multiproduce.go  MULTIPRODUCE: each part served as produce.go serves one
//	fetch.go         FETCH: protocol/fetch.go → log.Log.Read → sendfile
//	multifetch.go    MULTIFETCH: each part read as fetch.go reads one
//	offsets.go       OFFSETS: protocol/offsets.go → log.Log.Offsets
//	kafka08.go       the Kafka protocol as 0.8 defined it, on the same port; kafka08_*.go serve its requests
//	kafka08_fetch.go Fetch v0: log.Log.ReadView → sendfile, else log.Log.Locate → protocol08.Appender
//	logs.go          the connection's cache of partition logs
//	memory.go        the request memory budget
//	limits.go        connection limits and running out of descriptors
//	sendfile_*.go    how headers and log bytes reach the socket
//
// Life cycle: New opens the logs (recovering them after an unclean
// shutdown) and listens; Addr tells the address (port 0 picks a free one);
// Serve accepts connections until its context is cancelled or Close is
// called; Close stops accepting, closes every connection, closes the
// registrar and then the log manager, which writes the clean-shutdown marker.
package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/coalesce"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// Registrar registers topics in ZooKeeper (§3.2: brokers publish which
// topics and how many partitions they hold, so producers and consumers can
// find them). Package kafka/zk provides one; a nil Registrar means
// enable.zookeeper=false.
type Registrar interface {
	// RegisterTopic announces that this broker holds partitions
	// 0..partitions-1 of topic. It is called for every topic at start and
	// whenever a produce creates a new topic.
	RegisterTopic(topic string, partitions int) error
	// Close deregisters the broker; it is called by Broker.Close, possibly
	// while a RegisterTopic is in progress, which it should then make return.
	Close() error
}

// A Registrar that also has RegisterBroker() error (zk.OpenBrokerRegistry's)
// is told to register the broker itself once the broker listens.

// Options are the broker's collaborators.
type Options struct {
	Registrar Registrar    // nil: no ZooKeeper
	Logger    *slog.Logger // nil: slog.Default(); the broker's lines get component=broker
}

// Broker is one Kafka server.
type Broker struct {
	cfg      Config
	log      *slog.Logger
	logs     *log.Manager
	reg      Registrar
	repl     *replication.Manager // nil without ZooKeeper: no replicated topics
	ln       *net.TCPListener
	maxFetch int           // fetch sizes are capped here (max.socket.request.bytes)
	groups   *groupOffsets // offsets committed through the Kafka protocol (groupoffsets.go)
	coalesce coalesce.Rule // produce.coalesce.max.us (coalesce.go)
	sleepers *sleepers     // connections asleep with a mark (coalesce.go)

	mem   *requestMemory // queued.max.request.bytes (memory.go)
	reads readBuffers    // grown connection read buffers (readbuffer.go)
	lim   *limiters      // rate-limited warnings (ratelog.go)
	spare *os.File       // a descriptor kept to refuse waiting clients when out of them (limits.go)
	shed  atomic.Int64   // waiting clients refused so since the last log line

	refusing chan struct{} // refused connections being answered (refuse), at most maxRefusing
	evicted  atomic.Int64  // idle connections closed to let new ones in, since the start

	mu      sync.Mutex
	closing bool
	conns   map[*net.TCPConn]*connState
	perIP   map[netip.Addr]int // connections by remote address (limits.go)
	topics  map[string]bool    // topics known (and registered) so far
	pending []string           // new topics waiting for registerLoop

	connWG    sync.WaitGroup
	regWake   chan struct{} // signals registerLoop that pending is not empty
	stopping  chan struct{} // closed when Close starts
	regDone   chan struct{}
	closeOnce sync.Once
	closeErr  error
	done      chan struct{} // closed when Close has finished
}

// New opens the log manager on cfg.LogDir (running recovery if the last
// shutdown was not clean), registers the existing topics with
// opts.Registrar, and starts listening on cfg.Hostname:cfg.Port. The broker
// serves nothing until Serve is called.
func New(cfg Config, opts Options) (*Broker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b := &Broker{
		cfg:      cfg,
		reg:      opts.Registrar,
		maxFetch: cfg.MaxRequestBytes,
		coalesce: coalesce.Rule{Max: time.Duration(cfg.ProduceCoalesceMaxUs) * time.Microsecond}.Defaults(),
		conns:    make(map[*net.TCPConn]*connState),
		refusing: make(chan struct{}, maxRefusing),
		perIP:    make(map[netip.Addr]int),
		mem:      newRequestMemory(cfg.QueuedMaxRequestBytes),
		lim:      newLimiters(logInterval),
		topics:   make(map[string]bool),
		regWake:  make(chan struct{}, 1),
		stopping: make(chan struct{}),
		regDone:  make(chan struct{}),
		done:     make(chan struct{}),
	}
	root := opts.Logger
	if root == nil {
		root = slog.Default()
	}
	b.log = root.With("component", "broker")
	b.sleepers = newSleepers(b.coalesce.Max, b.stopping)
	lc := cfg.LogConfig()
	lc.Logger = opts.Logger // as given: the log manager adds component=log (nil: slog.Default())
	logs, err := log.NewManager(cfg.LogDir, lc)
	if err != nil {
		return nil, fmt.Errorf("broker: open logs in %s: %w", cfg.LogDir, err)
	}
	b.logs = logs
	if b.groups, err = openGroupOffsets(cfg.LogDir); err != nil {
		logs.Close()
		return nil, err
	}
	addr := net.JoinHostPort(cfg.Hostname, strconv.Itoa(cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		logs.Close()
		return nil, fmt.Errorf("broker: listen on %s: %w", addr, err)
	}
	b.ln = ln.(*net.TCPListener)
	// docs/PROTOCOL.md §10: a broker registered in ZooKeeper also holds
	// replicas of replicated topics and is a candidate for controller, on
	// the registry's session.
	if b.reg != nil && cfg.EnableZooKeeper {
		rc := cfg.ReplicationConfig()
		rc.Logger = root // replication adds component=replication
		if b.repl, err = replication.NewOnRegistrar(b.reg, rc, logs); err != nil {
			ln.Close()
			logs.Close()
			return nil, fmt.Errorf("broker: replication: %w", err)
		}
	}
	for _, t := range logs.Topics() {
		if b.repl != nil && b.repl.Replicated(t) {
			continue // registered as a replicated topic, not per broker
		}
		b.topics[t] = true
		if b.reg != nil {
			if err := b.reg.RegisterTopic(t, logs.Partitions(t)); err != nil {
				ln.Close()
				if b.repl != nil {
					b.repl.Close()
				}
				logs.Close()
				return nil, fmt.Errorf("broker: register topic %q: %w", t, err)
			}
		}
	}
	// The broker listens: now it may be found. A registrar that waits to be told (zk.OpenBrokerRegistry)
	// registers the broker here, so no client finds it before it can connect.
	if r, ok := b.reg.(interface{ RegisterBroker() error }); ok && cfg.EnableZooKeeper {
		if err := r.RegisterBroker(); err != nil {
			ln.Close()
			if b.repl != nil {
				b.repl.Close()
			}
			logs.Close()
			return nil, fmt.Errorf("broker: register in ZooKeeper: %w", err)
		}
	}
	if cfg.EnableZooKeeper && b.reg == nil {
		b.log.Warn("enable.zookeeper=true but no Registrar was given; not registering in ZooKeeper",
			"zk.connect", cfg.ZKConnect)
	}
	go b.registerLoop()
	go b.mem.run(b.stopping)
	b.spare, _ = os.Open(os.DevNull) // best effort: without it, shedding is skipped
	b.log.Info("started", "brokerid", cfg.BrokerID, "addr", b.ln.Addr().String(),
		"log.dir", cfg.LogDir, "topics", len(b.topics), "zookeeper", b.reg != nil)
	return b, nil
}

// Addr is the address the broker listens on; with port 0 it tells which port
// was picked.
func (b *Broker) Addr() net.Addr { return b.ln.Addr() }

// Replication is the broker's replica manager, nil without ZooKeeper.
func (b *Broker) Replication() *replication.Manager { return b.repl }

// Logs is the broker's log manager (for tools, tests and benchmarks).
func (b *Broker) Logs() *log.Manager { return b.logs }

// Config is the configuration the broker runs with.
func (b *Broker) Config() Config { return b.cfg }

// Serve accepts connections and serves them until ctx is cancelled or Close
// is called; it then shuts down as Close does and returns Close's error (nil
// after a clean shutdown). It returns an error without shutting down only if
// accepting fails permanently.
//
// Answers to fetches:
//   - FETCH: error 0 and up to maxSize bytes of the log from the offset,
//     stopping at the flushed end and at the end of the segment holding the
//     offset (the consumer fetches again from where it stopped). A maxSize
//     above max.socket.request.bytes is capped there.
//   - An offset before the log start or past its flushed end: error 1
//     (offset out of range), empty body.
//   - A negative maxSize: error 4 (invalid fetch size), empty body.
//   - A topic name that is not valid, or a partition outside
//     [0, partitions of the topic): error 3 (wrong partition), empty body.
//   - A valid topic and partition that nobody has produced to yet: error 0
//     and an empty body, as in 0.7, so consumers may start before producers.
//   - MULTIFETCH: error 0 and each part answered as above; the parts together
//     are capped at protocol.MaxResponseSize.
//   - OFFSETS on such a not-yet-created partition answers [0] for latest and
//     earliest, nothing for a time.
func (b *Broker) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { b.Close() })
	defer stop()
	var backoff time.Duration
	for {
		c, err := b.ln.AcceptTCP()
		if err != nil {
			if b.isClosing() {
				<-b.done
				return b.closeErr
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || isTemporary(err) {
				// Out of file descriptors and the like: keep serving the
				// connections there are, refuse one waiting client so it
				// is not left hanging, log once per interval, and retry.
				b.acceptFailed(err)
				backoff = min(max(2*backoff, 5*time.Millisecond), 100*time.Millisecond)
				time.Sleep(backoff)
				continue
			}
			return fmt.Errorf("broker: accept on %s: %w", b.ln.Addr(), err)
		}
		backoff = 0
		st, why := b.track(c)
		if why != "" {
			b.refuse(c, why)
			continue
		}
		go b.serveConn(c, st)
	}
}

// Close shuts the broker down: stop accepting, close every connection and
// wait for its goroutine, close the registrar, close the log manager (which
// flushes and writes the clean-shutdown marker). It is safe to call more than
// once and from several goroutines; all calls return the same error.
func (b *Broker) Close() error {
	b.closeOnce.Do(func() {
		b.mu.Lock()
		b.closing = true
		close(b.stopping)
		for c := range b.conns {
			c.Close()
		}
		b.mu.Unlock()
		var errs []error
		if err := b.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
		if b.repl != nil {
			// Before waiting for the connections: it wakes the producers
			// waiting for their followers, and stops this broker's fetchers.
			if err := b.repl.Close(); err != nil {
				errs = append(errs, err)
			}
		}
		b.connWG.Wait()
		if b.reg != nil {
			// Before waiting for registerLoop: closing the registrar makes
			// a RegisterTopic stuck on an unreachable ZooKeeper return.
			if err := b.reg.Close(); err != nil {
				errs = append(errs, fmt.Errorf("broker: close registrar: %w", err))
			}
		}
		<-b.regDone
		b.mem.close()
		if b.spare != nil {
			b.spare.Close()
		}
		wgrown, wrefused := b.logs.WriteBufferStats() // before Close hands them back
		if err := b.logs.Close(); err != nil {
			errs = append(errs, err)
		}
		b.closeErr = errors.Join(errs...)
		sleeps, woken := b.CoalesceStats()
		grown, refused := b.ReadBufferStats()
		b.log.Info("stopped", "addr", b.ln.Addr().String(), "coalesced_sleeps", sleeps, "ended_by_bound", woken, "early_acks", b.EarlyAcks(),
			"grown_read_buffers", grown, "read_buffers_refused", refused,
			"grown_write_buffers", wgrown, "write_buffers_refused", wrefused, "err", b.closeErr)
		close(b.done)
	})
	<-b.done
	return b.closeErr
}

func (b *Broker) isClosing() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closing
}

// noteTopic is called after a produce found or created a partition of topic;
// the first time it queues the topic for registration in ZooKeeper. It never
// blocks: the queue is unbounded (it holds at most one entry per topic).
func (b *Broker) noteTopic(topic string) {
	b.mu.Lock()
	queue := !b.topics[topic] && b.reg != nil
	b.topics[topic] = true
	if queue {
		b.pending = append(b.pending, topic)
	}
	b.mu.Unlock()
	if queue {
		select {
		case b.regWake <- struct{}{}:
		default: // already signalled
		}
	}
}

// registerLoop registers new topics off the produce path: a ZooKeeper round
// trip must not stall the producer that created the topic (§3.2: brokers
// announce their topics so producers and consumers can find them).
func (b *Broker) registerLoop() {
	defer close(b.regDone)
	for {
		select {
		case <-b.stopping:
			return
		case <-b.regWake:
		}
		b.mu.Lock()
		topics := b.pending
		b.pending = nil
		b.mu.Unlock()
		for _, t := range topics {
			select {
			case <-b.stopping:
				return
			default:
			}
			n := b.logs.Partitions(t)
			if err := b.reg.RegisterTopic(t, n); err != nil {
				b.log.Error("register topic in ZooKeeper", "topic", t, "partitions", n, "err", err)
			} else {
				b.log.Info("registered new topic", "topic", t, "partitions", n)
			}
		}
	}
}

package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/coalesce"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// This file is the connection loop and the dispatch; each request is served
// in the file named after it (see the package doc).

// readBufferSize is the per-connection bufio.Reader: a batch-1 producer's
// ~230-byte requests arrive a few hundred per read system call when the
// broker is behind (and the buffer of such a producer's connection may grow,
// readbuffer.go). A body of at most smallRequestBytes is served where it
// lies in this buffer (readBody), so the buffer must hold the largest.
const readBufferSize = 64 << 10

var _ [readBufferSize - smallRequestBytes]struct{} // a compile error if the buffer cannot hold a small body

// conn is the state of one client connection, owned by its goroutine.
type conn struct {
	b      *Broker
	c      *net.TCPConn
	remote string
	r      *bufio.Reader
	src    *fillReader // what r reads from (readbuffer.go)
	grown  bool        // r is grownReadBufferSize, charged to the request memory budget
	dec    protocol.Decoder
	hdr    [protocol.RequestHeaderSize]byte
	held   int    // bytes of a small body served in place in r, discarded after it is served
	big    []byte // a large body's buffer from the request memory budget, while it is served
	out    []byte // response headers, reused
	send   sender // writes headers and sendfiles chunks
	logs   map[partKey]*log.Log
	last   lastLog // the entry of logs used last (cached)

	st      *connState    // what the broker knows of this connection (limits.go)
	idleSet bool          // st.idleSince was set by rearm and not cleared yet
	idle    time.Duration // connections.max.idle.ms; 0: never
	armed   bool          // the read deadline was set, at armedAt (rearm)
	armedAt time.Time
	unarmed int // requests read since the read deadline was last pushed back

	parts     map[partKey]*replication.Partition // replicated partitions looked up (replicas.go)
	waitCh    chan struct{}                      // REPLICA_FETCH's wake-up, reused
	waitTimer *time.Timer                        // REPLICA_FETCH's replica.fetch.wait.max.ms, reused
	rparts    []*replication.Partition           // REPLICA_FETCH scratch
	ranswers  []replicaAnswer                    // REPLICA_FETCH scratch
	epochs    []protocol.EpochEntry              // REPLICA_FETCH scratch
	chunks    []log.Chunk                        // MULTIFETCH scratch
	codes     []protocol.ErrorCode
	ans       *answerer // acks=-1 answers waiting for their commits (ackedanswers.go); nil until the first

	co coalescer // an unacknowledged producer's read side (coalesce.go)

	speaks speaks  // the protocol of this connection, decided by its first request
	k08    *conn08 // the Kafka protocol's state (kafka08.go), once it speaks it
}

// speaks is which protocol a connection speaks.
type speaks int8

const (
	speaksUndecided speaks = iota
	speaks07               // package protocol: the paper's, 0.7's and replication's requests
	speaks08               // package protocol08: the Kafka protocol as 0.8 defined it
)

// serveConn reads requests one after the other and answers them in order
// (docs/PROTOCOL.md §4), until the client hangs up, the broker shuts down, a
// request is bad or the connection stays silent for connections.max.idle.ms.
func (b *Broker) serveConn(c *net.TCPConn, st *connState) {
	defer b.untrack(c)
	var cn *conn
	defer func() { cn.stopAnswers(); cn.releaseRead() }()
	src := &fillReader{c: c}
	cn = &conn{
		b:      b,
		c:      c,
		st:     st,
		remote: c.RemoteAddr().String(),
		r:      bufio.NewReaderSize(src, readBufferSize),
		src:    src,
		out:    make([]byte, 0, 512),
		logs:   make(map[partKey]*log.Log),
	}
	if b.cfg.ConnectionsMaxIdleMs > 0 {
		cn.idle = time.Duration(b.cfg.ConnectionsMaxIdleMs) * time.Millisecond
	}
	if b.cfg.SocketSendBuffer > 0 {
		c.SetWriteBuffer(b.cfg.SocketSendBuffer)
	}
	if b.cfg.SocketReceiveBuffer > 0 {
		c.SetReadBuffer(b.cfg.SocketReceiveBuffer)
	}
	if err := cn.send.init(c); err != nil {
		b.log.Warn("cannot use connection", "remote", cn.remote, "err", err)
		return
	}
	cn.co.sockOK = cn.co.sock.init(c) == nil
	cn.co.ok = b.coalesce.Max > 0 && cn.co.sockOK
	b.log.Debug("connection opened", "remote", cn.remote)
	for {
		var id int16
		var n int
		var err error
		cn.armIdle()
		if cn.co.quiet && cn.src.full {
			cn.growRead() // this producer outruns the read buffer (readbuffer.go)
		}
		if cn.co.quiet && cn.r.Buffered() == 0 {
			// Nothing to answer and nothing left to read: acknowledge what
			// came before waiting for more if the wait is an ordinary read
			// (ackFirst), then wait.
			if cn.co.ackFirst() {
				if err = cn.co.sock.ackNow(); err == nil {
					cn.b.sleepers.acks.Add(1)
				}
			}
			cn.co.unacked = 0
			if err == nil && cn.co.ok {
				err = cn.sleep()
			}
		}
		cn.co.quiet = false
		if err == nil {
			id, n, err = cn.readHeader()
		}
		if cn.idleSet {
			cn.st.idleSince.Store(0)
			cn.idleSet = false
		}
		var body []byte
		if err == nil && cn.speaks == speaks07 {
			err = protocol.CheckRequestID(id)
		}
		if err == nil {
			body, err = cn.readBody(id, n)
			cn.co.unacked += protocol.RequestHeaderSize + n
		}
		if err == nil && cn.speaks == speaksUndecided {
			err = cn.decide(id, body)
		}
		if err == nil {
			if cn.speaks == speaks08 {
				err = cn.handle08(id, body)
			} else {
				err = cn.handle(id, body)
			}
		}
		cn.releaseBody()
		if err != nil {
			cn.closing(err)
			return
		}
		if !cn.co.quiet {
			// A client that waits for answers here is never made to wait on
			// a mark again (coalesce.go).
			cn.co.ok = false
		}
	}
}

// closing logs why the connection is about to close.
func (cn *conn) closing(err error) {
	b := cn.b
	switch {
	case err == io.EOF:
		b.log.Debug("connection closed by client", "remote", cn.remote)
	case clientGone(err):
		// The client went away while we wrote to it (a consumer that
		// closes with a fetch in flight) or reset the connection: its
		// choice, not the broker's problem.
		b.log.Debug("connection closed by client", "remote", cn.remote, "err", err)
	case b.isClosing():
		b.log.Debug("connection closed by shutdown", "remote", cn.remote)
	case errors.Is(err, os.ErrDeadlineExceeded):
		if ok, held := b.lim.idle.allow(); ok {
			b.log.Info("closing idle connection", "remote", cn.remote,
				"connections.max.idle.ms", b.cfg.ConnectionsMaxIdleMs, "alsoClosedSinceLastLine", held)
		}
	default:
		// Too large, malformed, unknown id, truncated or a write error:
		// close this connection, keep serving everyone else.
		if ok, held := b.lim.badRequest.allow(); ok {
			b.log.Warn("closing connection", "remote", cn.remote, "reason", err, "alsoClosedSinceLastLine", held)
		}
	}
}

// clientGone reports whether err says the peer closed or reset the
// connection: EPIPE on a write after the client's close, ECONNRESET when
// the client closed with bytes unread.
func clientGone(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// armIdle pushes the read deadline connections.max.idle.ms into the
// future between requests: whenever the next read may block (nothing
// buffered), and every 256 requests anyway. It inlines; rearm does it.
func (cn *conn) armIdle() {
	if cn.unarmed++; cn.unarmed >= 256 || cn.r.Buffered() == 0 {
		cn.rearm(true)
	}
}

// idleSlack is the fraction of connections.max.idle.ms by which the read
// deadline is set further out than the idle time, so that it needs moving
// only once per slack: a connection is closed after between idle and
// idle·(1+1/64) of silence (10 min 9.4 s at the 600,000 ms default).
const idleSlack = 64

// rearm makes sure the read deadline is at least connections.max.idle.ms
// away (if there is one); between says the connection is between requests,
// so with nothing buffered it is idle from now (connState). A batch-1 producer's requests find the buffer
// empty whenever the broker keeps up, so this runs for every request;
// moving the deadline (SetReadDeadline, ~650 instructions) is done only
// once the last move is idle/idleSlack old, and costs a clock read
// otherwise.
func (cn *conn) rearm(between bool) {
	cn.unarmed = 0
	if cn.idle <= 0 {
		return
	}
	now := time.Now()
	if between && cn.r.Buffered() == 0 { // waiting for the next request: idle, and evictable at a limit (limits.go)
		cn.st.idleSince.Store(now.UnixNano())
		cn.idleSet = true
	}
	if cn.armed && now.Sub(cn.armedAt) < cn.idle/idleSlack {
		return // the deadline is armedAt+idle+slack, more than idle from now
	}
	cn.armed, cn.armedAt = true, now
	cn.c.SetReadDeadline(now.Add(cn.idle + cn.idle/idleSlack))
}

// readHeader reads the size field and id of the next request (for the Kafka
// protocol, its api_key: serveConn checks it against the protocol spoken). With all six
// bytes buffered (a client that sends faster than the broker serves) they
// are checked where they lie; else ReadRequestHeader reads them, which
// refuses a too-large size field as soon as its four bytes have come.
func (cn *conn) readHeader() (int16, int, error) {
	if cn.r.Buffered() >= protocol.RequestHeaderSize {
		h, _ := cn.r.Peek(protocol.RequestHeaderSize) // buffered: cannot fail
		cn.r.Discard(protocol.RequestHeaderSize)
		return protocol.ParseRequestFrame(h, cn.b.cfg.MaxRequestBytes)
	}
	if cn.co.sock.n > coalesce.Off {
		if err := cn.settle(); err != nil {
			return 0, 0, err
		}
	}
	return protocol.ReadRequestFrame(cn.r, cn.hdr[:], cn.b.cfg.MaxRequestBytes)
}

// bodyChunk: a large body is read this much at a time, its deadline moved
// before each (bodyDeadline).
const bodyChunk = 1 << 20

// bodyGrace is how long a large body may take beyond what
// request.min.bytes.per.sec asks of it.
const bodyGrace = 10 * time.Second

// readBody reads the n-byte body of a request whose header was just read.
// A body of at most smallRequestBytes is served in place, in the
// connection's read buffer (bufio.Reader.Peek: no copy; the bytes stay
// valid until releaseBody discards them, and the connection reads nothing
// before that); a larger one waits for the broker's request memory budget
// (memory.go), at most queued.max.request.wait.ms, and is then read into a
// buffer of exactly n bytes, which releaseBody gives back (without a budget,
// into a fresh buffer grown as the bytes arrive, as 0.7 did). A large body
// must keep arriving at request.min.bytes.per.sec (bodyDeadline), so a
// client that trickles it cannot hold its share of the budget for long.
func (cn *conn) readBody(id int16, n int) ([]byte, error) {
	if cn.co.sock.n > coalesce.Off && cn.r.Buffered() < n {
		if err := cn.settle(); err != nil {
			return nil, err
		}
	}
	if n <= smallRequestBytes {
		body, err := cn.r.Peek(n)
		if err != nil {
			return nil, bodyError(id, n, err)
		}
		cn.held = n
		return body, nil
	}
	wait := time.Duration(cn.b.cfg.QueuedMaxRequestWaitMs) * time.Millisecond
	body, err := cn.b.mem.get(n, cn.b.stopping, wait)
	if err != nil {
		return nil, err
	}
	if body == nil { // queued.max.request.bytes=-1
		cn.rearm(false)
		if body, _, err = protocol.ReadBody(cn.r, nil, n); err != nil {
			return nil, bodyError(id, n, err)
		}
		return body, nil
	}
	cn.big = body
	start := time.Now()
	for off := 0; off < n; off += bodyChunk {
		end := min(off+bodyChunk, n)
		cn.bodyDeadline(start, end)
		if _, err := io.ReadFull(cn.r, body[off:end]); err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && cn.b.cfg.RequestMinBytesPerSec > 0 {
				return nil, fmt.Errorf("%w: %d-byte %s body, %d bytes in %v (request.min.bytes.per.sec=%d)", errBodyTooSlow,
					n, protocol.RequestName(id), off, time.Since(start).Round(time.Millisecond), cn.b.cfg.RequestMinBytesPerSec)
			}
			return nil, bodyError(id, n, err)
		}
	}
	cn.armed = false // the next armIdle sets the idle deadline again
	return body, nil
}

// bodyDeadline sets the read deadline for a large body's bytes up to end,
// begun at start: with request.min.bytes.per.sec, they must have come by
// start + bodyGrace + end / rate (or the idle deadline, if that is sooner);
// without, the idle deadline moves on as for any read.
func (cn *conn) bodyDeadline(start time.Time, end int) {
	rate := cn.b.cfg.RequestMinBytesPerSec
	if rate <= 0 {
		cn.rearm(false)
		return
	}
	d := start.Add(bodyGrace + time.Duration(float64(end)/float64(rate)*float64(time.Second)))
	if idle := time.Now().Add(cn.idle); cn.idle > 0 && idle.Before(d) {
		d = idle
	}
	cn.c.SetReadDeadline(d)
}

// bodyError is a failed read of an n-byte body; io.EOF there means the
// client hung up inside the request.
func bodyError(id int16, n int, err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return fmt.Errorf("protocol: reading %d-byte %s body: %w", n, protocol.RequestName(id), err)
}

// releaseBody discards a small body from the read buffer, or gives a large
// body's buffer back to the budget and drops the decoder's references into
// it.
func (cn *conn) releaseBody() {
	if cn.held > 0 {
		cn.r.Discard(cn.held) // buffered: cannot fail
		cn.held = 0
		return
	}
	if cn.big == nil {
		return
	}
	cn.dec.Forget()
	cn.b.mem.put(cn.big, len(cn.big))
	cn.big = nil
}

// handle serves one request by its id. An error closes the connection.
func (cn *conn) handle(id int16, body []byte) error {
	if id != protocol.RequestAckedProduce {
		// Answers in request order: queued acks=-1 answers go first (ackedanswers.go).
		if err := cn.drainAnswers(); err != nil {
			return err
		}
	}
	switch id {
	case protocol.RequestProduce:
		return cn.handleProduce(body)
	case protocol.RequestFetch:
		return cn.handleFetch(body)
	case protocol.RequestMultiFetch:
		return cn.handleMultiFetch(body)
	case protocol.RequestMultiProduce:
		return cn.handleMultiProduce(body)
	case protocol.RequestOffsets:
		return cn.handleOffsets(body)
	case protocol.RequestAckedProduce:
		return cn.handleAckedProduce(body)
	case protocol.RequestMetadata:
		return cn.handleMetadata(body)
	case protocol.RequestReplicaFetch:
		return cn.handleReplicaFetch(body)
	case protocol.RequestLeaderAndISR:
		return cn.handleLeaderAndISR(body)
	case protocol.RequestEpochEndOffset:
		return cn.handleEpochEndOffset(body)
	default:
		return protocol.ErrUnknownRequest // ReadRequest already refuses these
	}
}

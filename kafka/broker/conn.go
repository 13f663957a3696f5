package broker

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// readBufferSize is the per-connection bufio.Reader: a batch-1 producer's
// ~230-byte requests arrive a few hundred per read system call.
const readBufferSize = 64 << 10

// maxKeptRequestBuffer: after a request larger than this the connection's
// request buffer is dropped rather than kept for the connection's lifetime.
const maxKeptRequestBuffer = 8 << 20

// maxCachedLogs bounds a connection's cache of partition logs.
const maxCachedLogs = 4096

type partKey struct {
	topic     string
	partition int32
}

// conn is the state of one client connection, owned by its goroutine.
type conn struct {
	b      *Broker
	c      *net.TCPConn
	remote string
	r      *bufio.Reader
	dec    protocol.Decoder
	buf    []byte // request bytes, reused
	out    []byte // response headers, reused
	send   sender // writes headers and sendfiles chunks
	logs   map[partKey]*log.Log

	chunks []log.Chunk // MULTIFETCH scratch
	codes  []protocol.ErrorCode
}

func (b *Broker) serveConn(c *net.TCPConn) {
	defer b.untrack(c)
	cn := &conn{
		b:      b,
		c:      c,
		remote: c.RemoteAddr().String(),
		r:      bufio.NewReaderSize(c, readBufferSize),
		out:    make([]byte, 0, 512),
		logs:   make(map[partKey]*log.Log),
	}
	if b.cfg.SocketSendBuffer > 0 {
		c.SetWriteBuffer(b.cfg.SocketSendBuffer)
	}
	if b.cfg.SocketReceiveBuffer > 0 {
		c.SetReadBuffer(b.cfg.SocketReceiveBuffer)
	}
	if err := cn.send.init(c); err != nil {
		b.log.Warn("broker: cannot use connection", "remote", cn.remote, "err", err)
		return
	}
	b.log.Debug("broker: connection opened", "remote", cn.remote)
	for {
		id, body, buf, err := protocol.ReadRequest(cn.r, cn.buf, b.cfg.MaxRequestBytes)
		cn.buf = buf
		if err == nil {
			err = cn.handle(id, body)
		}
		if err != nil {
			switch {
			case err == io.EOF:
				b.log.Debug("broker: connection closed by client", "remote", cn.remote)
			case b.isClosing():
				b.log.Debug("broker: connection closed by shutdown", "remote", cn.remote)
			default:
				// Too large, malformed, unknown id, truncated or a write
				// error: close this connection, keep serving everyone else.
				b.log.Warn("broker: closing connection", "remote", cn.remote, "reason", err)
			}
			return
		}
		if cap(cn.buf) > maxKeptRequestBuffer {
			cn.buf = nil
		}
	}
}

// handle serves one request. An error closes the connection.
func (cn *conn) handle(id int16, body []byte) error {
	switch id {
	case protocol.RequestProduce:
		p, err := cn.dec.Produce(body)
		if err != nil {
			return err
		}
		cn.produce(&p)
	case protocol.RequestMultiProduce:
		m, err := cn.dec.MultiProduce(body)
		if err != nil {
			return err
		}
		for i := range m.Produces {
			cn.produce(&m.Produces[i])
		}
	case protocol.RequestFetch:
		f, err := cn.dec.Fetch(body)
		if err != nil {
			return err
		}
		return cn.fetch(&f)
	case protocol.RequestMultiFetch:
		m, err := cn.dec.MultiFetch(body)
		if err != nil {
			return err
		}
		return cn.multiFetch(m.Fetches)
	case protocol.RequestOffsets:
		o, err := cn.dec.Offsets(body)
		if err != nil {
			return err
		}
		return cn.offsets(&o)
	default:
		return protocol.ErrUnknownRequest // ReadRequest already refuses these
	}
	return nil
}

// produce appends one message set. There is no answer (§5), so problems are
// only logged: a bad set is refused whole (the log validates every CRC
// before appending, §3.3), and a bad topic or partition drops the request.
func (cn *conn) produce(p *protocol.ProduceRequest) {
	part := p.Partition
	if part == protocol.RandomPartition {
		part = int32(rand.IntN(cn.b.logs.Partitions(p.Topic)))
	}
	l, err := cn.logFor(p.Topic, part, p.Messages)
	if err != nil {
		cn.b.log.Warn("broker: produce request dropped", "remote", cn.remote,
			"topic", p.Topic, "partition", p.Partition, "bytes", len(p.Messages), "err", err)
		return
	}
	if _, err := l.Append(p.Messages); err != nil {
		cn.b.log.Warn("broker: message set refused", "remote", cn.remote,
			"topic", p.Topic, "partition", part, "bytes", len(p.Messages), "err", err)
	}
}

// logFor returns the log of a partition, creating it on first produce (0.7
// created topics on first use). Each connection caches what it looked up,
// so the hot path is one map lookup with no allocation and no shared lock.
// Before a partition is created the set is validated, so a corrupt set does
// not leave an empty partition behind (Append validates it again; that
// happens once per partition, not per request).
func (cn *conn) logFor(topic string, partition int32, set []byte) (*log.Log, error) {
	if l, ok := cn.logs[partKey{topic, partition}]; ok {
		return l, nil
	}
	if _, ok := cn.b.logs.Get(topic, int(partition)); !ok {
		valid, _, err := message.Validate(set)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", log.ErrInvalidMessage, err)
		}
		if valid != len(set) {
			return nil, fmt.Errorf("%w: %d-byte set ends with a partial message after %d bytes",
				log.ErrInvalidMessage, len(set), valid)
		}
	}
	l, err := cn.b.logs.GetOrCreate(topic, int(partition))
	if err != nil {
		return nil, err
	}
	cn.cache(topic, partition, l)
	cn.b.noteTopic(topic)
	return l, nil
}

func (cn *conn) cache(topic string, partition int32, l *log.Log) {
	if len(cn.logs) >= maxCachedLogs {
		clear(cn.logs)
	}
	cn.logs[partKey{topic, partition}] = l
}

// lookup finds an existing log for a fetch or offsets request. It returns
// (nil, ErrWrongPartition) for a name or partition that cannot exist, and
// (nil, ErrNone) for a valid partition nobody has produced to yet.
func (cn *conn) lookup(topic string, partition int32) (*log.Log, protocol.ErrorCode) {
	if l, ok := cn.logs[partKey{topic, partition}]; ok {
		return l, protocol.ErrNone
	}
	if log.ValidateTopic(topic) != nil || partition < 0 || int(partition) >= cn.b.logs.Partitions(topic) {
		return nil, protocol.ErrWrongPartition
	}
	l, ok := cn.b.logs.Get(topic, int(partition))
	if !ok {
		return nil, protocol.ErrNone
	}
	cn.cache(topic, partition, l)
	return l, protocol.ErrNone
}

// read resolves one fetch to a chunk of a segment file (possibly empty) and
// the error code to answer with. budget caps the size on top of the
// request's own maxSize.
func (cn *conn) read(f *protocol.FetchRequest, budget int) (log.Chunk, protocol.ErrorCode) {
	if f.MaxSize < 0 {
		return log.Chunk{}, protocol.ErrInvalidFetchSize
	}
	l, code := cn.lookup(f.Topic, f.Partition)
	if l == nil {
		return log.Chunk{}, code
	}
	c, err := l.Read(f.Offset, min(int(f.MaxSize), cn.b.maxFetch, budget))
	switch {
	case err == nil:
		return c, protocol.ErrNone
	case errors.Is(err, log.ErrOffsetOutOfRange):
		cn.b.log.Debug("broker: fetch offset out of range", "remote", cn.remote, "err", err)
		return log.Chunk{}, protocol.ErrOffsetOutOfRange
	case errors.Is(err, log.ErrInvalidFetchSize):
		return log.Chunk{}, protocol.ErrInvalidFetchSize
	default:
		cn.b.log.Warn("broker: fetch failed", "remote", cn.remote, "topic", f.Topic,
			"partition", f.Partition, "offset", f.Offset, "err", err)
		return log.Chunk{}, protocol.ErrUnknown
	}
}

// fetch answers a FETCH: the header, then the chunk straight from the file
// (§3.1: sendfile, no copy through the broker).
func (cn *conn) fetch(f *protocol.FetchRequest) error {
	c, code := cn.read(f, protocol.MaxResponseSize-2)
	defer c.Release()
	cn.out = protocol.AppendResponseHeader(cn.out[:0], int(c.Len), code)
	if err := cn.send.write(cn.out, c.Len > 0); err != nil {
		return err
	}
	return cn.send.sendFile(c.File, c.Pos, c.Len)
}

// multiFetch answers a MULTIFETCH: the outer header, then per fetch its own
// header and chunk. All chunks are taken first, since the outer header
// holds their total size, and released when the answer has been sent.
func (cn *conn) multiFetch(fetches []protocol.FetchRequest) error {
	cn.chunks, cn.codes = cn.chunks[:0], cn.codes[:0]
	defer func() {
		for _, c := range cn.chunks {
			c.Release()
		}
		clear(cn.chunks) // drop the references to segment files
	}()
	budget := protocol.MaxResponseSize - 2 - protocol.ResponseHeaderSize*len(fetches)
	total := 0
	for i := range fetches {
		c, code := cn.read(&fetches[i], budget)
		cn.chunks = append(cn.chunks, c)
		cn.codes = append(cn.codes, code)
		budget -= int(c.Len)
		total += protocol.ResponseHeaderSize + int(c.Len)
	}
	out := protocol.AppendResponseHeader(cn.out[:0], total, protocol.ErrNone)
	for i, c := range cn.chunks {
		out = protocol.AppendResponseHeader(out, int(c.Len), cn.codes[i])
		if c.Len == 0 {
			continue // batch the headers of empty parts into one write
		}
		if err := cn.send.write(out, true); err != nil {
			return err
		}
		if err := cn.send.sendFile(c.File, c.Pos, c.Len); err != nil {
			return err
		}
		out = out[:0]
	}
	cn.out = out
	return cn.send.write(out, false)
}

// offsets answers an OFFSETS request.
func (cn *conn) offsets(o *protocol.OffsetsRequest) error {
	var offs []int64
	l, code := cn.lookup(o.Topic, o.Partition)
	switch {
	case l != nil:
		offs = l.Offsets(o.Time, int(max(o.MaxNumOffsets, 0)))
	case code == protocol.ErrNone && o.MaxNumOffsets > 0 &&
		(o.Time == protocol.OffsetsLatest || o.Time == protocol.OffsetsEarliest):
		offs = []int64{0} // an empty partition starts and ends at 0
	}
	cn.out = protocol.AppendOffsetsResponse(cn.out[:0], code, offs)
	return cn.send.write(cn.out, false)
}

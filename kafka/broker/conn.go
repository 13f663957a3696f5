package broker

import (
	"bufio"
	"io"
	"net"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// This file is the connection loop and the dispatch; each request is served
// in the file named after it (see the package doc).

// readBufferSize is the per-connection bufio.Reader: a batch-1 producer's
// ~230-byte requests arrive a few hundred per read system call.
const readBufferSize = 64 << 10

// maxKeptRequestBuffer: after a request larger than this the connection's
// request buffer is dropped rather than kept for the connection's lifetime.
const maxKeptRequestBuffer = 8 << 20

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

	parts  map[partKey]*replication.Partition // replicated partitions looked up (replicas.go)
	waitCh chan struct{}                      // REPLICA_FETCH's wake-up, reused
	epochs []protocol.EpochEntry              // REPLICA_FETCH scratch
	chunks []log.Chunk                        // MULTIFETCH scratch
	codes  []protocol.ErrorCode
}

// serveConn reads requests one after the other and answers them in order
// (docs/PROTOCOL.md §4), until the client hangs up, the broker shuts down or
// a request is bad.
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

// handle serves one request by its id. An error closes the connection.
func (cn *conn) handle(id int16, body []byte) error {
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

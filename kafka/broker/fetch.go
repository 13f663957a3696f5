package broker

import (
	"context"
	"errors"
	"log/slog"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// handleFetch serves a FETCH (protocol/fetch.go): the header, then the chunk
// straight from the segment file (§3.1: sendfile, no copy through the
// broker).
func (cn *conn) handleFetch(body []byte) error {
	f, err := cn.dec.Fetch(body)
	if err != nil {
		return err
	}
	c, code := cn.read(&f, protocol.MaxResponseSize-2)
	defer c.Release()
	cn.out = protocol.AppendResponseHeader(cn.out[:0], int(c.Len), code)
	if err := cn.send.write(cn.out, c.Len > 0); err != nil {
		return err
	}
	return cn.send.sendFile(c.File, c.Pos, c.Len)
}

// sendPart sends out (headers not yet sent) and then chunk c from its segment
// file, and returns out emptied for the next headers. A part with no bytes
// sends nothing: its header stays in out, so that the headers of empty parts
// go out together with the next write. MULTIFETCH and REPLICA_FETCH answer
// each part with it.
func (cn *conn) sendPart(out []byte, c log.Chunk) ([]byte, error) {
	if c.Len == 0 {
		return out, nil
	}
	if err := cn.send.write(out, true); err != nil {
		return out, err
	}
	return out[:0], cn.send.sendFile(c.File, c.Pos, c.Len)
}

// read resolves one fetch to a chunk of a segment file (possibly empty) and
// the error code to answer with (see (*Broker).Serve). budget caps the size
// on top of the request's own maxSize. MULTIFETCH reads each part with it.
func (cn *conn) read(f *protocol.FetchRequest, budget int) (log.Chunk, protocol.ErrorCode) {
	if f.MaxSize < 0 {
		return log.Chunk{}, protocol.ErrInvalidFetchSize
	}
	size := min(int(f.MaxSize), cn.b.maxFetch, budget)
	if _, hit := cn.cached(f.Topic, f.Partition); !hit && cn.replicatedTopic(f.Topic) {
		return cn.readReplica(f, size)
	}
	l, code := cn.lookup(f.Topic, f.Partition)
	if l == nil {
		return log.Chunk{}, code
	}
	if !l.InRange(f.Offset) {
		if cn.b.log.Enabled(context.Background(), slog.LevelDebug) {
			cn.b.log.Debug("fetch offset out of range", "remote", cn.remote, "topic", f.Topic, "partition", f.Partition, "offset", f.Offset)
		}
		return log.Chunk{}, protocol.ErrOffsetOutOfRange
	}
	c, err := l.Read(f.Offset, size)
	switch {
	case err == nil:
		return c, protocol.ErrNone
	case errors.Is(err, log.ErrOffsetOutOfRange):
		cn.b.log.Debug("fetch offset out of range", "remote", cn.remote, "err", err)
		return log.Chunk{}, protocol.ErrOffsetOutOfRange
	case errors.Is(err, log.ErrInvalidFetchSize):
		return log.Chunk{}, protocol.ErrInvalidFetchSize
	default:
		cn.b.log.Warn("fetch failed", "remote", cn.remote, "topic", f.Topic,
			"partition", f.Partition, "offset", f.Offset, "err", err)
		return log.Chunk{}, protocol.ErrUnknown
	}
}

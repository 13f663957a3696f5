package broker

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

// fetchPoll is how often a Fetch waiting for min_bytes looks again. The
// paper's log has no wake-up for new bytes (its consumers poll, §3.2), so the
// long poll is the broker polling for the client, at this period.
const fetchPoll = 5 * time.Millisecond

// maxFetchRead bounds the log bytes read for one partition of a Fetch beyond
// its max_bytes: the walk from the index entry before the wanted offset.
const maxFetchRead = 1 << 20

// fetch08 serves a Fetch v0: for each partition, the messages from the
// logical offset asked and the logical high watermark. Entries produced
// through the Kafka protocol are kept as 0.8 entries beside the log (a view,
// log/view.go) and go out from there by sendfile; the rest are read from the
// log and sent as 0.8 entries (protocol08.Appender). With nothing to send
// yet it waits up to max_wait_ms for min_bytes, looking every fetchPoll.
func (cn *conn) fetch08(h protocol08.Header, body []byte) error {
	req, err := protocol08.DecodeFetch(body)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMs, 0)) * time.Millisecond)
	for {
		results, bytes, failed := cn.fetchParts08(&req)
		if bytes >= int64(req.MinBytes) || failed || !time.Now().Before(deadline) {
			// The sets go out from where they were built or kept
			// (WriteFetchResponse), not copied into one buffer first.
			err := protocol08.WriteFetchResponse(cn.out[:0], h.CorrelationID, results, cn.send.write, cn.k08.sendView)
			cn.releaseViews08()
			return err
		}
		cn.releaseViews08()
		select {
		case <-cn.b.stopping:
			return errors.New("broker: shutting down during a Fetch's wait")
		case <-time.After(min(fetchPoll, time.Until(deadline))):
		}
	}
}

// fetchParts08 reads every partition of req once; failed reports a
// partition answered with an error (the answer then goes at once). The
// caller releases the views' chunks (releaseViews08).
func (cn *conn) fetchParts08(req *protocol08.FetchRequest) (results []protocol08.FetchResult, bytes int64, failed bool) {
	k := cn.k08
	results = k.fetch[:0]
	for len(k.sets) < len(req.Parts) {
		k.sets = append(k.sets, nil)
		k.views = append(k.views, log.Chunk{})
	}
	for i, fp := range req.Parts {
		r := cn.fetchPart08(fp, i, k.sets[i][:0])
		k.sets[i] = r.Set[:0]
		bytes += int64(len(r.Set)) + r.Sent
		failed = failed || r.Error != protocol.ErrNone
		results = append(results, r)
	}
	k.fetch = results[:0]
	return results, bytes, failed
}

// sendView08 sends result i's part kept in a view (WriteFetchResponse's send).
func (cn *conn) sendView08(i int, _ bool) error {
	c := cn.k08.views[i]
	return cn.send.sendFile(c.File, c.Pos, c.Len)
}

// releaseViews08 gives back the view chunks of the last fetchParts08.
func (cn *conn) releaseViews08() {
	for i := range cn.k08.views {
		cn.k08.views[i].Release()
		cn.k08.views[i] = log.Chunk{}
	}
}

// fetchPart08 reads one partition, the i-th of the request, into set or,
// from a view, into the views' chunk i.
func (cn *conn) fetchPart08(fp protocol08.FetchPart, i int, set []byte) protocol08.FetchResult {
	res := protocol08.FetchResult{Topic: fp.Topic, Partition: fp.Partition, HighWatermark: -1, Set: set}
	if fp.MaxBytes < 0 {
		res.Error = protocol.ErrInvalidFetchSize
		return res
	}
	pt := cn.partition08(fp.Topic, fp.Partition)
	if res.Error = pt.code; pt.code != protocol.ErrNone {
		return res
	}
	if pt.l == nil { // configured, never written: empty
		res.HighWatermark = 0
		if fp.Offset != 0 {
			res.Error = protocol.ErrOffsetOutOfRange
		}
		return res
	}
	l := pt.l
	hw := cn.logical(l, pt.visible)
	res.HighWatermark = hw
	if hw < 0 {
		res.Error = protocol.ErrUnknown
		return res
	}
	if fp.Offset < l.LogicalStart() || fp.Offset > hw {
		res.Error = protocol.ErrOffsetOutOfRange
		return res
	}
	if fp.Offset == hw {
		return res
	}
	from, room := fp.Offset, int64(fp.MaxBytes)
	if c, next, ok := cn.fromView08(l, fp, pt.visible); ok {
		cn.k08.views[i] = c
		res.Sent = c.Len
		if next < 0 || next >= hw || c.Len >= room {
			return res
		}
		// The view ends before what may be read (an append without one
		// followed): the rest is built, after it.
		from, room = next, room-c.Len
	}
	start, at, err := l.Locate(from)
	if err != nil {
		res.Error = protocol.ErrOffsetOutOfRange
		return res
	}
	k := cn.k08
	k.app.Set = set
	k.app.Reset(from, at, room)
	want := room + indexSlack
	for start < pt.visible && !k.app.Full() {
		n := min(want, pt.visible-start, room+maxFetchRead)
		if cap(k.read) < int(n) {
			k.read = make([]byte, n)
		}
		buf, err := readLog(l, start, k.read[:n])
		if err != nil {
			cn.b.log.Warn("Kafka protocol fetch failed", "remote", cn.remote, "topic", fp.Topic,
				"partition", fp.Partition, "offset", fp.Offset, "err", err)
			res.Error = protocol.ErrUnknown
			return res
		}
		it := message.NewIterator(buf, start)
		whole := 0
		for it.Next() {
			whole++
			if _, err := k.app.Add(it.Message()); err != nil {
				res.Error = protocol.ErrInvalidMessage
				break
			}
			if k.app.Full() {
				break
			}
		}
		if whole == 0 {
			// A message larger than the read: read it whole next time.
			if len(buf) < message.LengthSize || want >= message.LengthSize+int64(int32(binary.BigEndian.Uint32(buf))) {
				break
			}
			want = message.LengthSize + int64(int32(binary.BigEndian.Uint32(buf)))
			continue
		}
		start = it.NextOffset()
		if res.Error != protocol.ErrNone {
			break
		}
	}
	res.Set = k.app.Set
	return res
}

// viewWalk is how many bytes of a view fromView08 reads at a time as it
// walks from a mark to the entry asked.
const viewWalk = 8 << 10

// fromView08 is the part of the log's view (log.ReadView) that answers fp:
// from the entry of the offset asked, max_bytes of entries (the last may be
// cut short, as 0.8's broker sent it), or the first entry whole if it is
// larger; next is the logical offset after the part when it ends where the
// view does (what follows is not in it), else -1. ok is false where no view
// holds the offset below visible, or the view's entries do not walk to it (a
// warning: the set is built instead).
func (cn *conn) fromView08(l *log.Log, fp protocol08.FetchPart, visible int64) (c log.Chunk, next int64, ok bool) {
	c, at, end, ok := l.ReadView(fp.Offset, visible)
	if !ok {
		return log.Chunk{}, 0, false
	}
	k := cn.k08
	if len(k.walk) < viewWalk {
		k.walk = make([]byte, viewWalk)
	}
	var buf []byte // c's bytes from bufAt
	var p, bufAt int64
	for {
		if p+12 > bufAt+int64(len(buf)) {
			n, err := c.File.ReadAt(k.walk[:min(int64(viewWalk), c.Len-p)], c.Pos+p)
			if n < 12 {
				cn.b.log.Warn("Kafka protocol fetch: a view does not read", "topic", fp.Topic, "partition", fp.Partition,
					"offset", fp.Offset, "view", c.File.Name(), "at", c.Pos+p, "err", err)
				c.Release()
				return log.Chunk{}, 0, false
			}
			buf, bufAt = k.walk[:n], p
		}
		h := buf[p-bufAt:]
		off, size := int64(binary.BigEndian.Uint64(h)), int64(int32(binary.BigEndian.Uint32(h[8:])))
		if off != at || size < 0 || p+12+size > c.Len {
			cn.b.log.Warn("Kafka protocol fetch: a view's entry is not the one its marks say", "topic", fp.Topic,
				"partition", fp.Partition, "offset", fp.Offset, "view", c.File.Name(), "at", c.Pos+p,
				"entryOffset", off, "wantOffset", at, "size", size)
			c.Release()
			return log.Chunk{}, 0, false
		}
		if at == fp.Offset {
			if n := max(int64(fp.MaxBytes), 12+size); p+n < c.Len {
				return c.Slice(p, n), -1, true
			}
			return c.Slice(p, c.Len-p), end, true
		}
		p += 12 + size
		at++
	}
}

// indexSlack is read beyond max_bytes: the index entry Locate gives may be
// up to log/index.go's interval before the message asked for.
const indexSlack = 4096 + 512

// readLog reads up to len(buf) bytes of l from byte offset off: fewer at
// the end of a segment (a read stays in one).
func readLog(l *log.Log, off int64, buf []byte) ([]byte, error) {
	c, err := l.Read(off, len(buf))
	if err != nil {
		return nil, err
	}
	defer c.Release()
	n, err := c.ReadAt(buf)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

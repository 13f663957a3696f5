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
// logical offset asked, read from the log and sent as 0.8 entries
// (protocol08.Appender), and the logical high watermark. With nothing to send
// yet it waits up to max_wait_ms for min_bytes, looking every fetchPoll.
func (cn *conn) fetch08(h protocol08.Header, body []byte) error {
	req, err := protocol08.DecodeFetch(body)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Duration(max(req.MaxWaitMs, 0)) * time.Millisecond)
	for {
		results, bytes, failed := cn.fetchParts08(&req)
		if bytes >= int(req.MinBytes) || failed || !time.Now().Before(deadline) {
			// The sets go out from where they were built (WriteFetchResponse), not copied
			// into one buffer first.
			return protocol08.WriteFetchResponse(cn.out[:0], h.CorrelationID, results, cn.send.write)
		}
		select {
		case <-cn.b.stopping:
			return errors.New("broker: shutting down during a Fetch's wait")
		case <-time.After(min(fetchPoll, time.Until(deadline))):
		}
	}
}

// fetchParts08 reads every partition of req once; failed reports a
// partition answered with an error (the answer then goes at once).
func (cn *conn) fetchParts08(req *protocol08.FetchRequest) (results []protocol08.FetchResult, bytes int, failed bool) {
	k := cn.k08
	results = k.fetch[:0]
	for len(k.sets) < len(req.Parts) {
		k.sets = append(k.sets, nil)
	}
	for i, fp := range req.Parts {
		r := cn.fetchPart08(fp, k.sets[i][:0])
		k.sets[i] = r.Set[:0]
		bytes += len(r.Set)
		failed = failed || r.Error != protocol.ErrNone
		results = append(results, r)
	}
	k.fetch = results[:0]
	return results, bytes, failed
}

// fetchPart08 reads one partition into set.
func (cn *conn) fetchPart08(fp protocol08.FetchPart, set []byte) protocol08.FetchResult {
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
	start, at, err := l.Locate(fp.Offset)
	if err != nil {
		res.Error = protocol.ErrOffsetOutOfRange
		return res
	}
	k := cn.k08
	k.app.Set = set
	k.app.Reset(fp.Offset, at, int64(fp.MaxBytes))
	want := int64(fp.MaxBytes) + indexSlack
	for start < pt.visible && !k.app.Full() {
		n := min(want, pt.visible-start, int64(fp.MaxBytes)+maxFetchRead)
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

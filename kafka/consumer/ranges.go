package consumer

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"slices"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// Fetching byte ranges, several in flight.
//
// A partition's log is one stream of bytes and an offset is a position in
// it (§3.1); a FETCH at offset X for S bytes answers bytes [X, X+S), cut at
// the flushed end or the end of X's segment, and the broker does not look
// at message boundaries. So the FETCH for the bytes after a full answer
// does not need that answer's contents: it starts at X+S. A consumer can
// keep several such fetches in flight (§3.1: "the consumer is issuing
// asynchronous pull requests to the broker to have a buffer of data ready
// for the application to consume"), and the broker's sendfile(2) of the next answer overlaps the
// consumer's CRC checks of this one: with one fetch sent ahead from the
// last whole message (FetchAhead), the broker waits for each request while
// the consumer is busy, and the consumer for each answer while the broker
// is.
//
// The price: an answer usually ends inside a message, whose first part is
// kept and completed by the next range (Ranges below: one message's bytes
// copied per fetch); and an answer shorter than asked (the flushed end, or
// a segment's end, every log.file.size bytes) leaves a gap before the
// ranges already asked for, whose answers are then read and dropped.

// FetchRange appends to dst the bytes of topic/partition from offset, at
// most maxSize of them, as Fetch, and returns the extended slice. When the
// answer fills maxSize it keeps depth-1 more FETCHes in flight, for the
// ranges that follow it; a later FetchRange for the next range reads the
// answer already on its way. A FetchRange for any other offset, or any
// other request, first reads and drops the answers of the ranges sent
// ahead. An answer to a range sent ahead that found the offset beyond the
// flushed end (it was asked before the log got there) is asked again.
func (c *SimpleConsumer) FetchRange(dst []byte, topic string, partition int32, offset int64, maxSize int32, depth int) ([]byte, error) {
	req := protocol.FetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxSize: maxSize}
	var code protocol.ErrorCode
	var out []byte
	var err error
	if len(c.ranges) > 0 && c.ranges[0] == req {
		c.ranges = c.ranges[:copy(c.ranges, c.ranges[1:])]
		code, out, err = c.readInto(dst)
		if err != nil {
			_ = c.Close()
		}
		if err != nil || code == protocol.ErrOffsetOutOfRange {
			code, out, err = c.askInto(dst, req)
		}
	} else {
		code, out, err = c.askInto(dst, req)
	}
	if err != nil {
		return dst, fmt.Errorf("consumer: fetch %s-%d at offset %d from %s: %w", topic, partition, offset, c.addr, err)
	}
	if code != protocol.ErrNone {
		return dst, fmt.Errorf("consumer: fetch %s-%d at offset %d from %s: %w", topic, partition, offset, c.addr, code)
	}
	if len(out)-len(dst) == int(maxSize) && maxSize > 0 {
		c.sendRanges(req, depth-1)
	}
	return out, nil
}

// askInto sends req on its own (after dropping whatever was sent ahead)
// and appends its answer to dst. An I/O failure is retried once on a fresh
// connection, as roundTrip does.
func (c *SimpleConsumer) askInto(dst []byte, req protocol.FetchRequest) (protocol.ErrorCode, []byte, error) {
	c.drain()
	c.wbuf = req.AppendTo(c.wbuf[:0])
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if err = c.send(); err == nil {
			var code protocol.ErrorCode
			var out []byte
			if code, out, err = c.readInto(dst); err == nil {
				return code, out, nil
			}
		}
		_ = c.Close()
	}
	return 0, dst, err
}

// sendRanges tops the ranges in flight back up to n, after the one just
// read (last), once no more than n/2 are left: consecutive ranges of
// last.MaxSize bytes, framed into one write. Topping up by half the depth
// at a time rather than one range per answer wakes the broker once per
// n/2+1 ranges instead of once per range. A failed write closes the connection,
// which forgets them; the next FetchRange then asks afresh.
func (c *SimpleConsumer) sendRanges(last protocol.FetchRequest, n int) {
	if len(c.ranges) > n/2 {
		return
	}
	if len(c.ranges) > 0 {
		last = c.ranges[len(c.ranges)-1]
	}
	c.wbuf = c.wbuf[:0]
	for len(c.ranges) < n {
		last.Offset += int64(last.MaxSize)
		c.wbuf = last.AppendTo(c.wbuf)
		c.ranges = append(c.ranges, last)
	}
	if len(c.wbuf) > 0 && c.send() != nil {
		c.ranges = c.ranges[:0]
	}
}

// readInto reads one response and appends its payload to dst, straight
// from the socket into dst's spare room (grown if need be): no copy of the
// bytes through another buffer.
func (c *SimpleConsumer) readInto(dst []byte) (protocol.ErrorCode, []byte, error) {
	if c.timeout > 0 {
		_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	}
	if _, err := io.ReadFull(c.conn, c.hdr[:]); err != nil {
		return 0, dst, fmt.Errorf("reading response header: %w", err)
	}
	size := int64(int32(binary.BigEndian.Uint32(c.hdr[:])))
	if size < 2 || size > protocol.MaxResponseSize {
		return 0, dst, fmt.Errorf("%w: response size field %d outside [2, %d]", protocol.ErrMalformed, size, protocol.MaxResponseSize)
	}
	code := protocol.ErrorCode(int16(binary.BigEndian.Uint16(c.hdr[4:])))
	n := int(size - 2)
	out := slices.Grow(dst, n)[:len(dst)+n]
	if _, err := io.ReadFull(c.conn, out[len(dst):]); err != nil {
		return code, dst, fmt.Errorf("reading %d-byte response payload: %w", n, err)
	}
	return code, out, nil
}

// dropRanges reads and drops the answers of the ranges sent ahead; on a
// failure it closes the connection, which drops them too.
func (c *SimpleConsumer) dropRanges() {
	for len(c.ranges) > 0 {
		c.ranges = c.ranges[:len(c.ranges)-1]
		if _, _, err := c.read(); err != nil {
			_ = c.Close()
			return
		}
	}
}

// Ranges reads one partition as consecutive byte ranges (FetchRange, depth
// in flight) and hands out the bytes at hand, for the caller to walk; the
// caller says at the next call how many of them it used (its whole
// messages), and the rest, the part of a message that ended a range, is
// kept at the front of the buffer and completed by the next range. So a
// message may also be larger than the fetch size. The zero value is not
// usable; see NewRanges.
type Ranges struct {
	topic     string
	partition int32
	size      int32
	depth     int

	buf     []byte // bytes fetched and not yet used, from offset base
	base    int64
	handed  bool  // buf is the set the last Next returned, whose used bytes the next call drops
	next    int64 // offset of the first byte not fetched yet
	fetched int   // bytes the last Next brought
}

// NewRanges reads topic/partition from offset (a message boundary),
// fetchSize bytes per range, depth ranges in flight.
func NewRanges(topic string, partition int32, offset int64, fetchSize int32, depth int) *Ranges {
	r := &Ranges{topic: topic, partition: partition, size: fetchSize, depth: max(depth, 1)}
	r.SeekTo(offset)
	return r
}

// SeekTo moves to offset (a message boundary); the ranges in flight are
// dropped by the next fetch, which asks for another offset.
func (r *Ranges) SeekTo(offset int64) {
	r.buf, r.base, r.next, r.handed = r.buf[:0], offset, offset, false
}

// Next drops the first used bytes of the last set it returned (the whole
// messages the caller walked; ignored after a seek or a failed Next, which
// returned no set), fetches the next range
// with c, and returns the bytes now at hand and the offset of the first;
// the set may end inside a message, and an empty one means caught up. It
// is valid until the next call. A first header no message can have (an
// offset inside a message, or a length beyond any response) is an error,
// ErrNotMessageStart: fetching on cannot help. A message longer than the
// range is not: the next ranges complete it.
func (r *Ranges) Next(c *SimpleConsumer, used int) (set []byte, base int64, err error) {
	if !r.handed {
		used = 0
	}
	used = min(max(used, 0), len(r.buf))
	tail := copy(r.buf, r.buf[used:])
	r.buf, r.base, r.handed = r.buf[:tail], r.base+int64(used), false
	r.fetched = 0
	buf, err := c.FetchRange(r.buf, r.topic, r.partition, r.next, r.size, r.depth)
	if err != nil {
		return nil, r.base, err
	}
	r.fetched = len(buf) - tail
	r.next += int64(r.fetched)
	r.buf = buf
	if err := checkStart(buf, r.base, math.MaxInt32); err != nil {
		return nil, r.base, fmt.Errorf("consumer: %s-%d at offset %d: %w", r.topic, r.partition, r.base, err)
	}
	r.handed = true
	return buf, r.base, nil
}

// Package consumer reads messages from Kafka brokers (paper §3, §3.1, §3.2).
//
// The broker is stateless about its consumers (§3.1): a consumer names the
// byte offset it wants and the maximum number of bytes, and the broker sends
// back the raw log bytes from that position. The consumer therefore owns its
// position, can rewind to any earlier offset and re-read (§3.1: "a consumer
// can deliberately rewind back to an old offset and re-consume data"), and
// learns the next offset from the bytes themselves: offset + 4 + N.
//
// SimpleConsumer is one connection to one broker with the three pull
// requests: FETCH, MULTIFETCH and OFFSETS. PartitionIterator walks one
// partition message by message on top of it, checking every CRC (§3.3),
// and polling with a backoff when it has caught up. The high-level consumer
// with groups (§3.2) is built on these in this package's other files.
// Consumer08 (consumer08.go) reads a topic through the Kafka protocol as 0.8
// defined it instead, at logical offsets, as 0.8's console consumer did.
package consumer

import (
	"encoding/binary"
	"fmt"
	"net"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// DefaultFetchSize is 0.7's fetch.size (300 KiB).
const DefaultFetchSize = 300 * 1024

// ReceiveBuffer is the socket receive buffer a SimpleConsumer asks for
// (SO_RCVBUF; the kernel caps it at net.core.rmem_max): room for several
// fetches, so that the answer to a fetch sent ahead (FetchAhead) arrives
// whole while the last one is checked, instead of stopping the broker's
// sendfile(2) when a small buffer fills.
const ReceiveBuffer = 4 << 20

// SimpleConsumer is one connection to one broker. It is not safe for
// concurrent use, and the bytes a fetch returns alias a buffer reused by
// the next call. One request is in flight at a time, except that FetchAhead
// sends the next FETCH before the caller has finished with the last answer,
// and FetchRange keeps several FETCHes of consecutive byte ranges in flight
// (ranges.go).
type SimpleConsumer struct {
	addr    string
	timeout time.Duration
	conn    net.Conn
	wbuf    []byte // the framed request
	rbuf    []byte // the last response payload
	results []FetchResult
	// ahead is the FETCH that FetchAhead sent and whose answer is still
	// unread (valid when inFlight); wbuf holds it framed.
	ahead    protocol.FetchRequest
	inFlight bool
	// ranges are the FETCHes of consecutive byte ranges that FetchRange
	// sent and whose answers are still unread, oldest first (ranges.go).
	ranges []protocol.FetchRequest
	hdr    [protocol.ResponseHeaderSize]byte
}

// NewSimpleConsumer returns a consumer for the broker at addr (host:port).
// timeout bounds each request's round trip (0.7's socket.timeout.ms, 30 s
// there); 0 means no limit. The connection opens on first use.
func NewSimpleConsumer(addr string, timeout time.Duration) *SimpleConsumer {
	return &SimpleConsumer{addr: addr, timeout: timeout}
}

// Addr is the broker's address.
func (c *SimpleConsumer) Addr() string { return c.addr }

// Close closes the connection; the consumer reconnects if used again.
func (c *SimpleConsumer) Close() error {
	c.inFlight = false
	c.ranges = c.ranges[:0]
	if c.conn == nil {
		return nil
	}
	err := c.conn.Close()
	c.conn = nil
	return err
}

// Fetch returns the log bytes of topic/partition from offset, at most
// maxSize of them, up to the broker's flushed end (§3.1: only flushed
// messages are visible). The bytes may end with a partial message, which
// the caller drops and fetches again (message.Iterator stops cleanly there).
// The slice is valid until the next call on c. An empty slice means the
// consumer has caught up. If not even the first message fits in maxSize the
// error wraps ErrMessageTooLarge; if the bytes at offset are not a message
// header (the offset falls inside a message), ErrNotMessageStart.
//
// If FetchAhead sent this same fetch ahead, Fetch reads its answer
// instead of asking again.
func (c *SimpleConsumer) Fetch(topic string, partition int32, offset int64, maxSize int32) ([]byte, error) {
	req := protocol.FetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxSize: maxSize}
	var code protocol.ErrorCode
	var payload []byte
	var err error
	if c.inFlight && c.ahead == req {
		code, payload, err = c.receive()
	} else {
		c.wbuf = req.AppendTo(c.wbuf[:0])
		code, payload, err = c.roundTrip()
	}
	if err != nil {
		return nil, fmt.Errorf("consumer: fetch %s-%d at offset %d from %s: %w", topic, partition, offset, c.addr, err)
	}
	if code != protocol.ErrNone {
		return nil, fmt.Errorf("consumer: fetch %s-%d at offset %d from %s: %w", topic, partition, offset, c.addr, code)
	}
	if err := checkStart(payload, offset, maxSize); err != nil {
		return nil, fmt.Errorf("consumer: fetch %s-%d at offset %d: %w", topic, partition, offset, err)
	}
	return payload, nil
}

// checkStart looks at the first message of a fetched set. A header that
// cannot be a message's (an unknown magic, a length too small, or one
// larger than any response can carry) means the offset is not where a
// message starts: ErrNotMessageStart, with the bytes read. Otherwise a set
// that holds not even one whole message although the broker filled the
// whole fetch size is ErrMessageTooLarge.
func checkStart(set []byte, offset int64, maxSize int32) error {
	if len(set) > message.LengthSize {
		var cause error
		n := int64(binary.BigEndian.Uint32(set))
		it := message.NewIterator(set, offset)
		switch {
		case !it.Next() && it.Err() != nil:
			cause = it.Err()
		case message.LengthSize+n > protocol.MaxResponseSize:
			cause = fmt.Errorf("no message is larger than the %d bytes a response may hold", protocol.MaxResponseSize)
		}
		if cause != nil {
			return fmt.Errorf("offset %d does not start a message: its first bytes % x read as a %d-byte message of magic %d (%w: %w)",
				offset, set[:min(len(set), message.HeaderSizeV1)], message.LengthSize+n, set[message.LengthSize], ErrNotMessageStart, cause)
		}
	}
	if len(set) == 0 || len(set) < int(maxSize) {
		return nil
	}
	if len(set) < 4 {
		return fmt.Errorf("%w: fetch size %d is smaller than a message's 4-byte length", ErrMessageTooLarge, maxSize)
	}
	size := 4 + int64(binary.BigEndian.Uint32(set))
	if size > int64(len(set)) {
		return fmt.Errorf("%w: the first message is %d bytes, the fetch size %d", ErrMessageTooLarge, size, maxSize)
	}
	return nil
}

// GetOffsetsBefore asks for at most max segment start offsets of
// topic/partition before time t (ms since the epoch), in descending order;
// t = -1 (latest) also returns the flushed end first, t = -2 (earliest) the
// log's first offset.
func (c *SimpleConsumer) GetOffsetsBefore(topic string, partition int32, t int64, max int32) ([]int64, error) {
	req := protocol.OffsetsRequest{Topic: topic, Partition: partition, Time: t, MaxNumOffsets: max}
	c.wbuf = req.AppendTo(c.wbuf[:0])
	code, payload, err := c.roundTrip()
	if err != nil {
		return nil, fmt.Errorf("consumer: offsets of %s-%d before %d from %s: %w", topic, partition, t, c.addr, err)
	}
	if code != protocol.ErrNone {
		return nil, fmt.Errorf("consumer: offsets of %s-%d before %d from %s: %w", topic, partition, t, c.addr, code)
	}
	offs, err := protocol.DecodeOffsetsResponse(payload)
	if err != nil {
		return nil, fmt.Errorf("consumer: offsets of %s-%d before %d: %w: %w", topic, partition, t, ErrBadResponse, err)
	}
	return offs, nil
}

// LatestOffset is GetOffsetsBefore(topic, partition, -1, 1)[0]: the
// flushed end, the offset the next visible message will have.
func (c *SimpleConsumer) LatestOffset(topic string, partition int32) (int64, error) {
	return c.singleOffset(topic, partition, -1)
}

// EarliestOffset is the first offset still on the broker.
func (c *SimpleConsumer) EarliestOffset(topic string, partition int32) (int64, error) {
	return c.singleOffset(topic, partition, -2)
}

func (c *SimpleConsumer) singleOffset(topic string, partition int32, t int64) (int64, error) {
	offs, err := c.GetOffsetsBefore(topic, partition, t, 1)
	if err != nil {
		return 0, err
	}
	if len(offs) == 0 {
		return 0, fmt.Errorf("consumer: offsets of %s-%d at time %d: broker returned none: %w", topic, partition, t, ErrBadResponse)
	}
	return offs[0], nil
}

// FetchResult is one partition's answer within a MULTIFETCH.
type FetchResult struct {
	Set []byte // raw log bytes, aliasing the consumer's buffer
	Err error  // a broker error code, ErrMessageTooLarge or ErrNotMessageStart, wrapped
}

// MultiFetch sends one MULTIFETCH with every fetch and returns one result
// per fetch, in order. The results and their sets are valid until the next
// call on c.
func (c *SimpleConsumer) MultiFetch(fetches []protocol.FetchRequest) ([]FetchResult, error) {
	req := protocol.MultiFetchRequest{Fetches: fetches}
	c.wbuf = req.AppendTo(c.wbuf[:0])
	code, payload, err := c.roundTrip()
	if err != nil {
		return nil, fmt.Errorf("consumer: multifetch of %d partitions from %s: %w", len(fetches), c.addr, err)
	}
	if code != protocol.ErrNone {
		return nil, fmt.Errorf("consumer: multifetch of %d partitions from %s: %w", len(fetches), c.addr, code)
	}
	c.results = c.results[:0]
	err = protocol.DecodeMultiFetchResponse(payload, func(i int, code protocol.ErrorCode, set []byte) error {
		if i >= len(fetches) {
			return fmt.Errorf("%d answers for %d fetches", i+1, len(fetches))
		}
		f := &fetches[i]
		r := FetchResult{Set: set}
		if code != protocol.ErrNone {
			r.Set, r.Err = nil, fmt.Errorf("consumer: fetch %s-%d at offset %d: %w", f.Topic, f.Partition, f.Offset, code)
		} else if err := checkStart(set, f.Offset, f.MaxSize); err != nil {
			r.Set, r.Err = nil, fmt.Errorf("consumer: fetch %s-%d at offset %d: %w", f.Topic, f.Partition, f.Offset, err)
		}
		c.results = append(c.results, r)
		return nil
	})
	if err == nil && len(c.results) != len(fetches) {
		err = fmt.Errorf("%d answers for %d fetches", len(c.results), len(fetches))
	}
	if err != nil {
		return nil, fmt.Errorf("consumer: multifetch from %s: %w: %w", c.addr, ErrBadResponse, err)
	}
	return c.results, nil
}

// FetchAhead is Fetch for a consumer reading a partition in order: when
// the answer fills maxSize (the broker has more), it sends at once the
// fetch that starts where the answer's whole messages end, so that the
// broker sends the next answer while the caller checks this one's CRCs,
// and the FetchAhead that asks for it finds it on its way. Where the next
// fetch starts needs
// only the messages' lengths, not their CRCs. A request other than that
// fetch first reads and drops the answer: reading out of order costs one
// wasted fetch.
func (c *SimpleConsumer) FetchAhead(topic string, partition int32, offset int64, maxSize int32) ([]byte, error) {
	set, err := c.Fetch(topic, partition, offset, maxSize)
	if err == nil && len(set) == int(maxSize) {
		if whole := message.Framed(set); whole > 0 {
			c.prefetch(topic, partition, offset+int64(whole), maxSize)
		}
	}
	return set, err
}

// prefetch sends a FETCH without reading its answer. A failed send is not
// reported: the Fetch that follows asks again.
func (c *SimpleConsumer) prefetch(topic string, partition int32, offset int64, maxSize int32) {
	c.drain()
	c.ahead = protocol.FetchRequest{Topic: topic, Partition: partition, Offset: offset, MaxSize: maxSize}
	c.wbuf = c.ahead.AppendTo(c.wbuf[:0])
	c.inFlight = c.send() == nil
}

// roundTrip writes c.wbuf with one write and reads one response into
// c.rbuf. An I/O failure closes the connection and is retried once on a
// fresh one (every request here is a read, so repeating it is harmless).
func (c *SimpleConsumer) roundTrip() (protocol.ErrorCode, []byte, error) {
	c.drain()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if err = c.send(); err == nil {
			var code protocol.ErrorCode
			var payload []byte
			if code, payload, err = c.read(); err == nil {
				return code, payload, nil
			}
		}
		_ = c.Close()
	}
	return 0, nil, err
}

// send writes c.wbuf with one write, dialling first if there is no
// connection. The deadline it sets covers the answer too.
func (c *SimpleConsumer) send() error {
	if c.conn == nil {
		d := net.Dialer{Timeout: c.timeout}
		conn, err := d.Dial("tcp", c.addr)
		if err != nil {
			return err
		}
		c.conn = conn
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(ReceiveBuffer)
		}
	}
	if c.timeout > 0 {
		_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	}
	if _, err := c.conn.Write(c.wbuf); err != nil {
		_ = c.Close()
		return err
	}
	return nil
}

// read reads one response into c.rbuf.
func (c *SimpleConsumer) read() (code protocol.ErrorCode, payload []byte, err error) {
	code, payload, c.rbuf, err = protocol.ReadResponse(c.conn, c.rbuf)
	return code, payload, err
}

// receive reads the answer to the fetch sent ahead (still framed in
// c.wbuf); if that fails it asks again with roundTrip.
func (c *SimpleConsumer) receive() (protocol.ErrorCode, []byte, error) {
	c.inFlight = false
	if c.timeout > 0 {
		_ = c.conn.SetDeadline(time.Now().Add(c.timeout))
	}
	if code, payload, err := c.read(); err == nil {
		return code, payload, nil
	}
	_ = c.Close()
	return c.roundTrip()
}

// drain reads and drops the answer of a fetch sent ahead that nobody
// asked for; on
// failure it closes the connection, which drops it too.
func (c *SimpleConsumer) drain() {
	c.dropRanges()
	if !c.inFlight {
		return
	}
	c.inFlight = false
	if _, _, err := c.read(); err != nil {
		_ = c.Close()
	}
}

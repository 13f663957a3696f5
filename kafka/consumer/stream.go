package consumer

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// StreamMessage is one message handed out by a Stream.
type StreamMessage struct {
	Topic      string
	Partition  string // "<brokerid>-<partition>", the registry's name for it (docs/PROTOCOL.md §5)
	Offset     int64  // the message's byte offset in its partition (its wrapper's, if it was compressed)
	NextOffset int64  // where to resume after it: the value committed to the offset registry
	Payload    []byte // valid until the next call of Next; of a keyed message, its value
	Key        []byte // a keyed message's key (one written through the Kafka protocol, message/keyed.go); nil for none
}

// chunk is one fetched run of whole messages of one partition, queued for the stream that owns the partition.
// A chunk with err set carries a problem of that partition (a message too large for fetch.size, a corrupt
// log) to the application instead of data.
type chunk struct {
	part *ownedPartition
	set  []byte
	base int64  // offset of set[0]
	gen  uint64 // the rebalance generation that fetched it
	err  error
}

// ownedPartition is a partition this consumer owns in the current generation (0.7's PartitionTopicInfo).
type ownedPartition struct {
	topic    string
	name     string // "<brokerid>-<partition>"
	brokerID int    // -1 for a replicated partition: its leader's id is in the fetcher that has it
	// replicated: a partition of a replicated topic, fetched from its leader (docs/PROTOCOL.md §10).
	replicated bool
	partition  int32
	stream     *Stream

	// fetchOffset is the next offset to fetch; only the broker's fetcher goroutine touches it. -1 means "not
	// known yet": the fetcher asks the broker per autooffset.reset.
	fetchOffset int64
	// consumed is the offset after the last message handed to the application (-1: none yet). §3.2: the
	// consumer "periodically updates the latest consumed offset in the offset registry" — this value.
	consumed atomic.Int64
	// committed is the last value written to the offset registry (-1: none); guarded by GroupConsumer.mu.
	committed int64
}

// Stream is one of the message streams of paper §3: "Each message stream provides an iterator interface over
// the continual stream of messages being produced ... Unlike traditional iterators, the message stream
// iterator never terminates. If there are currently no more messages to consume, the iterator blocks until new
// messages are published to the topic." The group's rebalance decides which partitions feed it; messages of
// one partition come out in their log order (§3.3).
//
// Use it like a scanner:
//
//	for s.Next() {
//	    m := s.Message()
//	    ...
//	}
//	if err := s.Err(); err != nil { ... }
//
// Next returns false when the consumer is closed (Err is then nil), when the group could not rebalance (Err
// wraps ErrRebalanceFailed, final), after consumer.timeout.ms without a message (ErrConsumerTimeout), or on a
// problem of one partition (a CRC mismatch, a message larger than fetch.size); for the last two, calling Next
// again goes on. A Stream is meant for one goroutine.
type Stream struct {
	id      string // "<consumerid>-<i>"
	topic   string
	queue   chan *chunk
	timeout time.Duration // consumer.timeout.ms; < 0 waits forever
	stop    chan struct{} // closed when the stream ends (Close or a failed rebalance)
	timer   *time.Timer   // reused by the Next goroutine for consumer.timeout.ms

	mu    sync.Mutex
	gen   uint64 // generation whose chunks are current; older ones are dropped
	final error  // set once the stream has ended because of a failed rebalance
	ended bool
	cur   *chunk
	it    message.DeepIterator // over cur's set, wrappers unpacked into its reused buffer
	msg   StreamMessage
	err   error
}

func newStream(id, topic string, queued int, timeout time.Duration) *Stream {
	return &Stream{id: id, topic: topic, queue: make(chan *chunk, queued), timeout: timeout,
		stop: make(chan struct{})}
}

// ID is the stream id "<consumerid>-<i>" written into the ownership registry for the partitions it owns.
func (s *Stream) ID() string { return s.id }

// Topic is the topic the stream reads.
func (s *Stream) Topic() string { return s.topic }

// Message is the current message.
func (s *Stream) Message() StreamMessage { return s.msg }

// Err is what stopped the last Next; nil after a clean end (Close).
func (s *Stream) Err() error { return s.err }

// Next advances to the next message, blocking until one arrives (see the type's doc for when it returns
// false). Handing a message out is what moves the partition's offset to commit: at-least-once (§3.3).
func (s *Stream) Next() bool { return s.next(true) }

// Poll is Next without waiting: when no fetched message is at hand it returns false with a nil Err. A tool
// that prints messages can flush its output when Poll says it would have to wait.
func (s *Stream) Poll() bool { return s.next(false) }

func (s *Stream) next(block bool) bool {
	s.mu.Lock()
	s.err = nil
	for {
		if s.ended {
			s.err = s.final
			s.mu.Unlock()
			return false
		}
		if s.cur != nil {
			if s.cur.gen == s.gen && s.advance() {
				s.mu.Unlock()
				return true
			}
			if s.err != nil {
				s.mu.Unlock()
				return false
			}
			s.cur = nil
		}
		s.mu.Unlock()
		var c *chunk
		var err error
		if block {
			c, err = s.wait()
		} else {
			select {
			case c = <-s.queue:
			default:
				return false
			}
		}
		s.mu.Lock()
		if err != nil {
			if !s.ended {
				s.err = err
				s.mu.Unlock()
				return false
			}
			continue
		}
		if c.gen != s.gen {
			continue // fetched before the last rebalance: its partition may belong to someone else now
		}
		if c.err != nil {
			s.err = c.err
			s.mu.Unlock()
			return false
		}
		s.cur = c
		s.it.Reset(c.set, c.base)
	}
}

// wait takes the next chunk from the queue, blocking for at most consumer.timeout.ms.
func (s *Stream) wait() (*chunk, error) {
	select {
	case c := <-s.queue:
		return c, nil
	default:
	}
	if s.timeout < 0 {
		select {
		case c := <-s.queue:
			return c, nil
		case <-s.stop:
			return nil, ErrGroupClosed
		}
	}
	if s.timer == nil {
		s.timer = time.NewTimer(s.timeout)
	} else {
		s.timer.Reset(s.timeout)
	}
	defer s.timer.Stop()
	select {
	case c := <-s.queue:
		return c, nil
	case <-s.stop:
		return nil, ErrGroupClosed
	case <-s.timer.C:
		return nil, fmt.Errorf("%w: stream %s of topic %q waited %v", ErrConsumerTimeout, s.id, s.topic, s.timeout)
	}
}

// advance moves to the next message of the current chunk, unpacking compressed wrappers, and records it as
// consumed. It returns false at the end of the chunk, or with s.err set on a bad message (which is skipped
// if Next is called again; a chunk whose framing is broken is dropped). Called with s.mu held.
func (s *Stream) advance() bool {
	p := s.cur.part
	if !s.it.Next() {
		if err := s.it.Err(); err != nil {
			s.err = fmt.Errorf("consumer: %s/%s: %w", p.topic, p.name, err)
			if !s.it.SkipBad() {
				s.cur = nil
			}
		}
		return false
	}
	// §3.3 via docs/PROTOCOL.md §2: a commit in the middle of a wrapper replays it (NextOffset).
	m := s.it.Message()
	s.msg = StreamMessage{Topic: p.topic, Partition: p.name, Offset: s.it.Offset(), NextOffset: s.it.NextOffset(),
		Payload: m.Payload()}
	if m.Keyed() {
		if k, v, err := m.KeyValue(); err == nil {
			s.msg.Key, s.msg.Payload = k, v
		}
	}
	p.consumed.Store(s.msg.NextOffset)
	return true
}

// reset starts generation gen: whatever was fetched before is dropped, so a partition that moved to another
// consumer is not also read here. The fetchers must be stopped. After reset returns no message of an older
// generation is handed out, so the offsets committed next are final for those partitions.
func (s *Stream) reset(gen uint64) {
	s.mu.Lock()
	s.gen = gen
	s.cur = nil
	s.mu.Unlock()
	for {
		select {
		case <-s.queue:
		default:
			return
		}
	}
}

// end stops the stream for good: final nil for a clean Close, or the rebalance failure.
func (s *Stream) end(final error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return
	}
	s.ended, s.final = true, final
	s.cur = nil
	close(s.stop)
}

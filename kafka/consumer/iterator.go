package consumer

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// Backoff bounds of PartitionIterator when it has caught up with the
// flushed end: it waits MinBackoff, doubling up to MaxBackoff (0.7's
// fetcher.backoff.ms is 1000), and starts again from MinBackoff as soon as
// a fetch brings data.
const (
	DefaultMinBackoff = 10 * time.Millisecond
	DefaultMaxBackoff = 1000 * time.Millisecond
)

// PartitionIterator walks one partition message by message from a start
// offset, fetching FetchSize bytes at a time, and never ends on its own:
// when it reaches the flushed end it polls with a backoff until new
// messages arrive (the paper's stream that blocks, §3). Every message's CRC
// is checked; a mismatch stops the iterator with an error wrapping
// ErrChecksum and naming the offset (§3.3), it is never skipped silently.
//
// Compressed wrappers (magic 1 with a codec) are unpacked: their inner
// messages all report the wrapper's offset, and every one but the last
// reports the wrapper's own offset as NextOffset, the last one the offset
// after the wrapper — committing in the middle replays the wrapper
// (at-least-once, docs/PROTOCOL.md §2).
//
// Steady-state iteration allocates nothing per message: the payload
// aliases the consumer's fetch buffer and is valid until the next call to
// Next. While it walks a full fetch the next one is already on its way
// (SimpleConsumer.FetchAhead), or, with InFlight above 1, the next InFlight-1
// byte ranges are (Ranges).
type PartitionIterator struct {
	c         *SimpleConsumer
	topic     string
	partition int32
	fetchSize int32

	// MinBackoff and MaxBackoff tune the polling when caught up.
	MinBackoff, MaxBackoff time.Duration

	// InFlight is how many fetches of consecutive byte ranges the iterator
	// keeps in flight (Ranges, ranges.go). 0 or 1, the default: one fetch
	// at a time from the last whole message, with the next one sent ahead
	// while a full answer is checked (FetchAhead). Set it before the first
	// Next.
	InFlight int
	ranges   *Ranges

	it   message.DeepIterator // over the last fetched set, wrappers unpacked into its reused buffer
	base int64                // offset of that set's first byte

	err     error
	fetches int64

	follow *follow // nil unless FollowLeaders (follow.go)
}

// NewPartitionIterator returns an iterator over topic/partition on c's
// broker, starting at offset (a message boundary: an offset previously
// returned by NextOffset, or one from GetOffsetsBefore).
func NewPartitionIterator(c *SimpleConsumer, topic string, partition int32, offset int64, fetchSize int32) *PartitionIterator {
	if fetchSize <= 0 {
		fetchSize = DefaultFetchSize
	}
	p := &PartitionIterator{c: c, topic: topic, partition: partition, fetchSize: fetchSize,
		MinBackoff: DefaultMinBackoff, MaxBackoff: DefaultMaxBackoff}
	p.SeekTo(offset)
	return p
}

// SeekTo moves the iterator to offset, before or after its position (§3.1:
// a consumer can rewind and re-consume). It also clears a previous error.
func (p *PartitionIterator) SeekTo(offset int64) {
	if p.ranges != nil {
		p.ranges.SeekTo(offset)
	}
	p.it.Reset(nil, offset)
	p.base = offset
	p.err = nil
}

// Next advances to the next message, fetching and, when caught up, waiting
// as needed. It returns false when ctx ends (Err is then ctx's error), or
// on a fetch error, a corrupt message or a CRC mismatch (see Err); after
// that only SeekTo resumes.
func (p *PartitionIterator) Next(ctx context.Context) bool {
	// The hot path: the next message of a run the iterator has checked.
	return p.it.NextChecked() || p.wait(ctx)
}

// wait is the rest of Next: the other messages of the set, then fetching,
// and backing off when caught up.
func (p *PartitionIterator) wait(ctx context.Context) bool {
	if p.err != nil {
		return false
	}
	backoff := time.Duration(0)
	for {
		if p.nextBuffered() {
			return true
		}
		if p.err != nil {
			return false
		}
		if backoff > 0 {
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				p.err = ctx.Err()
				return false
			case <-t.C:
			}
		} else if err := ctx.Err(); err != nil {
			p.err = err
			return false
		}
		got, err := p.fetch()
		if err != nil {
			p.err = err
			return false
		}
		switch {
		case got:
			backoff = 0
		case backoff == 0:
			backoff = max(p.MinBackoff, time.Millisecond)
		default:
			backoff = min(2*backoff, max(p.MaxBackoff, p.MinBackoff))
		}
	}
}

// Poll is Next without waiting: it fetches at most once, and returns false
// with a nil Err when the iterator has caught up with the flushed end.
func (p *PartitionIterator) Poll() bool {
	return p.it.NextChecked() || p.poll()
}

// poll is the rest of Poll.
func (p *PartitionIterator) poll() bool {
	if p.err != nil {
		return false
	}
	if p.nextBuffered() {
		return true
	}
	if p.err != nil {
		return false
	}
	if _, err := p.fetch(); err != nil {
		p.err = err
		return false
	}
	return p.nextBuffered()
}

// fetch reads the next chunk from where the whole messages of the last
// one ended; got reports whether it holds at least one whole message.
func (p *PartitionIterator) fetch() (got bool, err error) {
	from := p.fetchOffset()
	var set []byte
	if p.InFlight > 1 {
		if p.ranges == nil {
			p.ranges = NewRanges(p.topic, p.partition, from, p.fetchSize, p.InFlight)
		}
		set, from, err = p.ranges.Next(p.c, p.it.Consumed())
	} else {
		set, err = p.c.FetchAhead(p.topic, p.partition, from, p.fetchSize)
	}
	if err != nil {
		if p.follow != nil && p.follow.leaderMoved(err) {
			p.moveToLeader(err) // fetched again from the same offset after the backoff
			return false, nil
		}
		return false, err
	}
	p.fetches++
	p.it.Reset(set, from)
	p.base = from
	if p.ranges != nil && p.InFlight > 1 {
		return p.ranges.fetched > 0, nil // a message larger than a range comes in several
	}
	return len(set) >= message.LengthSize &&
		message.LengthSize+int64(binary.BigEndian.Uint32(set)) <= int64(len(set)), nil
}

// fetchOffset is the offset just after the last whole message of the
// current set: where the next fetch starts.
func (p *PartitionIterator) fetchOffset() int64 { return p.base + int64(p.it.Consumed()) }

// nextBuffered moves to the next message already fetched, if any.
func (p *PartitionIterator) nextBuffered() bool {
	if p.it.Next() {
		return true
	}
	if err := p.it.Err(); err != nil {
		p.err = fmt.Errorf("consumer: %s-%d: %w", p.topic, p.partition, err)
	}
	return false
}

// Message is the current message (header included), after a Next or Poll
// that reported true.
func (p *PartitionIterator) Message() message.Message { return p.it.Message() }

// Payload is the current message's payload: of a keyed message (one written
// through the Kafka protocol, message/keyed.go), its value.
func (p *PartitionIterator) Payload() []byte {
	m := p.it.Message()
	if m.Keyed() {
		if _, v, err := m.KeyValue(); err == nil {
			return v
		}
	}
	return m.Payload()
}

// Key is the current message's key, nil for a message without one.
func (p *PartitionIterator) Key() []byte {
	k, _, _ := p.it.Message().KeyValue()
	return k
}

// Offset is the current message's offset, after a Next or Poll that
// reported true.
func (p *PartitionIterator) Offset() int64 { return p.it.Offset() }

// NextOffset is the offset to resume from after the current message: the
// value a consumer commits. After a Next or Poll that reported false, it
// is the offset after the last message handed out (at a bad message, that
// message's own).
func (p *PartitionIterator) NextOffset() int64 { return p.it.Resume() }

// Err is what stopped Next, nil otherwise.
func (p *PartitionIterator) Err() error { return p.err }

// Fetches is the number of fetch requests made so far.
func (p *PartitionIterator) Fetches() int64 { return p.fetches }

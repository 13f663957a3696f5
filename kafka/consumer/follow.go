package consumer

import (
	"errors"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// A PartitionIterator over a replicated partition can follow its leader (docs/PROTOCOL.md §10), as the
// group consumer's fetchers do (replicated.go). When the broker it fetches from answers "not leader for
// partition", "leader not available" or "unknown topic or partition", or cannot be reached, it asks one of
// the bootstrap brokers for the partition's leader (METADATA), moves to that broker and fetches again from
// the same offset: a message has the same byte offset on every replica, so nothing is lost or skipped. A
// new leader may know the high watermark a fetch late, and answer "offset out of range" for an offset the
// old leader had exposed; for followRangeGrace after a move that answer is waited out too. Without ctx
// ending, Next keeps looking, backing off as it does when caught up (MinBackoff doubling to MaxBackoff).

// followRangeGrace is how long after moving to a new leader "offset out of range" is taken for its high
// watermark catching up.
const followRangeGrace = 30 * time.Second

// follow is a leader-following iterator's state.
type follow struct {
	bootstrap []string
	timeout   time.Duration
	own       bool // p.c was opened by the iterator: it closes it when it moves
	movedAt   time.Time
	moves     int
	last      error // why it last moved, or could not
}

// FollowLeaders makes p follow the partition's leader, asking bootstrap (broker addresses, host:port)
// where it is; timeout is each lookup's and each new connection's socket timeout. It returns p.
func (p *PartitionIterator) FollowLeaders(bootstrap []string, timeout time.Duration) *PartitionIterator {
	p.follow = &follow{bootstrap: append([]string(nil), bootstrap...), timeout: timeout}
	return p
}

// LeaderMoves is how many times the iterator moved to another broker, and why it last looked.
func (p *PartitionIterator) LeaderMoves() (int, error) {
	if p.follow == nil {
		return 0, nil
	}
	return p.follow.moves, p.follow.last
}

// Close closes the connection the iterator opened itself when it moved to a new leader (the caller's
// SimpleConsumer stays the caller's to close).
func (p *PartitionIterator) Close() error {
	if p.follow != nil && p.follow.own {
		p.follow.own = false
		return p.c.Close()
	}
	return nil
}

// leaderMoved says whether err is one a leader change explains.
func (f *follow) leaderMoved(err error) bool {
	var code protocol.ErrorCode
	if errors.As(err, &code) {
		switch code {
		case protocol.ErrNotLeaderForPartition, protocol.ErrLeaderNotAvailable, protocol.ErrUnknownTopicOrPartition,
			protocol.ErrReplicaNotAvailable:
			return true
		case protocol.ErrOffsetOutOfRange:
			return !f.movedAt.IsZero() && time.Since(f.movedAt) < followRangeGrace
		}
		return false
	}
	// Not an answer: the broker could not be reached or the connection broke, unless the answer was there
	// and could not be read as one.
	return !errors.Is(err, ErrBadResponse) && !errors.Is(err, ErrNotMessageStart)
}

// moveToLeader looks the partition's leader up and points the iterator at it; when no live leader is known
// yet it records why and leaves the iterator where it is, and the next fetch tries again.
func (p *PartitionIterator) moveToLeader(why error) {
	f := p.follow
	f.last = why
	leaders, hosts, err := Leaders(f.bootstrap, f.timeout, p.topic)
	if err != nil {
		f.last = errors.Join(why, err)
		return
	}
	ls := leaders[p.topic]
	if int(p.partition) >= len(ls) || ls[p.partition] < 0 {
		f.last = errors.Join(why, protocol.ErrLeaderNotAvailable)
		return
	}
	addr, ok := hosts[ls[p.partition]]
	if !ok {
		f.last = errors.Join(why, protocol.ErrLeaderNotAvailable)
		return
	}
	if f.own {
		p.c.Close()
	}
	p.c, f.own = NewSimpleConsumer(addr, f.timeout), true
	f.movedAt = time.Now()
	f.moves++
}

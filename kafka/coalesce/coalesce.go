// Package coalesce decides how many bytes a connection's reader lets
// queue before the kernel wakes it: the receiving side's analogue of a
// network card's interrupt coalescing, for the one kind of client that
// gains from it, a producer that sends one message per request and waits
// for no answer (the paper's, §5: "the Kafka producer currently doesn't
// wait for acknowledgements from the broker and sends messages as faster as
// the broker can handle").
//
// Such a producer writes a ~230-byte request every few microseconds. A
// broker that keeps up is woken for each one, and each wake-up costs both
// sides: the broker a scheduler round trip, the producer's write(2) the work
// of waking it. Neither moves a byte. On Linux a reader can ask to be woken
// only once n bytes are queued (SO_RCVLOWAT); a read that finds bytes still
// returns them at once, so the setting changes only how long a reader with
// nothing to read sleeps.
//
// Rule is a pure function of what the last sleep saw; the broker owns the
// socket and the clock (kafka/broker/coalesce.go). It works toward one
// number, the Gather time: a sleep should last about Gather, so that a
// message waits on average Gather/2 more than it would have. Each sleep is
// observed (how long it lasted, how many bytes had come, whether its
// deadline ended it) and the next wake-up mark is set from the rate the
// sleep saw:
//
//	rate   = bytes / slept   (slept at least 1 µs)
//	next   = rate · Gather, within [mark/2, 2·mark] and [0, MaxBytes]
//	next  <  MinBytes        →  off: woken by every byte again
//
// A read that finds bytes waiting has slept ~0 and doubles the mark: the
// reader is behind, and the next time it sleeps it can wait for more. A
// sleep that the bound ends (the producer paused or stopped) sets the mark
// from what came in it without the halving floor, usually off. While
// off, a connection is watched: Enter sleeps in a row each shorter than
// Gather/8 (requests come back to back) turn coalescing on at MinBytes.
//
// The sending side can gather too. Our producer, as 0.7's, leaves Nagle's
// algorithm on for such a connection (producer.Config.NagleDisable): while
// one segment is unacknowledged, its kernel holds the next requests and
// sends them as one segment when the acknowledgement comes, so the broker
// reads many requests per wake-up whatever its mark, and the producer's
// write(2) only copies. The broker acknowledges what it has read before it
// waits (kafka/broker/lowat_linux.go), so that such a producer is never
// held for TCP's delayed-acknowledgement timer. The rule here remains for a
// client that sets TCP_NODELAY and sends one request per segment.
//
// Only a request that gets no answer is ever followed by a coalesced
// sleep, and a connection that has once sent a request that is answered (a
// fetch, an acks=1 or -1 produce, any Kafka protocol request but an acks=0
// Produce) is never coalesced again. So a consumer's fetch and an
// acknowledged produce never wait on a mark, with one exception a client
// can avoid: the first answered request on a connection that so far sent
// only unanswered ones may wait up to Max once. The paper's producers, and
// ours, keep their produce connections to themselves.
package coalesce

import "time"

// Rule holds the settings. The zero Rule is off.
type Rule struct {
	// Max bounds a coalesced sleep: the broker ends one between Max/2
	// and Max after it began (kafka/broker/coalesce.go; the Go runtime
	// may fire a timer of under a millisecond up to a millisecond late on
	// an idle machine). 0 turns coalescing off.
	Max time.Duration
	// Gather is the sleep the mark aims for (default Max/8).
	Gather time.Duration
	// MinBytes is the smallest mark worth a deadline (default 2048, about
	// eight of the paper's 200-byte messages each in its own request):
	// below it a connection is woken by every byte.
	MinBytes int
	// MaxBytes is the largest mark (default 32 KiB: half of the broker's
	// 64 KiB read buffer, and under the cap the kernel puts on SO_RCVLOWAT,
	// half the receive buffer).
	MaxBytes int
	// Enter is how many short sleeps in a row turn coalescing on (default 4).
	Enter int
}

// Off is the mark that wakes a reader for every byte (SO_RCVLOWAT's default).
const Off = 1

// Defaults returns r with its unset fields filled in.
func (r Rule) Defaults() Rule {
	if r.Gather <= 0 {
		r.Gather = r.Max / 8
	}
	if r.MinBytes <= 0 {
		r.MinBytes = 2048
	}
	if r.MaxBytes <= 0 {
		r.MaxBytes = 32 << 10
	}
	if r.Enter <= 0 {
		r.Enter = 4
	}
	return r
}

// Sleep is what one sleep of the reader saw.
type Sleep struct {
	Mark     int           // the wake-up mark it slept with (Off: an ordinary read)
	Slept    time.Duration // from going to sleep to waking
	Bytes    int           // bytes there to read on waking
	TimedOut bool          // ended by the Max bound, not by bytes
}

// State is one connection's: the mark in force and, while off, how many
// short sleeps have come in a row.
type State struct {
	Mark  int
	short int
}

// Step returns the state after sleep s, for a connection whose last
// request was an unacknowledged produce. The caller sets the socket's mark
// to the returned State's Mark before its next sleep.
func (r Rule) Step(st State, s Sleep) State {
	if r.Max <= 0 {
		return State{Mark: Off}
	}
	if st.Mark <= Off {
		if s.Slept < r.Gather/8 {
			st.short++
		} else {
			st.short = 0
		}
		if st.short >= r.Enter {
			return State{Mark: r.MinBytes}
		}
		st.Mark = Off
		return st
	}
	slept := max(s.Slept, time.Microsecond)
	next := int(int64(s.Bytes) * int64(r.Gather) / int64(slept))
	if !s.TimedOut {
		next = min(max(next, st.Mark/2), 2*st.Mark)
	}
	next = min(next, r.MaxBytes)
	if next < r.MinBytes {
		return State{Mark: Off}
	}
	return State{Mark: next}
}

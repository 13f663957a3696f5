package broker

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/coalesce"
)

// This file is the read side of an unacknowledged producer's connection:
// after a request that gets no answer, with nothing left in the read
// buffer, the connection reads with the mark of package coalesce set on its
// socket, so that the kernel wakes it once the mark's bytes are queued. A
// read that finds bytes returns them at once, mark or not: the mark only
// decides how long a connection with nothing to read sleeps.
//
// The bound: a sleeper is registered with the broker's sleepers, and one
// ticker for the whole broker (running only while someone sleeps) lowers the
// mark of every connection asleep for at least Max/2 to one byte, which
// wakes it if anything is queued (Linux checks when the mark is lowered). A
// read deadline per sleep would bound it too, but arming a timer per sleep
// wakes the runtime's poller thread each time, on this VM as costly as the
// wake-ups coalescing saves.
//
// Every other read is an ordinary one: a request that is answered is never
// followed by a coalesced sleep, and a read inside a request first puts the
// mark back (settle), so a request's own bytes never wait for the mark.

// ackNowBytes is how much a connection must have read since it last waited
// for the wait to be preceded by lowat.ackNow: Linux acknowledges on the
// read any segment shorter than the largest it has seen, and that is at
// least TCP's default MSS, 536 bytes, so a client that sends one small
// request per segment (TCP_NODELAY) is acknowledged without the call.
const ackNowBytes = 536

// ackFirst reports whether the connection asks for the acknowledgement TCP
// has delayed (lowat.ackNow) before its next wait: once it has read
// ackNowBytes since it last waited, unless it is about to sleep with a mark
// and its last sleep, with a mark too, ended by bytes.
//
// Such a producer sends faster than the mark needs: an acknowledgement sent
// as the broker falls asleep would release at once what the sender's kernel
// has gathered under Nagle's algorithm, one more segment short of the mark
// to receive and one more trip through both TCP stacks inside the
// producer's write(2) for each sleep. Without it the sender's kernel keeps
// gathering until Linux acknowledges on its own (more than one full segment
// received, or a read), and the bound ends the sleep if it does not. A
// producer that has just turned coalescing on, or whose last sleep the
// bound ended, is acknowledged as before: figure 7's paced producer, whose
// rare sleeps with a mark end at the bound, would otherwise be held up to
// the bound on each, which its latency's p99 shows.
func (co *coalescer) ackFirst() bool {
	if !co.sockOK || co.unacked < ackNowBytes {
		return false
	}
	return co.st.Mark <= coalesce.Off || !co.byBytes
}

// coalescer is a connection's share of it.
type coalescer struct {
	st   coalesce.State
	sock lowat // the socket's mark
	ok   bool  // SO_RCVLOWAT can be set on this connection and coalescing is on
	// sockOK: the socket's options can be set (lowat.init succeeded).
	sockOK bool
	// unacked counts the request bytes read since the connection last
	// waited (serveConn): ackNow is called before a wait only after
	// ackNowBytes of them.
	unacked int
	quiet   bool      // the request just served expects no answer
	woke    time.Time // when the last sleep ended (zero before the first)
	byBytes bool      // the last sleep had a mark and bytes ended it (ackFirst)
}

// sleep waits for the next request of a connection whose last request was
// unanswered and whose read buffer is empty, with the mark in force, and
// steps the rule on what the sleep saw. The caller has armed the idle
// deadline (armIdle), as for any read between requests.
func (cn *conn) sleep() error {
	co := &cn.co
	mark := co.st.Mark
	// The socket keeps the mark it slept with last until told otherwise,
	// and a rule that turned off after a sleep that bytes ended must not
	// leave it there: the sleep always sets the state's mark.
	if err := cn.setMark(mark); err != nil {
		return err
	}
	if mark > coalesce.Off {
		cn.b.sleepers.add(cn)
		cn.b.sleepers.sleeps.Add(1)
	}
	start := time.Now()
	_, err := cn.r.Peek(1)
	end := time.Now()
	s := coalesce.Sleep{Mark: mark, Slept: end.Sub(start), Bytes: cn.r.Buffered()}
	if !co.woke.IsZero() {
		s.Awake = start.Sub(co.woke)
	}
	co.woke = end
	if mark > coalesce.Off && cn.b.sleepers.remove(cn) {
		// The ticker woke it and set the mark to one byte.
		s.TimedOut = true
		co.sock.n = coalesce.Off
		cn.b.sleepers.woken.Add(1)
	}
	if err != nil {
		return err
	}
	co.byBytes = mark > coalesce.Off && !s.TimedOut
	co.st = cn.b.coalesce.Step(co.st, s)
	return nil
}

// settle puts the mark of one byte back before a read from the socket
// outside sleep.
func (cn *conn) settle() error {
	return cn.setMark(coalesce.Off)
}

// setMark sets the socket's mark if it is not n already.
func (cn *conn) setMark(n int) error {
	l := &cn.co.sock
	if l.n == n {
		return nil
	}
	return l.set(n)
}

// sleepers are the connections asleep with a mark, and the ticker that
// bounds their sleep.
type sleepers struct {
	period time.Duration // Max/2
	stop   <-chan struct{}
	wake   chan struct{} // add to the idle ticker: someone sleeps

	sleeps atomic.Int64 // sleeps with a mark, since the start
	woken  atomic.Int64 // of which the ticker ended
	acks   atomic.Int64 // lowat.ackNow calls before a wait, since the start

	mu      sync.Mutex
	asleep  map[*conn]int64 // the tick count when each fell asleep
	tick    int64
	running bool // the ticker ticks
	started bool // its goroutine runs
}

func newSleepers(max time.Duration, stop <-chan struct{}) *sleepers {
	return &sleepers{period: max / 2, stop: stop, wake: make(chan struct{}, 1), asleep: make(map[*conn]int64)}
}

func (s *sleepers) add(cn *conn) {
	s.mu.Lock()
	s.asleep[cn] = s.tick
	switch {
	case !s.started:
		s.started, s.running = true, true
		go s.run()
	case !s.running:
		s.running = true
		// The idle goroutine waits for this; the buffer holds it until
		// then. One already there (left by a run the stop ended) wakes it
		// as well, and a send that waited here, holding mu, could wait
		// forever on a run that takes mu to stop.
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	s.mu.Unlock()
}

// remove takes cn off the list and reports whether the ticker had woken it
// (and taken it off) first.
func (s *sleepers) remove(cn *conn) (woken bool) {
	s.mu.Lock()
	_, asleep := s.asleep[cn]
	delete(s.asleep, cn)
	s.mu.Unlock()
	return !asleep
}

// run ticks every Max/2 while anyone sleeps. A connection that fell asleep
// at tick k is woken at tick k+2, between Max/2 and Max later. When no one
// sleeps the ticker stops and the goroutine waits for the next sleeper, so
// a connection that coalesces in bursts starts neither a goroutine nor a
// ticker for each. Once the broker stops, every sleeper is woken at once
// and run returns (a later sleeper starts a run of its own, which wakes it
// at once too).
func (s *sleepers) run() {
	t := time.NewTicker(s.period)
	defer t.Stop()
	for {
		stopping := false
		select {
		case <-t.C:
		case <-s.stop:
			stopping = true
		}
		s.mu.Lock()
		s.tick++
		for cn, at := range s.asleep {
			if stopping || s.tick-at >= 2 {
				cn.co.sock.set(coalesce.Off) // an error: the connection is closing, its read fails anyway
				delete(s.asleep, cn)
			}
		}
		if stopping {
			s.running, s.started = false, false
			s.mu.Unlock()
			return
		}
		if len(s.asleep) > 0 {
			s.mu.Unlock()
			continue
		}
		s.running = false
		s.mu.Unlock()
		t.Stop()
		select {
		case <-s.wake:
			t.Reset(s.period)
		case <-s.stop:
			// The loop's select sees the stop and wakes whoever came since.
		}
	}
}

// EarlyAcks returns how many times, since the start, a connection whose
// requests get no answer called for TCP's delayed acknowledgement before it
// waited for more with no mark (lowat.ackNow: after at least ackNowBytes
// read since its last wait; ackFirst).
func (b *Broker) EarlyAcks() int64 { return b.sleepers.acks.Load() }

// CoalesceStats returns how many times, since the start, a connection slept
// with a mark of more than one byte (package coalesce), and how many of
// those sleeps produce.coalesce.max.us ended.
func (b *Broker) CoalesceStats() (sleeps, woken int64) {
	return b.sleepers.sleeps.Load(), b.sleepers.woken.Load()
}

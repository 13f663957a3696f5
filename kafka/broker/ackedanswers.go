package broker

import (
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// An acks=-1 produce is answered once its sets are committed (every in-sync replica has them, the paper's
// §6 synchronous model), which takes a follower fetch round trip and the followers' next fetch. Waiting
// for that on the connection's goroutine would leave the next request of a producer that keeps several in
// flight (max.in.flight.requests.per.connection) unread in the socket until then: its sets would reach the
// followers one round trip each. So the connection appends each acks=-1 produce as it reads it and queues
// its answer on the connection's answerer, which writes the answers in the order of their requests
// (docs/PROTOCOL.md §4: a connection's answers come in the order of its requests) as their sets are
// committed. Any other request that is answered first waits until every answer queued before it is
// written, so the order holds across request types too. With one request in flight, as the §5 producer
// sends, the bytes on the wire are the same as before; only the goroutine that writes the answer differs.
//
// Who writes: the goroutine that settles the oldest answer, as it settles it. A commit happens on the
// goroutine that serves the follower fetch which moved the high watermark (replication.Partition.Watch
// runs the answerer's pump there), a produce to a partition of one in-sync replica is committed by its own
// append, and an answer whose request timeout passes is written by the timer's goroutine. None of them
// waits for the producer's socket: what it does not take at once is left to the answerer's goroutine,
// which waits for the socket. So no goroutine is woken per commit just to write its answer.

// maxQueuedAnswers bounds the acks=-1 answers a connection holds; a client pipelining more waits (its
// next request is not read) until the oldest is answered. Each holds only its results (the request's
// bytes were appended and released). 64, as figure 6's producer keeps in flight
// (replication.InFlight in experiments/replication).
const maxQueuedAnswers = 64

// answerer holds a connection's acks=-1 answers until their sets are committed, and writes them in order.
type answerer struct {
	cn     *conn
	pumpFn func() // a.pump(false), bound once

	mu      sync.Mutex
	q       []pendingAnswer // waiting for their commits, oldest first
	out     []byte          // answers taken from q, in order, not written yet
	writing bool            // a goroutine is writing a.out: one at a time, so answers leave in order
	closed  bool            // the connection is ending: nothing more is written
	err     error           // the first failed write: the connection closes
	timerAt time.Time       // the deadline timer is set for (zero: stopped)
	timer   *time.Timer     // pumps at the oldest answer's request timeout

	watched map[*replication.Partition]func() // partitions whose changes pump a, and their unwatch; the connection's goroutine only
	room    chan struct{}                     // one slot: q shrank
	idle    chan struct{}                     // one slot: nothing queued, held or being written
	kick    chan struct{}                     // one slot: a.out holds bytes the socket did not take
	abort   chan struct{}                     // closed when the connection ends
	done    chan struct{}
}

// pendingAnswer is one appended acks=-1 produce waiting for its commits.
type pendingAnswer struct {
	results  []protocol.ProduceResult
	waits    []*replication.Partition // nil where nothing waits (refused, a 0.7 partition, or settled)
	ends     []int64
	deadline time.Time
}

// queueAnswer hands an appended acks=-1 produce to the connection's answerer, starting it on first use. It
// waits while maxQueuedAnswers are queued, and fails when the connection is ending.
func (cn *conn) queueAnswer(pa pendingAnswer) error {
	a := cn.ans
	if a == nil {
		a = &answerer{cn: cn, watched: map[*replication.Partition]func(){}, room: make(chan struct{}, 1),
			idle: make(chan struct{}, 1), kick: make(chan struct{}, 1), abort: make(chan struct{}), done: make(chan struct{})}
		a.pumpFn = func() { a.pump(false) }
		a.timer = time.AfterFunc(time.Hour, a.pumpFn)
		a.timer.Stop()
		cn.ans = a
		go a.run()
	}
	for _, p := range pa.waits {
		if p != nil && a.watched[p] == nil {
			a.watched[p] = p.Watch(a.pumpFn)
		}
	}
	for {
		a.mu.Lock()
		if a.err != nil || a.closed {
			err := a.err
			a.mu.Unlock()
			if err == nil {
				err = errAnswererClosed
			}
			return err
		}
		if len(a.q) < maxQueuedAnswers {
			a.q = append(a.q, pa)
			a.mu.Unlock()
			break
		}
		a.mu.Unlock()
		select {
		case <-a.room:
		case <-cn.b.stopping:
			return errAnswererClosed
		}
	}
	a.pump(false) // settled already (an ISR of one), or the timer is to be set
	return nil
}

// drainAnswers waits until every queued answer is written, and returns the error of a failed write (which
// closes the connection).
func (cn *conn) drainAnswers() error {
	a := cn.ans
	if a == nil {
		return nil
	}
	for {
		a.mu.Lock()
		err, idle := a.err, len(a.q) == 0 && len(a.out) == 0 && !a.writing
		a.mu.Unlock()
		if err != nil || idle {
			return err
		}
		select {
		case <-a.idle:
		case <-cn.b.stopping:
			return errAnswererClosed
		}
	}
}

// stopAnswers ends the answerer as the connection ends: nothing more is written, the answers still queued
// are dropped (nobody is left to read them), and the partitions no longer pump it.
func (cn *conn) stopAnswers() {
	a := cn.ans
	if a == nil {
		return
	}
	a.mu.Lock()
	a.closed = true
	a.timer.Stop()
	a.mu.Unlock()
	for _, unwatch := range a.watched {
		unwatch()
	}
	close(a.abort)
	<-a.done
}

// run is the answerer's goroutine: it finishes the writes the socket did not take at once, waiting for it.
func (a *answerer) run() {
	defer close(a.done)
	for {
		select {
		case <-a.kick:
			a.pump(true)
		case <-a.abort:
			return
		}
	}
}

// pump writes every answer at the head of the queue whose sets are settled (committed, refused, or past
// the request's timeout), in order, in one write for those ready together, and goes on while more become
// ready meanwhile. wait says whether it may wait for the socket (the answerer's goroutine); otherwise what
// the socket does not take is left to that goroutine. One goroutine writes at a time: a pump that finds
// another writing leaves the answers to it, which looks again when its write is done.
func (a *answerer) pump(wait bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for !a.writing && !a.closed && a.err == nil {
		a.settle()
		if len(a.out) == 0 {
			break
		}
		a.writing = true
		buf := a.out
		a.mu.Unlock()
		var n int
		var err error
		if wait {
			n, err = len(buf), a.cn.send.write(buf, false)
		} else {
			n, err = a.cn.send.tryWrite(buf)
		}
		a.mu.Lock()
		a.writing = false
		if err != nil {
			a.err = err
			a.cn.c.Close() // the connection's reader fails and ends it
			break
		}
		a.out = a.out[:copy(a.out, a.out[n:])]
		if len(a.out) > 0 {
			signal(a.kick) // the socket is full: the answerer's goroutine waits for it
			break
		}
	}
	if a.err != nil || a.closed || len(a.q) == 0 && len(a.out) == 0 && !a.writing {
		signal(a.idle)
		signal(a.room)
	}
	a.armTimer()
}

// settle moves the answers at the head of the queue whose sets are all settled into a.out. a.mu is held.
func (a *answerer) settle() {
	var now time.Time
	took := 0
	for took < len(a.q) {
		pa := &a.q[took]
		ready := true
		for i, p := range pa.waits {
			if p == nil {
				continue
			}
			code, done := p.Committed(pa.ends[i])
			if !done {
				if now.IsZero() {
					now = time.Now()
				}
				if now.Before(pa.deadline) {
					ready = false
					break
				}
				code = protocol.ErrRequestTimedOut
			}
			pa.results[i].Error, pa.waits[i] = code, nil
		}
		if !ready {
			break
		}
		a.out = protocol.AppendAckedProduceResponse(a.out, pa.results)
		took++
	}
	if took > 0 {
		n := copy(a.q, a.q[took:])
		clear(a.q[n:])
		a.q = a.q[:n]
		signal(a.room)
	}
}

// armTimer sets the timer for the oldest queued answer's request timeout. a.mu is held.
func (a *answerer) armTimer() {
	if len(a.q) == 0 || a.closed {
		if !a.timerAt.IsZero() {
			a.timer.Stop()
			a.timerAt = time.Time{}
		}
		return
	}
	if d := a.q[0].deadline; !d.Equal(a.timerAt) {
		a.timer.Reset(time.Until(d))
		a.timerAt = d
	}
}

// signal fills ch's one slot unless it is full already.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

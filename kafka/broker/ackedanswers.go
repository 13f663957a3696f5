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
// followers one round trip each. So the connection appends each acks=-1 produce as it reads it and hands
// the wait to the connection's answerer, which waits for the commits in arrival order and writes the
// answers in that order (docs/PROTOCOL.md §4: a connection's answers come in the order of its requests).
// Any other request that is answered first waits until every answer queued before it is written, so the
// order holds across request types too. With one request in flight, as the §5 producer sends, the bytes
// on the wire are the same as before; only the goroutine that writes the answer differs.

// maxQueuedAnswers bounds the acks=-1 answers a connection holds; a client pipelining more waits (its
// next request is not read) until the oldest is written.
const maxQueuedAnswers = 16

// answerer writes a connection's acks=-1 answers, in order, from its own goroutine.
type answerer struct {
	q       chan pendingAnswer
	pending sync.WaitGroup // queued answers not written yet
	abort   chan struct{}  // closed when the connection ends: waits give up
	done    chan struct{}
	out     []byte

	mu  sync.Mutex
	err error // the first failed write: the connection closes
}

// pendingAnswer is one appended acks=-1 produce waiting for its commits.
type pendingAnswer struct {
	results  []protocol.ProduceResult
	waits    []*replication.Partition // nil where nothing waits (refused, or a 0.7 partition)
	ends     []int64
	deadline time.Time
}

// queueAnswer hands an appended acks=-1 produce to the connection's answerer, starting it on first use.
func (cn *conn) queueAnswer(pa pendingAnswer) {
	if cn.ans == nil {
		cn.ans = &answerer{q: make(chan pendingAnswer, maxQueuedAnswers), abort: make(chan struct{}), done: make(chan struct{})}
		go cn.ans.run(cn)
	}
	cn.ans.pending.Add(1)
	cn.ans.q <- pa
}

// drainAnswers waits until every queued answer is written, and returns the error of a failed write (which
// closes the connection).
func (cn *conn) drainAnswers() error {
	if cn.ans == nil {
		return nil
	}
	cn.ans.pending.Wait()
	cn.ans.mu.Lock()
	defer cn.ans.mu.Unlock()
	return cn.ans.err
}

// stopAnswers ends the answerer as the connection ends: waits still running give up, and nothing more is
// written.
func (cn *conn) stopAnswers() {
	if cn.ans == nil {
		return
	}
	close(cn.ans.abort)
	close(cn.ans.q)
	<-cn.ans.done
}

// run answers the queued produces in order. Answers that are ready together (one follower fetch committed
// several sets) go out in one write, which the producer's buffered reader takes in one read.
func (a *answerer) run(cn *conn) {
	defer close(a.done)
	held := 0 // answers in a.out, not written yet
	for {
		var pa pendingAnswer
		var ok bool
		select {
		case pa, ok = <-a.q:
		default:
			a.write(cn, held) // nothing more queued now: send what is ready
			held = 0
			pa, ok = <-a.q
		}
		if !ok {
			a.write(cn, held)
			return
		}
		if held > 0 && !pa.ready() {
			a.write(cn, held) // the next waits: send what is ready first
			held = 0
		}
		for i, p := range pa.waits {
			if p != nil {
				pa.results[i].Error = p.WaitCommittedOr(pa.ends[i], time.Until(pa.deadline), a.abort)
			}
		}
		if held == 0 {
			a.out = a.out[:0]
		}
		a.out = protocol.AppendAckedProduceResponse(a.out, pa.results)
		held++
	}
}

// ready reports whether every set of pa is committed already (or its leader gone).
func (pa *pendingAnswer) ready() bool {
	for i, p := range pa.waits {
		if p != nil && !p.CommittedNow(pa.ends[i]) {
			return false
		}
	}
	return true
}

// write sends the n answers held in a.out, unless the connection is ending or a write failed.
func (a *answerer) write(cn *conn, n int) {
	if n == 0 {
		return
	}
	a.mu.Lock()
	failed := a.err != nil
	a.mu.Unlock()
	select {
	case <-a.abort:
		failed = true
	default:
	}
	if !failed {
		if err := cn.send.write(a.out, false); err != nil {
			a.mu.Lock()
			a.err = err
			a.mu.Unlock()
			cn.c.Close() // the connection's reader fails and ends it
		}
	}
	for range n {
		a.pending.Done()
	}
}

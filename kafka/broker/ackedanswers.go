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

func (a *answerer) run(cn *conn) {
	defer close(a.done)
	for pa := range a.q {
		for i, p := range pa.waits {
			if p != nil {
				pa.results[i].Error = p.WaitCommittedOr(pa.ends[i], time.Until(pa.deadline), a.abort)
			}
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
			a.out = protocol.AppendAckedProduceResponse(a.out[:0], pa.results)
			if err := cn.send.write(a.out, false); err != nil {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
				cn.c.Close() // the connection's reader fails and ends it
			}
		}
		a.pending.Done()
	}
}

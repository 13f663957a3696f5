package producer

import (
	"bufio"
	"errors"
	"fmt"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// Several acknowledged produces in flight on one leader connection (max.in.flight.requests.per.connection,
// Config.MaxInFlight > 1, acks 1 or -1, replicated topics). With one in flight, as 0.8's sync producer and
// the paper's §5 producer, an acks=-1 batch costs a whole replication round trip (the leader appends, its
// followers fetch, append, and fetch again to say so) before the next is even written; with several, the
// next batches are appended while the first waits, and one follower fetch carries them all. The leader
// answers a connection's requests in their order (docs/PROTOCOL.md §4), so the answers are matched to the
// sets by position: the oldest unanswered set is the next answer.
//
// Send writes its set and returns nil once at most MaxInFlight-1 sets are unanswered on the connection,
// reading the oldest answers until then; Flush reads every answer; Close flushes first. A set's failure
// is returned by the Send, Flush or Close that read its answer, not by the Send that wrote it. Every
// acknowledged produce of the producer (all goroutines) goes through one lock while pipelined, in the
// order it took it.
//
// Ordering under retries, exactly. When a set fails with an error that means "the leader moved or did not
// answer" (a broken connection, NotLeaderForPartition, RequestTimedOut, ...), the producer closes that
// connection, drops the answers still to come on it, and resends — after looking the leader up again and
// retry.backoff.ms, one set at a time and waiting for each answer — the failed set and every set written
// after it on that connection, in the order they were first written, each with its own
// message.send.max.retries. Sets written after it that the broker had already appended are then written a
// second time. So, within a partition:
//   - every set whose answer said so is in the log, and one whose retries ran out is reported (wrapping
//     ErrNotAcknowledged) and may or may not be there;
//   - the sets, in the order the producer's Sends wrote them, appear in the log as a subsequence: reading
//     the log and keeping each set's last copy gives them in send order, with nothing missing that was
//     acknowledged. Duplicates come only from these resends, as with one in flight.
//
// A set that fails for good (a refused message: not retriable) is reported and not resent; the sets after
// it are not affected. Before a set is written to a broker, any other connection that still has sets of
// the same partition in flight (its leader moved) is drained first, so a partition's sets never race on
// two connections.

// maxInFlight bounds MaxInFlight (the broker holds 16 answers per connection before it stops reading).
const maxInFlight = 64

// inflightSet is a set written to a leader whose answer has not been read yet.
type inflightSet struct {
	topic string
	part  int32
	set   []byte
	why   error // why it is resent
}

// pipelined says whether acknowledged produces to replicated topics are pipelined.
func (p *SyncProducer) pipelined() bool {
	return p.cfg.MaxInFlight > 1 && p.cfg.RequiredAcks != protocol.AcksNone
}

// sendPipelined writes one set to its partition's leader and reads the oldest answers until the window has
// room; it resends, in order, what failed.
func (p *SyncProducer) sendPipelined(tm *topicMeta, topic string, part int32, set []byte) error {
	p.pipeMu.Lock()
	defer p.pipeMu.Unlock()
	var errs []error
	e := inflightSet{topic: topic, part: part, set: set}
	leader := tm.leaders[part]
	b, ok := tm.brokers[leader]
	if leader < 0 || !ok {
		e.why = fmt.Errorf("producer: %s-%d: %w", topic, part, protocol.ErrLeaderNotAvailable)
		failed := p.drainAllLocked(&errs)
		errs = p.resendLocked(append(failed, e), errs)
		return errors.Join(errs...)
	}
	c, err := p.leaders.get(b)
	if err != nil {
		return err
	}
	if failed := p.drainOthersLocked(c, topic, part, &errs); len(failed) > 0 {
		errs = p.resendLocked(failed, errs)
	}
	c.mu.Lock()
	req := protocol.AckedProduceRequest{Acks: p.cfg.RequiredAcks, TimeoutMs: int32(p.cfg.RequestTimeout.Milliseconds()),
		Produces: []protocol.ProduceRequest{{Topic: topic, Partition: part, Messages: set}}}
	c.buf = req.AppendTo(c.buf[:0])
	var failed []inflightSet
	if err := c.writeOnceLocked(); err != nil {
		// Whatever was in flight on it has no answer coming either.
		e.why = err
		failed = append(c.takeInflightLocked(err), e)
	} else {
		c.inflight = append(c.inflight, e)
	}
	for failed == nil && len(c.inflight) >= p.cfg.MaxInFlight {
		failed = p.readOldestLocked(c, &errs)
	}
	c.mu.Unlock()
	if failed != nil {
		failed = append(failed, p.drainAllLocked(&errs)...)
		errs = p.resendLocked(failed, errs)
	}
	return errors.Join(errs...)
}

// Flush reads the answer of every set in flight (resending, in order, what failed) and returns the
// errors of the sets that were not acknowledged. Without MaxInFlight > 1 there is nothing to flush.
func (p *SyncProducer) Flush() error {
	if !p.pipelined() {
		return nil
	}
	p.pipeMu.Lock()
	defer p.pipeMu.Unlock()
	var errs []error
	if failed := p.drainAllLocked(&errs); len(failed) > 0 {
		errs = p.resendLocked(failed, errs)
	}
	return errors.Join(errs...)
}

// readOldestLocked reads the answer to c's oldest set in flight. A set refused for good is reported in
// errs; one that should be retried returns it and every later set of c (c is closed: their answers are
// dropped).
func (p *SyncProducer) readOldestLocked(c *brokerConn, errs *[]error) []inflightSet {
	e := c.inflight[0]
	code, err := c.readAnswerLocked(p.cfg.RequestTimeout)
	if err == nil && code == protocol.ErrNone {
		p.sets.put(c.popInflightLocked())
		return nil
	}
	if err == nil && !code.Retriable() {
		p.sets.put(c.popInflightLocked())
		*errs = append(*errs, fmt.Errorf("producer: %s-%d on broker %d: %w", e.topic, e.part, c.broker.ID, code))
		return nil
	}
	if err == nil {
		err = fmt.Errorf("producer: %s-%d on broker %d: %w", e.topic, e.part, c.broker.ID, code)
	}
	c.closeLocked()
	return c.takeInflightLocked(err)
}

// drainAllLocked reads every answer in flight on every leader connection and returns the sets to resend.
func (p *SyncProducer) drainAllLocked(errs *[]error) []inflightSet {
	var failed []inflightSet
	for _, c := range p.leaders.all() {
		c.mu.Lock()
		for len(c.inflight) > 0 {
			if f := p.readOldestLocked(c, errs); f != nil {
				failed = append(failed, f...)
			}
		}
		c.mu.Unlock()
	}
	return failed
}

// drainOthersLocked drains the connections other than c that have sets of topic-part in flight.
func (p *SyncProducer) drainOthersLocked(c *brokerConn, topic string, part int32, errs *[]error) []inflightSet {
	var failed []inflightSet
	for _, o := range p.leaders.all() {
		if o == c {
			continue
		}
		o.mu.Lock()
		holds := false
		for _, e := range o.inflight {
			holds = holds || e.topic == topic && e.part == part
		}
		for holds && len(o.inflight) > 0 {
			if f := p.readOldestLocked(o, errs); f != nil {
				failed = append(failed, f...)
			}
		}
		o.mu.Unlock()
	}
	return failed
}

// resendLocked sends the failed sets again in their order, one at a time, each waiting for its answer
// with its own retries (looking the leader up first). No connection has anything in flight meanwhile.
func (p *SyncProducer) resendLocked(failed []inflightSet, errs []error) []error {
	for _, e := range failed {
		if err := p.retrySet(e.topic, e.part, e.set, 1, e.why); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// writeOnceLocked writes c.buf once (dialling first if needed); unlike writeLocked it does not retry on a
// new connection, which would leave the sets in flight on the old one unanswered.
func (c *brokerConn) writeOnceLocked() error {
	if c.conn == nil {
		if len(c.inflight) > 0 {
			return fmt.Errorf("producer: connection to broker %d closed with %d sets in flight", c.broker.ID, len(c.inflight))
		}
		if err := c.dialLocked(); err != nil {
			return fmt.Errorf("producer: connect to broker %d (%s): %w", c.broker.ID, c.broker.Addr(), err)
		}
	}
	if _, err := c.conn.Write(c.buf); err != nil {
		c.closeLocked()
		return fmt.Errorf("producer: send %d bytes to broker %d (%s): %w", len(c.buf), c.broker.ID, c.broker.Addr(), err)
	}
	return nil
}

// readAnswerLocked reads one ACKED_PRODUCE answer of one set. A broken or malformed answer closes the
// connection.
func (c *brokerConn) readAnswerLocked(timeout time.Duration) (protocol.ErrorCode, error) {
	if c.conn == nil {
		return 0, fmt.Errorf("producer: connection to broker %d closed before its answer", c.broker.ID)
	}
	c.conn.SetReadDeadline(time.Now().Add(timeout + 5*time.Second))
	if c.r == nil || c.rconn != c.conn {
		c.r, c.rconn = bufio.NewReader(c.conn), c.conn
	}
	code, payload, buf, err := protocol.ReadResponse(c.r, c.rbuf)
	c.rbuf = buf
	if err != nil {
		c.closeLocked()
		return 0, fmt.Errorf("producer: answer from broker %d (%s): %w", c.broker.ID, c.broker.Addr(), err)
	}
	if code != protocol.ErrNone {
		return code, nil
	}
	c.results, err = protocol.DecodeAckedProduceResponse(c.results[:0], payload)
	if err != nil || len(c.results) != 1 {
		c.closeLocked()
		return 0, fmt.Errorf("producer: answer from broker %d: %d results, %v", c.broker.ID, len(c.results), err)
	}
	return c.results[0].Error, nil
}

// popInflightLocked forgets c's oldest set in flight (the window is short: shifting it allocates nothing)
// and returns its bytes, which nothing sends again.
func (c *brokerConn) popInflightLocked() []byte {
	set := c.inflight[0].set
	n := copy(c.inflight, c.inflight[1:])
	c.inflight[n] = inflightSet{}
	c.inflight = c.inflight[:n]
	return set
}

// takeInflightLocked returns c's sets in flight, oldest first, to be resent because of why, and forgets
// them.
func (c *brokerConn) takeInflightLocked(why error) []inflightSet {
	out := append([]inflightSet(nil), c.inflight...)
	for i := range out {
		out[i].why = why
	}
	clear(c.inflight)
	c.inflight = c.inflight[:0]
	return out
}

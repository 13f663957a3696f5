package faults

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// idSize is the length of a message's name at the start of its payload.
const idSize = len("krf p0000 s00000000 m0000 ")

// ID names one message: its partition, the set it was sent in (numbered per partition from 0) and its
// place in that set.
type ID struct {
	Partition int32
	Set       int
	Msg       int
}

func (id ID) less(o ID) bool { return id.Set < o.Set || id.Set == o.Set && id.Msg < o.Msg }

// Payload is the message id names, padded with 'x' to size bytes (at least its name's).
func Payload(id ID, size int) []byte {
	b := fmt.Appendf(make([]byte, 0, max(size, idSize)), "krf p%04d s%08d m%04d ", id.Partition, id.Set, id.Msg)
	for len(b) < size {
		b = append(b, 'x')
	}
	return b
}

// ParseID reads the name at the start of a payload Payload made.
func ParseID(payload []byte) (ID, bool) {
	if len(payload) < idSize || !bytes.HasPrefix(payload, []byte("krf p")) {
		return ID{}, false
	}
	p, err1 := strconv.Atoi(string(payload[5:9]))
	s, err2 := strconv.Atoi(string(payload[11:19]))
	m, err3 := strconv.Atoi(string(payload[21:25]))
	if err1 != nil || err2 != nil || err3 != nil || payload[9] != ' ' || payload[10] != 's' || payload[20] != 'm' {
		return ID{}, false
	}
	return ID{Partition: int32(p), Set: s, Msg: m}, true
}

// Workload is what the producers send: one synchronous producer per partition, each sending sets of
// SetSize messages one after another.
type Workload struct {
	Topic       string
	Partitions  int
	SetSize     int   // messages per set (default 10)
	MessageSize int   // bytes per message (default 100)
	Acks        int16 // request.required.acks
	// Config adjusts the producers' settings after the harness's (metadata.broker.list, acks, 20 retries
	// 250 ms apart, request.timeout.ms 5000); nil keeps them.
	Config func(*producer.Config)
	// MaxSets bounds the sets per partition (0: until Stop); Pause is the wait between two sets.
	MaxSets int
	Pause   time.Duration
	// FirstSet numbers the first set of each partition (then FirstSet+1, ...): a later workload on the same
	// topic starts above every set of the earlier ones, so that one Check covers them all, in order.
	FirstSet int
}

// Set is the record of one set: what was sent, when, and how the producer's call ended (Done is zero while
// the call is in flight).
type Set struct {
	Partition  int32
	Seq        int // the set's number in its partition
	Messages   int
	Sent, Done time.Time
	Acked      bool
	Err        string // the producer's error, if not acknowledged
}

// Run is a workload running against a cluster.
type Run struct {
	w    Workload
	t    testing.TB
	mu   sync.Mutex
	sets [][]Set // per partition, in send order
	ack  *sync.Cond
	stop chan struct{}
	wg   sync.WaitGroup
}

// Start starts the workload's producers against c; Stop ends them.
func (w Workload) Start(t testing.TB, c *Cluster) *Run {
	t.Helper()
	if w.SetSize <= 0 {
		w.SetSize = 10
	}
	if w.MessageSize <= 0 {
		w.MessageSize = 100
	}
	r := &Run{w: w, t: t, sets: make([][]Set, w.Partitions), stop: make(chan struct{})}
	r.ack = sync.NewCond(&r.mu)
	for p := range w.Partitions {
		cfg := producer.DefaultConfig()
		cfg.MetadataBrokerList = c.BrokerList()
		cfg.RequiredAcks = w.Acks
		cfg.MessageSendMaxRetries, cfg.RetryBackoff, cfg.RequestTimeout = 20, 250*time.Millisecond, 5*time.Second
		if w.Config != nil {
			w.Config(&cfg)
		}
		prod, err := producer.NewSync(cfg)
		if err != nil {
			t.Fatalf("faults: producer: %v", err)
		}
		r.wg.Add(1)
		go r.produce(prod, int32(p))
	}
	t.Cleanup(r.Stop)
	return r
}

func (r *Run) produce(prod *producer.SyncProducer, p int32) {
	defer r.wg.Done()
	defer prod.Close()
	msgs := make([][]byte, r.w.SetSize)
	for k := 0; r.w.MaxSets == 0 || k < r.w.MaxSets; k++ {
		seq := r.w.FirstSet + k
		select {
		case <-r.stop:
			return
		default:
		}
		for i := range msgs {
			msgs[i] = Payload(ID{Partition: p, Set: seq, Msg: i}, r.w.MessageSize)
		}
		r.mu.Lock() // recorded before it is sent: a consumer may see it before Send returns
		r.sets[p] = append(r.sets[p], Set{Partition: p, Seq: seq, Messages: len(msgs), Sent: time.Now()})
		r.mu.Unlock()
		err := prod.Send(r.w.Topic, p, msgs...)
		r.mu.Lock()
		s := &r.sets[p][k]
		s.Done, s.Acked = time.Now(), err == nil
		if err != nil {
			s.Err = err.Error()
		}
		r.ack.Broadcast()
		r.mu.Unlock()
		if r.w.Pause > 0 {
			select {
			case <-r.stop:
				return
			case <-time.After(r.w.Pause):
			}
		}
	}
}

// Wait waits until every producer has sent its MaxSets sets.
func (r *Run) Wait() { r.wg.Wait() }

// Stop ends the producers after their sets in flight; it is safe to call twice.
func (r *Run) Stop() {
	r.mu.Lock()
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	r.ack.Broadcast()
	r.mu.Unlock()
	r.wg.Wait()
}

// set returns the record of set seq of partition p, nil if there is none (yet). r.mu is held.
func (r *Run) set(p int32, seq int) *Set {
	if p < 0 || int(p) >= len(r.sets) || seq < r.w.FirstSet || seq-r.w.FirstSet >= len(r.sets[p]) {
		return nil
	}
	return &r.sets[p][seq-r.w.FirstSet]
}

// Sets returns a copy of the records so far, per partition.
func (r *Run) Sets() [][]Set {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([][]Set, len(r.sets))
	for p, ss := range r.sets {
		out[p] = append([]Set(nil), ss...)
	}
	return out
}

// AckedAfter waits until partition p has a set acknowledged after at and returns when that happened;
// false if none came within timeout (or the workload stopped).
func (r *Run) AckedAfter(p int32, at time.Time, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() { r.mu.Lock(); r.ack.Broadcast(); r.mu.Unlock() })
	defer timer.Stop()
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for _, s := range r.sets[p] {
			if s.Acked && s.Done.After(at) {
				return s.Done, true
			}
		}
		select {
		case <-r.stop:
			return time.Time{}, false
		default:
		}
		if time.Now().After(deadline) {
			return time.Time{}, false
		}
		r.ack.Wait()
	}
}

// Counts are how many sets the workload has sent so far and how many were acknowledged.
func (r *Run) Counts() (sent, acked int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ss := range r.sets {
		for _, s := range ss {
			sent++
			if s.Acked {
				acked++
			}
		}
	}
	return sent, acked
}

// Received is one message a tailing consumer got.
type Received struct {
	ID ID
	At time.Time
}

// Tail is a group consumer reading the topic while the faults happen (it follows the leaders as
// consumers do, docs/PROTOCOL.md §10).
type Tail struct {
	g    *consumer.GroupConsumer
	mu   sync.Mutex
	got  []Received
	bad  int
	cond *sync.Cond
	done chan struct{}
}

// StartTail starts a group consumer of topic (group "krf-tail", from the smallest offset).
func StartTail(t testing.TB, c *Cluster, topic string) *Tail {
	t.Helper()
	cfg := consumer.DefaultGroupConfig()
	cfg.GroupID, cfg.ZkConnect = "krf-tail", c.ZK
	cfg.FetcherBackoff = 200 * time.Millisecond
	cfg.SocketTimeout = 10 * time.Second
	// Its warnings while a leader is away ("fetch round failed", every backoff) are the expected
	// consequence of the faults; errors still show.
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	g, err := consumer.NewGroupConsumer(cfg)
	if err != nil {
		t.Fatalf("faults: consumer: %v", err)
	}
	streams, err := g.CreateMessageStreams(map[string]int{topic: 1})
	if err != nil {
		g.Close()
		t.Fatalf("faults: consumer streams: %v", err)
	}
	tl := &Tail{g: g, done: make(chan struct{})}
	tl.cond = sync.NewCond(&tl.mu)
	go func() {
		defer close(tl.done)
		s := streams[topic][0]
		for s.Next() {
			id, ok := ParseID(s.Message().Payload)
			tl.mu.Lock()
			if ok {
				tl.got = append(tl.got, Received{ID: id, At: time.Now()})
			} else {
				tl.bad++
			}
			tl.cond.Broadcast()
			tl.mu.Unlock()
		}
	}()
	t.Cleanup(tl.Stop)
	return tl
}

// Stop closes the consumer; it is safe to call twice.
func (tl *Tail) Stop() {
	_ = tl.g.Close()
	<-tl.done
	tl.mu.Lock()
	tl.cond.Broadcast()
	tl.mu.Unlock()
}

// Got returns a copy of what the consumer received so far, and how many payloads it could not parse.
func (tl *Tail) Got() ([]Received, int) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return append([]Received(nil), tl.got...), tl.bad
}

// ReceivedAfter waits until the consumer has received a message of a set sent after at (new data, which
// only the new leader can serve) and returns when; false after timeout.
func (tl *Tail) ReceivedAfter(r *Run, at time.Time, timeout time.Duration) (time.Time, bool) {
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() { tl.mu.Lock(); tl.cond.Broadcast(); tl.mu.Unlock() })
	defer timer.Stop()
	for {
		tl.mu.Lock()
		for _, g := range tl.got {
			if !g.At.After(at) {
				continue
			}
			r.mu.Lock()
			s := r.set(g.ID.Partition, g.ID.Set)
			sentAfter := s != nil && s.Sent.After(at)
			r.mu.Unlock()
			if sentAfter {
				tl.mu.Unlock()
				return g.At, true
			}
		}
		select {
		case <-tl.done:
			tl.mu.Unlock()
			return time.Time{}, false
		default:
		}
		if time.Now().After(deadline) {
			tl.mu.Unlock()
			return time.Time{}, false
		}
		tl.cond.Wait()
		tl.mu.Unlock()
	}
}

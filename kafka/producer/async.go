package producer

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// maxRequestSets bounds the produces of one MULTIPRODUCE (its count is an int16) and maxRequestBytes its size,
// well under the broker's max.socket.request.bytes (100 MiB).
const (
	maxRequestSets  = 1<<15 - 1
	maxRequestBytes = 32 << 20
)

// AsyncProducer is 0.7's producer.type=async (docs/PROTOCOL.md §7): Send puts the message on a bounded queue
// (queue.size) and returns; one background sender takes up to batch.size messages, or whatever arrived within
// queue.time, chooses each message's partition, groups the batch by broker and (topic, partition) into one
// message set each, and writes one MULTIPRODUCE per broker. Batching is what lets the paper's producer reach
// hundreds of thousands of messages a second (§5: batch size 50 vs 1). Nothing is acknowledged (§5), so a
// failed send is logged and counted (Failed), not retried.
//
// The queue holds the caller's slices: do not modify a message or key after passing it to Send.
type AsyncProducer struct {
	sp         *SyncProducer
	cfg        Config
	queue      chan asyncItem
	flushReq   chan chan struct{}
	closing    chan struct{} // closed first by Close: wakes blocked Sends
	drain      chan struct{} // closed once no Send can enqueue any more
	done       chan struct{} // closed when the sender has drained and stopped
	log        *slog.Logger
	mu         sync.RWMutex // Send holds R while enqueueing; Close takes W
	closed     bool
	closeOnce  sync.Once
	dropped    atomic.Int64
	failed     atomic.Int64
	sent       atomic.Int64
	batchLimit int
}

type asyncItem struct {
	topic     string
	partition int32
	key, msg  []byte
}

// NewAsync returns an async producer for cfg (broker.list, or zk.connect discovery).
func NewAsync(cfg Config) (*AsyncProducer, error) {
	sp, err := NewSync(cfg)
	if err != nil {
		return nil, err
	}
	return newAsync(sp, cfg), nil
}

// NewAsyncWithDiscovery is NewAsync with a given Discovery and Partitioner (DefaultPartitioner if nil).
func NewAsyncWithDiscovery(cfg Config, disc Discovery, p Partitioner) *AsyncProducer {
	return newAsync(NewSyncWithDiscovery(cfg, disc, p), cfg)
}

func newAsync(sp *SyncProducer, cfg Config) *AsyncProducer {
	d := DefaultConfig()
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = d.QueueSize
	}
	if cfg.BatchSize <= 0 {
		cfg.BatchSize = d.BatchSize
	}
	if cfg.QueueTime <= 0 {
		cfg.QueueTime = d.QueueTime
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	a := &AsyncProducer{sp: sp, cfg: cfg, queue: make(chan asyncItem, cfg.QueueSize),
		flushReq: make(chan chan struct{}), closing: make(chan struct{}), drain: make(chan struct{}),
		done: make(chan struct{}), log: logger.With("component", "producer"), batchLimit: cfg.BatchSize}
	go a.run()
	return a
}

// Send queues msg for topic; partition -1 lets the partitioner (or, with broker.list, the broker) choose.
func (a *AsyncProducer) Send(topic string, partition int32, msg []byte) error {
	return a.enqueue(asyncItem{topic: topic, partition: partition, msg: msg})
}

// SendKeyed queues msg for the partition its key hashes to.
func (a *AsyncProducer) SendKeyed(topic string, key, msg []byte) error {
	return a.enqueue(asyncItem{topic: topic, partition: -1, key: key, msg: msg})
}

func (a *AsyncProducer) enqueue(it asyncItem) error {
	if a.cfg.MaxMessageSize > 0 && len(it.msg) > a.cfg.MaxMessageSize {
		return fmt.Errorf("producer: topic %q: message of %d bytes > %d: %w", it.topic, len(it.msg), a.cfg.MaxMessageSize, ErrMessageTooLarge)
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	if a.closed {
		return ErrClosed
	}
	select { // the common case: room in the queue
	case a.queue <- it:
		return nil
	default:
	}
	switch t := a.cfg.EnqueueTimeoutMs; {
	case t == 0:
	case t < 0:
		select {
		case a.queue <- it:
			return nil
		case <-a.closing:
			return ErrClosed
		}
	default:
		timer := time.NewTimer(time.Duration(t) * time.Millisecond)
		defer timer.Stop()
		select {
		case a.queue <- it:
			return nil
		case <-a.closing:
			return ErrClosed
		case <-timer.C:
		}
	}
	a.dropped.Add(1)
	return fmt.Errorf("producer: topic %q: %d messages queued: %w", it.topic, a.cfg.QueueSize, ErrQueueFull)
}

// Flush sends everything queued so far and returns once it has been written.
func (a *AsyncProducer) Flush() error {
	ch := make(chan struct{})
	select {
	case a.flushReq <- ch:
		<-ch
		return nil
	case <-a.done:
		return ErrClosed
	}
}

// Discovery returns the producer's discovery.
func (a *AsyncProducer) Discovery() Discovery { return a.sp.Discovery() }

// Dropped is the number of messages refused because the queue was full.
func (a *AsyncProducer) Dropped() int64 { return a.dropped.Load() }

// Failed is the number of messages the sender could not write (no partition, broker down, ...).
func (a *AsyncProducer) Failed() int64 { return a.failed.Load() }

// Sent is the number of messages written to brokers.
func (a *AsyncProducer) Sent() int64 { return a.sent.Load() }

// Close stops accepting messages, sends everything still queued, and closes the connections.
func (a *AsyncProducer) Close() error {
	a.closeOnce.Do(func() {
		close(a.closing)
		a.mu.Lock() // waits for Sends in progress
		a.closed = true
		a.mu.Unlock()
		close(a.drain)
	})
	<-a.done
	return a.sp.Close()
}

// run is the background sender (0.7's ProducerSendThread).
func (a *AsyncProducer) run() {
	defer close(a.done)
	b := newBatcher(a)
	timer := time.NewTimer(a.cfg.QueueTime)
	defer timer.Stop()
	send := func() {
		b.send()
		timer.Reset(a.cfg.QueueTime) // queue.time counts from the last send
	}
	for {
		select {
		case it := <-a.queue:
			b.add(it)
			if len(b.items) >= a.batchLimit {
				send()
			}
		case <-timer.C:
			send()
		case ch := <-a.flushReq:
			a.takeQueued(b)
			send()
			close(ch)
		case <-a.drain:
			a.takeQueued(b)
			b.send()
			return
		}
	}
}

// takeQueued moves everything now in the queue into the batch, sending full batches on the way.
func (a *AsyncProducer) takeQueued(b *batcher) {
	for {
		select {
		case it := <-a.queue:
			b.add(it)
			if len(b.items) >= a.batchLimit {
				b.send()
			}
		default:
			return
		}
	}
}

// batcher groups one batch by broker and (topic, partition). Its maps and buffers live as long as the
// producer, so steady-state batches allocate nothing per message.
type batcher struct {
	a      *AsyncProducer
	items  []asyncItem
	sets   map[setKey]*setBuf
	order  []setKey                          // sets in first-seen order
	byBrkr map[int][]protocol.ProduceRequest // reused request lists
}

type setKey struct {
	broker     int
	topic      string
	part       int32
	replicated bool // a replicated topic: broker is -1, the leader is looked up at send time
}

type setBuf struct {
	buf   []byte
	count int
}

func newBatcher(a *AsyncProducer) *batcher {
	return &batcher{a: a, items: make([]asyncItem, 0, a.batchLimit), sets: map[setKey]*setBuf{},
		byBrkr: map[int][]protocol.ProduceRequest{}}
}

func (b *batcher) add(it asyncItem) { b.items = append(b.items, it) }

// send partitions, groups and writes the batch.
func (b *batcher) send() {
	if len(b.items) == 0 {
		return
	}
	a := b.a
	for _, it := range b.items {
		k, err := b.place(it)
		if err != nil {
			a.failed.Add(1)
			a.log.Warn("async message dropped", "topic", it.topic, "err", err)
			continue
		}
		s := b.sets[k]
		if s == nil {
			s = &setBuf{}
			b.sets[k] = s
		}
		if s.count == 0 {
			b.order = append(b.order, k)
		}
		s.buf = message.Append(s.buf, a.cfg.Magic, it.msg)
		s.count++
	}
	clear(b.items) // drop references to the callers' bytes
	b.items = b.items[:0]
	for _, k := range b.order {
		s := b.sets[k]
		set := s.buf
		if a.cfg.compresses(k.topic) {
			w, err := message.Compress(a.cfg.Compression, set)
			if err != nil {
				a.failed.Add(int64(s.count))
				a.log.Warn("async compress failed", "topic", k.topic, "err", err)
				continue
			}
			set = w
		}
		if k.replicated || a.cfg.RequiredAcks != protocol.AcksNone {
			b.writeAcked(k, set, int64(s.count))
			continue
		}
		b.byBrkr[k.broker] = append(b.byBrkr[k.broker], protocol.ProduceRequest{Topic: k.topic, Partition: k.part, Messages: set})
	}
	for broker, reqs := range b.byBrkr {
		if len(reqs) == 0 {
			continue
		}
		b.write(broker, reqs)
		clear(reqs)
		b.byBrkr[broker] = reqs[:0]
	}
	for _, k := range b.order {
		s := b.sets[k]
		s.buf, s.count = s.buf[:0], 0
	}
	b.order = b.order[:0]
}

// place is where a message goes: a partition of a replicated topic (docs/PROTOCOL.md §10), whose leader is
// looked up when the set is sent, or a broker's partition of a 0.7 topic.
func (b *batcher) place(it asyncItem) (setKey, error) {
	sp := b.a.sp
	tm, err := sp.replicatedChecked(it.topic)
	if err != nil {
		return setKey{}, err
	}
	if tm != nil {
		part := it.partition
		if part < 0 {
			part = int32(sp.partitioner.Partition(it.key, len(tm.leaders)))
		}
		return setKey{broker: -1, topic: it.topic, part: part, replicated: true}, nil
	}
	dst, err := sp.pick(it.topic, it.partition, it.key)
	return setKey{broker: dst.BrokerID, topic: it.topic, part: dst.Part}, err
}

// writeAcked sends one set with request.required.acks, retrying as the sync producer does.
func (b *batcher) writeAcked(k setKey, set []byte, count int64) {
	a := b.a
	var err error
	if k.replicated {
		var tm *topicMeta
		if tm, err = a.sp.replicated(k.topic); err == nil && tm != nil {
			err = a.sp.sendReplicated(tm, k.topic, k.part, nil, nil, set)
		}
	} else {
		err = a.sp.send(Partition{BrokerID: k.broker, Part: k.part}, k.topic, nil, set)
	}
	if err != nil {
		a.failed.Add(count)
		a.log.Warn("producer: async send failed", "topic", k.topic, "partition", k.part, "messages", count, "err", err)
		return
	}
	a.sent.Add(count)
}

// write sends one broker's sets as few MULTIPRODUCE requests as the limits allow (usually one).
func (b *batcher) write(broker int, reqs []protocol.ProduceRequest) {
	a := b.a
	for len(reqs) > 0 {
		n, size := 0, 0
		for n < len(reqs) && n < maxRequestSets && (n == 0 || size+len(reqs[n].Messages) <= maxRequestBytes) {
			size += len(reqs[n].Messages)
			n++
		}
		if err := a.sp.MultiSend(broker, reqs[:n]); err != nil {
			lost := b.count(broker, reqs[:n])
			a.failed.Add(lost)
			a.log.Warn("async send failed", "broker", broker, "messages", lost, "err", err)
		} else {
			a.sent.Add(b.count(broker, reqs[:n]))
		}
		reqs = reqs[n:]
	}
}

// count is the number of messages in reqs, a broker's sets of the current batch.
func (b *batcher) count(broker int, reqs []protocol.ProduceRequest) int64 {
	var n int64
	for _, r := range reqs {
		if s := b.sets[setKey{broker: broker, topic: r.Topic, part: r.Partition}]; s != nil {
			n += int64(s.count)
		}
	}
	return n
}

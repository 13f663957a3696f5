package audit

import (
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"sync"
	"time"
)

// Sender is what an audited producer sends through: producer.SyncProducer's
// Send.
type Sender interface {
	Send(topic string, partition int32, msgs ...[]byte) error
}

// Config of an audited producer.
type Config struct {
	// Topic is the audit topic the monitoring events go to ("audit").
	Topic string
	// Window is the length of a counting window (one minute).
	Window time.Duration
	// PublishInterval is how often events are sent (the window's length).
	PublishInterval time.Duration
	// Host is the name put in envelopes and events (os.Hostname).
	Host string
	// Now is the clock (time.Now); tests set it.
	Now func() time.Time
	// Logger receives failed publishes.
	Logger *slog.Logger
}

func (c *Config) fill() error {
	if c.Topic == "" {
		c.Topic = "audit"
	}
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.Window < time.Millisecond {
		return fmt.Errorf("%w: window %v is below 1 ms", ErrBadConfig, c.Window)
	}
	if c.PublishInterval <= 0 {
		c.PublishInterval = c.Window
	}
	if c.Host == "" {
		c.Host, _ = os.Hostname()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

type windowKey struct {
	topic  string
	window int64
}

// Producer wraps a Sender: every message it sends carries an envelope, and
// it counts what it sent per topic and window and publishes the counts to the
// audit topic (see the package doc).
type Producer struct {
	cfg  Config
	s    Sender
	id   uint32
	stop chan struct{}
	done chan struct{}

	mu     sync.Mutex
	seq    uint32
	event  uint64
	counts map[windowKey]int64
	buf    []byte
}

// NewProducer starts an audited producer over s; Close publishes the last
// counts and stops it (it does not close s).
func NewProducer(s Sender, cfg Config) (*Producer, error) {
	if err := cfg.fill(); err != nil {
		return nil, err
	}
	p := &Producer{cfg: cfg, s: s, id: rand.Uint32(), stop: make(chan struct{}), done: make(chan struct{}),
		counts: map[windowKey]int64{}}
	go p.loop()
	return p, nil
}

// ID is the producer id in the envelopes, as events name it.
func (p *Producer) ID() string { return fmt.Sprintf("%08x", p.id) }

// Send sends payloads, each in an envelope, as one batch; they are counted
// when the send succeeds (the producer has no acknowledgement to wait for,
// paper §5, so "published" means written to the broker's connection).
func (p *Producer) Send(topic string, partition int32, payloads ...[]byte) error {
	now := p.cfg.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	msgs := make([][]byte, len(payloads))
	p.buf = p.buf[:0]
	ends := make([]int, len(payloads))
	for i, pl := range payloads {
		p.buf = AppendEnvelope(p.buf, Envelope{Time: now, Host: p.cfg.Host, Producer: p.id, Seq: p.seq + uint32(i), Payload: pl})
		ends[i] = len(p.buf)
	}
	start := 0
	for i := range msgs {
		msgs[i] = p.buf[start:ends[i]]
		start = ends[i]
	}
	if err := p.s.Send(topic, partition, msgs...); err != nil {
		return err
	}
	p.seq += uint32(len(payloads))
	p.counts[windowKey{topic, WindowOf(now, p.cfg.Window)}] += int64(len(payloads))
	return nil
}

// Publish sends one event per (topic, window) counted since the last publish.
func (p *Producer) Publish() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	keys := make([]windowKey, 0, len(p.counts))
	for k := range p.counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].topic != keys[b].topic {
			return keys[a].topic < keys[b].topic
		}
		return keys[a].window < keys[b].window
	})
	for _, k := range keys {
		e := Event{Type: "produced", Host: p.cfg.Host, Producer: p.ID(), Event: p.event, Topic: k.topic,
			Window: k.window, WindowMs: p.cfg.Window.Milliseconds(), Count: p.counts[k]}
		if err := p.s.Send(p.cfg.Topic, -1, e.Marshal()); err != nil {
			return fmt.Errorf("audit: publish %s window %d to %s: %w", k.topic, k.window, p.cfg.Topic, err)
		}
		p.event++
		delete(p.counts, k)
	}
	return nil
}

func (p *Producer) loop() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.PublishInterval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			if err := p.Publish(); err != nil {
				p.cfg.Logger.Warn("audit: publish failed; the counts are kept for the next one", "err", err)
			}
		}
	}
}

// Close publishes what is left and stops the publisher.
func (p *Producer) Close() error {
	close(p.stop)
	<-p.done
	return p.Publish()
}

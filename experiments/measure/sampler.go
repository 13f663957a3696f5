package measure

import (
	"sync/atomic"
	"time"
)

// Point is one sample of a throughput series: after MB megabytes
// (10^6 bytes) of payload had gone through, the last interval ran at
// MsgPerS messages per second. Seconds is the time since the test began.
type Point struct {
	Seconds float64 `json:"s"`
	MB      float64 `json:"mb"`
	MsgPerS float64 `json:"msg_per_s"`
}

// Sampler turns an atomic message counter into a throughput series
// (the x and y of the paper's figures 4 and 5). It looks at the counter
// every few milliseconds and records a point every interval (~250 ms), or
// after a fifth of that once another 2% of the test's messages went through, so that a
// short, fast test still draws a line. It also notes when the counter
// first reached the total: for a producer, when the last message left the
// client.
type Sampler struct {
	counter  *atomic.Int64
	size     int   // payload bytes per message
	total    int64 // messages in the test
	interval time.Duration
	poll     time.Duration
	doneAt   time.Duration                  // since start, when the counter reached total; 0 if not yet
	onSample func(done int64, rate float64) // progress display; may be nil

	start  time.Time
	stop   chan struct{}
	done   chan struct{}
	series []Point
	last   int64
	lastT  time.Time
}

// NewSampler returns a sampler of counter for a test of total messages of
// size payload bytes, a point every interval (250 ms when 0); onSample, when
// not nil, is called with each point for a progress display.
func NewSampler(counter *atomic.Int64, size int, total int64, interval time.Duration, onSample func(int64, float64)) *Sampler {
	if interval <= 0 {
		interval = 250 * time.Millisecond
	}
	return &Sampler{counter: counter, size: size, total: total, interval: interval,
		poll: min(interval, 2*time.Millisecond), onSample: onSample,
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Start begins sampling in its own goroutine.
func (s *Sampler) Start() {
	s.start = time.Now()
	s.lastT = s.start
	s.last = s.counter.Load()
	go func() {
		defer close(s.done)
		t := time.NewTicker(s.poll)
		defer t.Stop()
		step := max(s.total/50, 1)
		for {
			select {
			case <-s.stop:
				return
			case now := <-t.C:
				n := s.counter.Load()
				if s.doneAt == 0 && n >= s.total {
					s.doneAt = now.Sub(s.start)
				}
				since := now.Sub(s.lastT)
				if since >= s.interval || (n-s.last >= step && since >= s.interval/5) {
					s.sample(now)
				}
			}
		}
	}()
}

// sample appends one point: the messages counted since the previous sample
// divided by the time since it.
func (s *Sampler) sample(now time.Time) {
	n := s.counter.Load()
	dt := now.Sub(s.lastT).Seconds()
	if dt <= 0 {
		return
	}
	rate := float64(n-s.last) / dt
	s.series = append(s.series, Point{
		Seconds: now.Sub(s.start).Seconds(),
		MB:      float64(n) * float64(s.size) / 1e6,
		MsgPerS: rate,
	})
	s.last, s.lastT = n, now
	if s.onSample != nil {
		s.onSample(n, rate)
	}
}

// Stop ends sampling, takes a last sample for the tail of the test, and
// returns the series and when the counter reached the total (0: never).
func (s *Sampler) Stop() ([]Point, time.Duration) {
	close(s.stop)
	<-s.done
	now := time.Now()
	if s.doneAt == 0 && s.counter.Load() >= s.total {
		s.doneAt = now.Sub(s.start)
	}
	if s.counter.Load() != s.last { // the tail, however short, so every message is in the series
		s.sample(now)
	}
	return s.series, s.doneAt
}

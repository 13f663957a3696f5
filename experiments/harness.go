package experiments

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
	"github.com/kafkarepro/kafkarepro/internal/tuning"
)

// Config is one reproduction run.
type Config struct {
	Messages    int // per test; the paper's 10,000,000
	MessageSize int // the paper's 200 bytes
	// Batches maps a system name to the producer batch sizes it is tested
	// with. Systems not named get {1}: §5 "ActiveMQ and RabbitMQ don't seem
	// to have an easy way to batch messages and we assume that it used a
	// batch size of 1".
	Batches          map[string][]int
	PrefetchMessages int           // §5: up to 1000 messages ...
	PrefetchBytes    int           // ... or about 200 KB per pull request
	SampleInterval   time.Duration // ~250 ms
	// TestTimeout bounds one producer or consumer test; 0 means no bound.
	// A test that runs out of time is recorded as failed with what it measured.
	TestTimeout time.Duration
	Progress    *Progress    // may be nil
	Log         *slog.Logger // gets component=experiments; nil: slog.Default()
	// AfterConsumer, when set, runs right after each target's consumer
	// test, with the target's system still open: reproduce measures the
	// machine's consumer ceiling there, in turns with our consumer reading
	// the same topic again (experiments/cmd/reproduce/ceiling.go).
	AfterConsumer func(ctx context.Context, system string, sys compare.System, topic string, test measure.Result)
}

// DefaultConfig is the paper's set-up.
func DefaultConfig() Config {
	return Config{
		Messages:         10_000_000,
		MessageSize:      200,
		Batches:          map[string][]int{"kafka": {1, 50}},
		PrefetchMessages: 1000,
		PrefetchBytes:    200 * 1024,
		SampleInterval:   250 * time.Millisecond,
	}
}

// Target is one system to measure. Open starts its servers (if needed) and
// connects; the returned stop function closes everything Open started.
type Target struct {
	Name string
	Open func(ctx context.Context) (compare.System, func() error, error)
}

// Storage is what a producer test left on disk.
type Storage struct {
	Batch           int     `json:"batch"`
	Messages        int64   `json:"messages"`
	DiskBytes       int64   `json:"disk_bytes"` // growth of the data store during the test
	BytesPerMessage float64 `json:"bytes_per_message"`
	OverheadBytes   float64 `json:"overhead_bytes"` // per message, beyond the payload
	Error           string  `json:"error,omitempty"`
}

// SystemReport is everything measured for one system.
type SystemReport struct {
	Name     string            `json:"name"`
	Settings map[string]string `json:"settings"`
	Producer []measure.Result  `json:"producer"`
	Consumer *measure.Result   `json:"consumer,omitempty"`
	Storage  []Storage         `json:"storage"`
	Errors   []string          `json:"errors,omitempty"`
}

// Run measures every target in turn: its producer tests (one per batch
// size, each into its own topic), the disk they used, and a consumer test
// reading back the topic of the largest batch, with the bytes the server
// wrote to storage meanwhile (when it is a local process). Any failure of one target is
// recorded in its report and the run goes on with the next target. Run
// returns an error only when ctx is cancelled.
func Run(ctx context.Context, cfg Config, targets []Target) ([]SystemReport, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	cfg.Log = cfg.Log.With("component", "experiments")
	var out []SystemReport
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		out = append(out, runTarget(ctx, cfg, t))
	}
	return out, ctx.Err()
}

func runTarget(ctx context.Context, cfg Config, t Target) (rep SystemReport) {
	rep = SystemReport{Name: t.Name, Settings: map[string]string{}}
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		cfg.Log.Error("experiment failed", "system", t.Name, "error", msg)
		rep.Errors = append(rep.Errors, msg)
	}
	cfg.Log.Info("starting system", "system", t.Name)
	sys, stop, err := t.Open(ctx)
	if err != nil {
		fail("%s: start/connect: %v", t.Name, err)
		return rep
	}
	defer func() {
		if err := sys.Close(); err != nil {
			cfg.Log.Warn("close", "system", t.Name, "error", err)
		}
		if stop != nil {
			if err := stop(); err != nil {
				fail("%s: stop server: %v", t.Name, err)
			}
		}
	}()
	for k, v := range sys.Settings() {
		rep.Settings[k] = v
	}

	batches := cfg.Batches[t.Name]
	if len(batches) == 0 {
		batches = []int{1}
	}
	consumeTopic := ""
	producedOK := false
	for _, b := range batches {
		topic := ProducerTopic(b)
		before, errBefore := sys.DiskBytes()
		res := runProducer(ctx, cfg, sys, t.Name, topic, b)
		rep.Producer = append(rep.Producer, res)
		if res.Error != "" {
			fail("%s producer (batch %d): %s", t.Name, b, res.Error)
			continue
		}
		producedOK = true
		consumeTopic = topic
		rep.Storage = append(rep.Storage, measureStorage(sys, cfg, b, res.Msgs, before, errBefore))
	}
	if !producedOK {
		fail("%s consumer: not run, no producer test completed", t.Name)
		return rep
	}
	// §5: did the server write to disk while the consumer read?
	probe := measure.StartIOProbe(sys)
	c := RunConsumer(ctx, cfg, sys, t.Name, consumeTopic, t.Name+" consumer")
	c.ServerIO = probe.Finish()
	rep.Consumer = &c
	if c.Error != "" {
		fail("%s consumer: %s", t.Name, c.Error)
	}
	if cfg.AfterConsumer != nil {
		cfg.AfterConsumer(ctx, t.Name, sys, consumeTopic, c)
	}
	return rep
}

// ProducerTopic is the topic (queue) a producer test of batch size b
// writes: "perf-b50".
func ProducerTopic(b int) string { return fmt.Sprintf("perf-b%d", b) }

// measureStorage computes the bytes the data store grew by during one
// producer test, per message (§5: Kafka 9 bytes of overhead, ActiveMQ 144).
func measureStorage(sys compare.System, cfg Config, batch int, msgs int64, before int64, errBefore error) Storage {
	st := Storage{Batch: batch, Messages: msgs}
	after, err := sys.DiskBytes()
	if err = errors.Join(errBefore, err); err != nil {
		st.Error = fmt.Sprintf("disk bytes: %v", err)
		return st
	}
	st.DiskBytes = after - before
	if msgs > 0 {
		st.BytesPerMessage = float64(st.DiskBytes) / float64(msgs)
		st.OverheadBytes = st.BytesPerMessage - float64(cfg.MessageSize)
	}
	return st
}

func (cfg Config) testContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if cfg.TestTimeout > 0 {
		return context.WithTimeout(ctx, cfg.TestTimeout)
	}
	return context.WithCancel(ctx)
}

// activityEvery is how often a producer test samples the machine's
// activity: 50 ms, so that even a 1 s test has five samples a tenth.
const activityEvery = 50 * time.Millisecond

func runProducer(ctx context.Context, cfg Config, sys compare.System, name, topic string, batch int) measure.Result {
	var sent atomic.Int64
	spec := compare.ProduceSpec{Topic: topic, Messages: cfg.Messages, MessageSize: cfg.MessageSize, Batch: batch, Sent: &sent}
	label := fmt.Sprintf("%s producer (batch %d)", name, batch)
	tr := measure.Result{System: name, Test: "producer", Batch: batch}
	// What the machine did meanwhile, tenth by tenth, so that a tenth whose
	// rate falls can be told ours or the machine's (REPORT.md).
	act := machine.StartActivity(activityEvery)
	runTest(ctx, cfg, label, &sent, &tr, func(ctx context.Context) (compare.Result, error) {
		// Every system's send loop runs on one thread, as producer-perf's and the
		// ceiling probe's do (tuning.LockSender says why).
		defer tuning.LockSender()()
		return sys.Produce(ctx, spec)
	})
	tr.Machine = machine.Tenths(act.Stop())
	return tr
}

// RunConsumer is one consumer test of system name over topic, measured as
// figure 5's (the sampler, the progress line under label): also how
// AfterConsumer reads the topic again.
func RunConsumer(ctx context.Context, cfg Config, sys compare.System, name, topic, label string) measure.Result {
	var recv atomic.Int64
	spec := compare.ConsumeSpec{Topic: topic, Messages: cfg.Messages, MessageSize: cfg.MessageSize,
		PrefetchMessages: cfg.PrefetchMessages, PrefetchBytes: cfg.PrefetchBytes, Received: &recv}
	tr := measure.Result{System: name, Test: "consumer"}
	runTest(ctx, cfg, label, &recv, &tr, func(ctx context.Context) (compare.Result, error) {
		return sys.Consume(ctx, spec)
	})
	return tr
}

// runTest runs one test with a sampler and the progress line, and fills tr.
// The average is the adapter's own count over its own Elapsed (for a
// producer that runs until the server holds every message); if the test
// failed, it is what the counter reached over the time it ran.
func runTest(ctx context.Context, cfg Config, label string, counter *atomic.Int64, tr *measure.Result,
	run func(context.Context) (compare.Result, error)) {
	tctx, cancel := cfg.testContext(ctx)
	defer cancel()
	cfg.Progress.Begin(label, int64(cfg.Messages))
	s := measure.NewSampler(counter, cfg.MessageSize, int64(cfg.Messages), cfg.SampleInterval, cfg.Progress.Update)
	start := time.Now()
	s.Start()
	res, err := run(tctx)
	wall := time.Since(start)
	var doneAt time.Duration
	tr.Series, doneAt = s.Stop()
	if err == nil && res.Messages < int64(cfg.Messages) {
		err = fmt.Errorf("%w: %d of %d messages", ErrShort, res.Messages, cfg.Messages)
	}
	if err != nil {
		if errors.Is(tctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("exceeded the test time limit %v: %w", cfg.TestTimeout, err)
		}
		tr.Error = err.Error()
		tr.Msgs = max(res.Messages, counter.Load())
		tr.Seconds = wall.Seconds()
	} else {
		tr.Msgs = res.Messages
		tr.Seconds = res.Elapsed.Seconds()
		if tr.Seconds <= 0 {
			tr.Seconds = wall.Seconds()
		}
	}
	tr.MBSent = float64(tr.Msgs) * float64(cfg.MessageSize) / 1e6
	if tr.Seconds > 0 {
		tr.MsgPerS = float64(tr.Msgs) / tr.Seconds
	}
	if doneAt > 0 && tr.Error == "" {
		tr.SendSeconds = min(doneAt.Seconds(), tr.Seconds)
		tr.SendMsgPerS = float64(tr.Msgs) / tr.SendSeconds
	}
	if tr.Error != "" {
		cfg.Progress.End(fmt.Sprintf("FAILED after %d messages: %s", tr.Msgs, tr.Error))
	} else {
		cfg.Progress.End(fmt.Sprintf("%d messages in %.2fs = %.0f msg/s", tr.Msgs, tr.Seconds, tr.MsgPerS))
	}
}

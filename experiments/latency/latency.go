package latency

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// Setting is one flush policy of the experiment.
type Setting struct {
	Name string `json:"name"` // "log.flush.interval=500"
	// FlushInterval and FlushIntervalMs are the broker's
	// log.flush.interval and log.default.flush.interval.ms.
	FlushInterval   int `json:"log_flush_interval"`
	FlushIntervalMs int `json:"log_default_flush_interval_ms"`
}

// NoCountFlush is the log.flush.interval of the time-only settings: so
// large that only the timer flushes.
const NoCountFlush = 1_000_000_000

// Settings are the settings of figure 7: flushes every 1, 100, 500
// (kafka/config/server.properties' default) and 10,000 messages with its
// 3,000 ms timer, and by the timer alone every 100 and 3,000 ms.
func Settings() []Setting {
	var s []Setting
	for _, n := range []int{1, 100, 500, 10_000} {
		s = append(s, Setting{Name: fmt.Sprintf("log.flush.interval=%d", n), FlushInterval: n, FlushIntervalMs: 3000})
	}
	for _, ms := range []int{100, 3000} {
		s = append(s, Setting{Name: fmt.Sprintf("log.default.flush.interval.ms=%d", ms), FlushInterval: NoCountFlush, FlushIntervalMs: ms})
	}
	return s
}

// period is how often s flushes at rate messages per second: after
// FlushInterval messages or FlushIntervalMs, whichever comes first.
func (s Setting) period(rate int) time.Duration {
	byCount := time.Duration(float64(s.FlushInterval) / float64(rate) * float64(time.Second))
	return min(byCount, time.Duration(s.FlushIntervalMs)*time.Millisecond)
}

// Properties are the broker settings of s (over the launcher's shipped ones).
func (s Setting) Properties() map[string]string {
	return map[string]string{"log.flush.interval": strconv.Itoa(s.FlushInterval),
		"log.default.flush.interval.ms": strconv.Itoa(s.FlushIntervalMs)}
}

// SettingResult is one setting's measurement.
type SettingResult struct {
	Setting  Setting `json:"setting"`
	Messages int64   `json:"messages"`
	Seconds  float64 `json:"seconds"` // the paced phase
	// Percentiles of send → receipt, in milliseconds.
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
	// PacedMsgPerS is what the paced producer achieved (its target is
	// Latency.Rate). UnpacedMsgPerS is the unpaced batch-1 producer's send
	// rate (the broker's socket sets its pace) and UnpacedHeldMsgPerS its
	// rate until the broker held every message (its last partial flush
	// included, which a timer-only setting makes long).
	PacedMsgPerS       float64 `json:"paced_msg_per_s"`
	UnpacedMsgPerS     float64 `json:"unpaced_msg_per_s"`
	UnpacedHeldMsgPerS float64 `json:"unpaced_held_msg_per_s"`
	Load               string  `json:"load"`
	BrokerSettings     string  `json:"broker_settings,omitempty"`
	Error              string  `json:"error,omitempty"`
}

// Result is the whole experiment.
type Result struct {
	Rate     int             `json:"rate"`                // paced producer's messages per second
	Seconds  float64         `json:"seconds_per_setting"` // at least; see SettingResult.Seconds
	Unpaced  int             `json:"unpaced_messages"`
	Size     int             `json:"message_size"`
	Settings []SettingResult `json:"settings"`
	// Baseline is the same figure measured with the broker settings
	// BaselineProps over each flush setting's (Config.Baseline), flush
	// setting by flush setting in turns with Settings: the broker before a
	// change, beside it after, in the same minutes.
	Baseline      []SettingResult `json:"baseline,omitempty"`
	BaselineProps string          `json:"baseline_props,omitempty"`
	Error         string          `json:"error,omitempty"`
}

// Config sets the experiment up.
type Config struct {
	Rate     int           // paced producer's messages per second
	Duration time.Duration // paced phase per setting
	Unpaced  int           // messages of the unpaced producer per setting
	Size     int           // payload bytes (at least 8: the send time)
	// Start starts a broker with props over the shipped settings and
	// returns its address, a description of its settings and how to stop it.
	Start    func(ctx context.Context, props map[string]string) (addr, settings string, stop func() error, err error)
	Progress func(string)
	// Settings are the flush settings to measure (default Settings()).
	Settings []Setting
	// Baseline, when set, are settings to measure every flush setting
	// with a second time, right after the first (Result.Baseline): broker
	// settings, and producer properties named with ProducerPrefix.
	Baseline map[string]string
	// Producer are producer properties over the defaults, for the paced
	// and the unpaced producer (producer.Config.Set).
	Producer map[string]string
}

// Run measures every setting of Settings.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Size < 8 || cfg.Rate <= 0 || cfg.Duration <= 0 || cfg.Start == nil {
		return nil, fmt.Errorf("experiments: latency: need a rate, a duration, a size of at least 8 bytes and a Start (got %+v)", cfg)
	}
	if cfg.Progress == nil {
		cfg.Progress = func(string) {}
	}
	l := &Result{Rate: cfg.Rate, Seconds: cfg.Duration.Seconds(), Unpaced: cfg.Unpaced, Size: cfg.Size}
	var errs []error
	if cfg.Settings == nil {
		cfg.Settings = Settings()
	}
	if cfg.Baseline != nil {
		l.BaselineProps = FormatProps(cfg.Baseline)
	}
	one := func(s Setting, extra map[string]string, label string) SettingResult {
		r, err := runSetting(ctx, cfg, s, extra)
		if err != nil {
			r.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s%s: %w", s.Name, label, err))
		}
		cfg.Progress(fmt.Sprintf("latency %s%s: p50 %.1f ms, p99 %.1f ms, p99.9 %.1f ms, max %.1f ms; paced %.0f msg/s, unpaced batch 1 %.0f msg/s sent, %.0f held",
			s.Name, label, r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs, r.PacedMsgPerS, r.UnpacedMsgPerS, r.UnpacedHeldMsgPerS))
		return r
	}
	for _, s := range cfg.Settings {
		l.Settings = append(l.Settings, one(s, nil, ""))
		if cfg.Baseline != nil && ctx.Err() == nil {
			l.Baseline = append(l.Baseline, one(s, cfg.Baseline, " with "+l.BaselineProps))
		}
		if ctx.Err() != nil {
			break
		}
	}
	err := errors.Join(errs...)
	if err != nil {
		l.Error = err.Error()
	}
	return l, err
}

// ProducerPrefix marks a key of Config.Baseline (and of latency-ab's
// --setting) as a producer property: "producer:socket.nagle.disable".
const ProducerPrefix = "producer:"

// runSetting measures flush setting s on a broker of its own, started with
// s's properties and then extra's (its producer properties, ProducerPrefix,
// over cfg.Producer).
func runSetting(ctx context.Context, cfg Config, s Setting, extra map[string]string) (SettingResult, error) {
	extra, cfg.Producer = SplitProducer(extra, cfg.Producer)
	r := SettingResult{Setting: s, Load: machine.ReadLoad().String()}
	// At least five flush periods, so that the delays spread over whole
	// periods (a run shorter than the 3 s timer would see one flush).
	cfg.Duration = max(cfg.Duration, 5*s.period(cfg.Rate))
	r.Seconds = cfg.Duration.Seconds()
	props := s.Properties()
	maps.Copy(props, extra)
	addr, settings, stop, err := cfg.Start(ctx, props)
	if err != nil {
		return r, err
	}
	r.BrokerSettings = settings
	err = measure(ctx, cfg, addr, &r)
	if err == nil && cfg.Unpaced > 0 {
		r.UnpacedMsgPerS, r.UnpacedHeldMsgPerS, err = unpacedRate(ctx, addr, cfg)
	}
	return r, errors.Join(err, stop())
}

// SplitProducer takes the ProducerPrefix keys out of props and returns the
// rest (broker settings), and those without the prefix over base (producer
// properties).
func SplitProducer(props, base map[string]string) (broker, producer map[string]string) {
	broker, producer = map[string]string{}, maps.Clone(base)
	for k, v := range props {
		if p, ok := strings.CutPrefix(k, ProducerPrefix); ok {
			if producer == nil {
				producer = map[string]string{}
			}
			producer[p] = v
		} else {
			broker[k] = v
		}
	}
	return broker, producer
}

// latencyTopic and unpacedTopic are the experiment's topics, partition 0.
const (
	latencyTopic = "latency"
	unpacedTopic = "latency-unpaced"
)

// measure runs the paced producer and the consumer together. The
// consumer records the first Duration × Rate messages (and the one that
// created the partition); the producer keeps its pace until the consumer
// has them all, so that the last ones are flushed as in the steady state
// instead of waiting for the timer at the end of the run.
func measure(ctx context.Context, cfg Config, addr string, r *SettingResult) error {
	p, err := newLatencyProducer(addr, cfg.Producer)
	if err != nil {
		return err
	}
	defer p.Close()
	total := int64(cfg.Duration.Seconds()*float64(cfg.Rate)) + 1
	payload := make([]byte, cfg.Size)
	copy(payload[8:], compare.Payload(cfg.Size)[8:])
	stamp := func() { binary.BigEndian.PutUint64(payload, uint64(time.Now().UnixNano())) }
	// The first message creates the partition; the consumer starts after it.
	stamp()
	if err := p.Send(latencyTopic, 0, payload); err != nil {
		return fmt.Errorf("first send: %w", err)
	}
	hist := hdrhistogram.New(1, 120_000_000, 3) // µs, up to 2 minutes
	cctx, cancel := context.WithTimeout(ctx, cfg.Duration+time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- consumeStamped(cctx, addr, total, hist) }()
	start := time.Now()
	var sent int64
	var cerr error
	for consumed := false; !consumed; {
		select {
		case cerr = <-done:
			consumed = true
			continue
		default:
		}
		// Pace: message i leaves at start + i/rate.
		if d := time.Until(start.Add(time.Duration(float64(sent) / float64(cfg.Rate) * float64(time.Second)))); d > 0 {
			time.Sleep(d)
		}
		stamp()
		if err := p.Send(latencyTopic, 0, payload); err != nil {
			cancel()
			<-done
			return fmt.Errorf("send %d: %w", sent, err)
		}
		sent++
	}
	r.PacedMsgPerS = float64(sent) / time.Since(start).Seconds()
	if cerr != nil {
		return cerr
	}
	r.Messages = hist.TotalCount()
	ms := func(q float64) float64 { return float64(hist.ValueAtQuantile(q)) / 1000 }
	r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs = ms(50), ms(99), ms(99.9), float64(hist.Max())/1000
	return nil
}

func newLatencyProducer(addr string, props map[string]string) (*producer.SyncProducer, error) {
	pc := producer.DefaultConfig()
	pc.BrokerList = "0:" + addr
	pc.Magic = message.MagicV0
	for k, v := range props {
		if err := pc.Set(k, v); err != nil {
			return nil, fmt.Errorf("latency producer: %w", err)
		}
	}
	p, err := producer.NewSync(pc)
	if err != nil {
		return nil, fmt.Errorf("latency producer for %s: %w", addr, err)
	}
	return p, nil
}

// consumeStamped reads n messages from the start of the latency topic and
// records each one's delay since the time stamped in its first 8 bytes.
func consumeStamped(ctx context.Context, addr string, n int64, hist *hdrhistogram.Histogram) error {
	c := consumer.NewSimpleConsumer(addr, 30*time.Second)
	defer c.Close()
	it := consumer.NewPartitionIterator(c, latencyTopic, 0, 0, consumer.DefaultFetchSize)
	it.MinBackoff, it.MaxBackoff = time.Millisecond, time.Millisecond
	for got := int64(0); got < n; got++ {
		if !it.Next(ctx) {
			return fmt.Errorf("consumer after %d of %d messages: %w", got, n, it.Err())
		}
		p := it.Payload()
		if len(p) < 8 {
			return fmt.Errorf("message at offset %d has %d bytes, no send time", it.Offset(), len(p))
		}
		d := time.Since(time.Unix(0, int64(binary.BigEndian.Uint64(p))))
		if err := hist.RecordValue(max(1, d.Microseconds())); err != nil {
			return fmt.Errorf("delay %v at offset %d: %w", d, it.Offset(), err)
		}
	}
	return nil
}

// unpacedRate sends n messages one per request as fast as it can and
// returns the send rate and the rate until the broker holds (has flushed)
// them all.
func unpacedRate(ctx context.Context, addr string, cfg Config) (send, held float64, err error) {
	n, size := cfg.Unpaced, cfg.Size
	p, err := newLatencyProducer(addr, cfg.Producer)
	if err != nil {
		return 0, 0, err
	}
	defer p.Close()
	payload := compare.Payload(size)
	c := consumer.NewSimpleConsumer(addr, 30*time.Second)
	defer c.Close()
	start := time.Now()
	for i := range n {
		if err := p.Send(unpacedTopic, 0, payload); err != nil {
			return 0, 0, fmt.Errorf("unpaced send %d: %w", i, err)
		}
	}
	send = float64(n) / time.Since(start).Seconds()
	want := int64(n) * int64(message.SizeV0(size))
	for {
		end, err := c.LatestOffset(unpacedTopic, 0)
		if err != nil {
			return send, 0, err
		}
		if end >= want {
			return send, float64(n) / time.Since(start).Seconds(), nil
		}
		if ctx.Err() != nil || time.Since(start) > 5*time.Minute {
			return send, 0, fmt.Errorf("unpaced: the broker holds %d of %d bytes", end, want)
		}
		time.Sleep(time.Millisecond)
	}
}

// Section is REPORT.md's table of figure 7.
func Section(l *Result) string {
	if l == nil {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n## §3.1: the flush trade-off (figure 7)\n\n")
	fmt.Fprintf(&b, "A message is visible to consumers only once the broker has flushed it (§3.1). One producer sends %s messages/s of %d bytes, one per request, each stamped with its send time, for %.0f s per setting (at least five flush periods); one consumer reads the same partition (1 ms backoff when caught up) and records send → receipt in an HdrHistogram. A broker of its own per setting; \"unpaced\" is a batch-1 producer of %s messages as fast as it can: its send rate, and its rate until the broker holds them all. Figure: `fig7_latency.png`.\n\n",
		figure.Commas(float64(l.Rate)), l.Size, l.Seconds, figure.Commas(float64(l.Unpaced)))
	b.WriteString("| setting | seconds | messages | p50 ms | p99 ms | p99.9 ms | max ms | paced producer msg/s | unpaced batch-1 sends msg/s | unpaced until held msg/s | load at start | error |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range l.Settings {
		fmt.Fprintf(&b, "| %s | %.0f | %s | %.1f | %.1f | %.1f | %.1f | %s | %s | %s | %s | %s |\n", r.Setting.Name, r.Seconds, figure.Commas(float64(r.Messages)),
			r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs, figure.Commas(r.PacedMsgPerS), figure.Commas(r.UnpacedMsgPerS), figure.Commas(r.UnpacedHeldMsgPerS), r.Load, figure.OneLine(r.Error))
	}
	b.WriteString(baselineSection(l))
	b.WriteString("\nThe paper (§3.1): consumers see a message only after the flush; with a count of N, a message waits for the N−1 after it (at this rate, N/rate seconds) or for the timer, whichever comes first. With a count of 1 a flush is due at every append, but the broker's fsync runs on its flusher and covers every message appended while the last one ran (kafka/log: the flush points are 0.7's, the fsyncs are grouped), so an unpaced producer is not held to one fsync per message: the unpaced columns show what each setting costs it here.\n")
	return b.String()
}

// FormatProps is "k=v k2=v2", sorted by key: how a report names settings.
func FormatProps(props map[string]string) string {
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		kv = append(kv, k+"="+props[k])
	}
	return strings.Join(kv, " ")
}

// Within10 is the rule a change's latency is held to: a percentile after the
// change at most 10% above the baseline's, or lower.
func Within10(after, baseline float64) bool { return after <= 1.10*baseline }

// baselineSection is the table of figure 7 beside its baseline, flush
// setting by flush setting ("" without one).
func baselineSection(l *Result) string {
	if len(l.Baseline) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe same settings with `%s` over each (the baseline; a `producer:` key is a property of both producers), measured right after each row above, on a broker of its own; \"after / before\" is the table above over the baseline, and a percentile holds when it is at most 10%% above the baseline's (or lower):\n\n", l.BaselineProps)
	b.WriteString("| setting | p50 ms baseline | p50 ms | after / before | p99 ms baseline | p99 ms | after / before | both within 10% or better |\n|---|---|---|---|---|---|---|---|\n")
	holds := 0
	for i, base := range l.Baseline {
		if i >= len(l.Settings) {
			break
		}
		r := l.Settings[i]
		cells, ok := BesideBaseline(r.P50Ms, r.P99Ms, base.P50Ms, base.P99Ms, 1)
		verdict := "no"
		if ok && r.Error == "" && base.Error == "" {
			verdict, holds = "yes", holds+1
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.Setting.Name, cells, verdict)
	}
	fmt.Fprintf(&b, "\n%d of %d settings hold on both percentiles in this run.\n", holds, len(l.Baseline))
	return b.String()
}

// BesideBaseline is the cells of one row of a before-and-after table of
// latency (figure 7's, figure 6's acks=-1 modes): for p50 and then p99, the
// baseline's milliseconds, the run's and after / before, with digits
// decimals; holds is whether both percentiles keep Within10.
func BesideBaseline(p50, p99, baseP50, baseP99 float64, digits int) (cells string, holds bool) {
	ms := func(v float64) string { return strconv.FormatFloat(v, 'f', digits, 64) }
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", a/b)
	}
	cells = strings.Join([]string{ms(baseP50), ms(p50), ratio(p50, baseP50), ms(baseP99), ms(p99), ratio(p99, baseP99)}, " | ")
	return cells, Within10(p50, baseP50) && Within10(p99, baseP99)
}

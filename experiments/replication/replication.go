package replication

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kafkarepro/kafkarepro/experiments/latency"
	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	cluster "github.com/kafkarepro/kafkarepro/kafka/replication"
	"github.com/kafkarepro/kafkarepro/kafka/schedstat"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// Batch is the producer's batch: the paper's 50 messages per request.
const Batch = 50

// InFlight is how many acknowledged batches the producer keeps in flight on its connection in
// the acks=1 and acks=-1 modes (max.in.flight.requests.per.connection; Kafka's later producer's default is 5
// requests, each of up to max.request.size, 1 MiB): the leader appends the next batches while the first
// waits for its followers, and one follower fetch carries them all. It is an experiment setting. With three
// brokers on two cores a commit takes one to two follower fetch rounds of about 0.7 ms, so the acks=-1 rate
// is this window over that latency (Little's law, REPORT.md's bound lines), and only a wider window lets
// more batches share a round. 64 batches of 50 are 3,200 messages and 669 KB in flight: fewer bytes than
// Kafka's producer defaults allow (5 × 1 MiB), and fewer messages than replica.lag.max.messages (4,000), so
// an in-sync follower is never that far behind the acknowledged end; the broker queues as many acks=-1
// answers per connection (kafka/broker/ackedanswers.go). The mode "3 replicas, acks=-1, 1 in flight" is the
// §5 producer's one-at-a-time.
const InFlight = 64

// Speed targets of the experiment, checked in the same run against the 1-replica mode.
const (
	TargetAcks0Ratio    = 0.8 // 3 replicas, acks=0
	TargetAcksAllRatio  = 0.4 // 3 replicas, acks=-1
	Brokers             = 3
	replicationTopic    = "fig6"
	replicationPartSize = message.HeaderSizeV0 // bytes of header per message on disk (§5's format)
)

// Mode is one line of figure 6.
type Mode struct {
	Name     string `json:"name"` // also the line's colour in the palette
	Replicas int    `json:"replicas"`
	Acks     int16  `json:"acks"`      // request.required.acks
	InFlight int    `json:"in_flight"` // max.in.flight.requests.per.connection (0 or 1: one)
}

// Modes are figure 6's modes: one replica (the baseline, §5's fire-and-forget producer), and
// three replicas with acks 0, 1 and -1 (InFlight batches in flight), and acks=-1 with one.
func Modes() []Mode {
	return []Mode{
		{Name: "1 replica", Replicas: 1, Acks: 0},
		{Name: "3 replicas, acks=0", Replicas: 3, Acks: 0},
		{Name: "3 replicas, acks=1", Replicas: 3, Acks: 1, InFlight: InFlight},
		{Name: "3 replicas, acks=-1", Replicas: 3, Acks: -1, InFlight: InFlight},
		{Name: "3 replicas, acks=-1, 1 in flight", Replicas: 3, Acks: -1, InFlight: 1},
	}
}

// ProcessCPU is what one process used during a mode.
type ProcessCPU struct {
	Name        string  `json:"name"` // "producer", "broker 0 (leader)", "broker 1"
	RunSeconds  float64 `json:"run_s"`
	WaitSeconds float64 `json:"wait_s"` // runnable, waiting for a core
}

// ModeResult is one mode's measurement.
type ModeResult struct {
	Mode Mode `json:"mode"`
	// Test is the producer test as figure 4 records it (System is the mode's name).
	Test measure.Result `json:"test"`
	// Ratio is the producer's rate (Test.SendMsgPerS: messages sent, and acknowledged where acks ask for
	// it, per second) over the 1-replica mode's: the rate the speed targets and Kreps' figures are about.
	// StoredRatio is the same of the rate until the leader exposed the last message (Test.MsgPerS), which
	// a short run's last flush (log.default.flush.interval.ms) weighs on.
	Ratio       float64 `json:"ratio"`
	StoredRatio float64 `json:"stored_ratio"`
	// Latency of one acknowledged send (a batch of 50), in milliseconds; zero for acks=0.
	P50Ms  float64 `json:"p50_ms"`
	P99Ms  float64 `json:"p99_ms"`
	P999Ms float64 `json:"p999_ms"`
	MaxMs  float64 `json:"max_ms"`
	MeanMs float64 `json:"mean_ms"` // for Little's law: in flight = rate × mean latency (report.go)
	// CPU is each process's CPU during the mode; CPUMeasured is false where schedstat is missing.
	CPU         []ProcessCPU `json:"cpu"`
	CPUMeasured bool         `json:"cpu_measured"`
	Load        string       `json:"load"`
	// Settings are the leader's settings (kafkaproc.Describe).
	Settings string `json:"settings,omitempty"`
	// Profiles is the top of each broker's CPU profile over the mode, by broker id.
	Profiles map[string]string `json:"profiles,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// CoresBusy is the cores the processes kept busy on average (CPU time over wall time), and the cores'
// worth of threads that were ready to run but waited.
func (r ModeResult) CoresBusy() (busy, waiting float64) {
	if r.Test.Seconds <= 0 {
		return 0, 0
	}
	for _, c := range r.CPU {
		busy += c.RunSeconds
		waiting += c.WaitSeconds
	}
	return busy / r.Test.Seconds, waiting / r.Test.Seconds
}

// Result is the whole experiment.
type Result struct {
	Messages       int          `json:"messages"`
	MessageSize    int          `json:"message_size"`
	Batch          int          `json:"batch"`
	Cores          int          `json:"cores"`
	BrokerSettings string       `json:"broker_settings"`
	Results        []ModeResult `json:"results"`
	// Baseline is each acks=-1 mode measured again, right after its own, with BaselineProps over its
	// settings (Config.Baseline); report.go sets their latencies side by side.
	Baseline      []ModeResult `json:"baseline,omitempty"`
	BaselineProps string       `json:"baseline_props,omitempty"`
	Error         string       `json:"error,omitempty"`
}

// Mode returns the named mode's result, if it ran.
func (r *Result) Mode(name string) (ModeResult, bool) {
	for _, x := range r.Results {
		if x.Mode.Name == name {
			return x, true
		}
	}
	return ModeResult{}, false
}

// Checks compares the run with the speed targets: acks=0 on three replicas at least TargetAcks0Ratio of
// one replica, acks=-1 at least TargetAcksAllRatio. ok is false when one is below (or did not run). Each
// line also gives the most the mode's CPU per message allows against one replica (CPUCeilingRatio), so
// that a target the machine's cores cannot reach reads as such.
func (r *Result) Checks() (lines []string, ok bool) {
	ok = true
	for _, c := range []struct {
		mode   string
		target float64
	}{{"3 replicas, acks=0", TargetAcks0Ratio}, {"3 replicas, acks=-1", TargetAcksAllRatio}} {
		x, ran := r.Mode(c.mode)
		var line string
		switch {
		case !ran || x.Error != "" || x.Ratio == 0:
			lines = append(lines, fmt.Sprintf("replication %-20s did not run", c.mode))
			ok = false
			continue
		case x.Ratio < c.target:
			line = fmt.Sprintf("replication %-20s %.2f× of 1 replica: BELOW the target %.2f×", c.mode, x.Ratio, c.target)
			ok = false
		default:
			line = fmt.Sprintf("replication %-20s %.2f× of 1 replica (target ≥ %.2f×): ok", c.mode, x.Ratio, c.target)
		}
		if most := r.CPUCeilingRatio(x); most > 0 {
			line += fmt.Sprintf("; its CPU per message allows at most %.2f× on %d cores kept busy", most, r.Cores)
		}
		lines = append(lines, line)
	}
	return lines, ok
}

// CPULimit is what the mode's processes spent on one message, CPU seconds over every process (perMsg), and
// the rate the machine's cores allow at that cost if they were busy all the time (cores / perMsg, msg/s).
// Both are zero where nothing was measured.
func (x ModeResult) CPULimit(cores int) (perMsg, msgPerS float64) {
	var run float64
	for _, c := range x.CPU {
		run += c.RunSeconds
	}
	if run <= 0 || x.Test.Msgs <= 0 || cores <= 0 {
		return 0, 0
	}
	perMsg = run / float64(x.Test.Msgs)
	return perMsg, float64(cores) / perMsg
}

// CPUCeilingRatio is the most a mode's rate could be against the 1-replica producer's if the machine's
// cores were busy all the time with what the mode's processes spend on one message (CPULimit), over the
// 1-replica mode's producer rate. Zero where the CPU was not measured.
func (r *Result) CPUCeilingRatio(x ModeResult) float64 {
	base, ok := r.Mode(Modes()[0].Name)
	_, limit := x.CPULimit(r.Cores)
	if !ok || base.Test.SendMsgPerS <= 0 || !x.CPUMeasured || limit <= 0 {
		return 0
	}
	return limit / base.Test.SendMsgPerS
}

// Config is one run of the experiment.
type Config struct {
	Bin         string // the kafka command (kafkaproc.Build)
	ZooKeeper   string // connect string of a running ZooKeeper, without chroot
	Dir         string // a folder for the brokers (emptied mode by mode)
	Messages    int
	MessageSize int
	Profile     bool         // run the brokers with --cpuprofile and read each profile's top
	Progress    func(string) // may be nil
	// Host is where the brokers run (the server host over a link); the
	// zero Host is this machine's loopback.
	Host localsvc.Host
	// Baseline, when set, are settings to run each acks=-1 mode with a second time, right after the
	// first, on a cluster of its own (Result.Baseline): broker settings, and the producer's properties as
	// latency.ProducerPrefix keys, as figure 7's baseline takes them.
	Baseline map[string]string
}

// Run runs every mode in turn. A mode that fails is recorded with its error and the others
// still run; the error returned joins them.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.MessageSize <= 0 {
		cfg.MessageSize = 200
	}
	if cfg.Messages < Batch {
		cfg.Messages = Batch
	}
	cfg.Messages -= cfg.Messages % Batch
	rep := &Result{Messages: cfg.Messages, MessageSize: cfg.MessageSize, Batch: Batch, Cores: runtime.NumCPU()}
	if cfg.Baseline != nil {
		rep.BaselineProps = latency.FormatProps(cfg.Baseline)
	}
	var errs []error
	measureMode := func(i int, m Mode, extra map[string]string, with string) ModeResult {
		if cfg.Progress != nil {
			cfg.Progress(fmt.Sprintf("replication (figure 6): %s, %d messages%s", m.Name, cfg.Messages, with))
		}
		r, settings, err := runMode(ctx, cfg, i, m, extra)
		r.Settings = settings
		if err != nil {
			r.Error = err.Error()
			errs = append(errs, fmt.Errorf("experiments: replication %s%s: %w", m.Name, with, err))
		}
		if rep.BrokerSettings == "" && extra == nil {
			rep.BrokerSettings = settings
		}
		return r
	}
	for i, m := range Modes() {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		rep.Results = append(rep.Results, measureMode(i, m, nil, ""))
		if cfg.Baseline != nil && m.Acks == -1 && ctx.Err() == nil {
			rep.Baseline = append(rep.Baseline, measureMode(i, m, cfg.Baseline, " with "+rep.BaselineProps))
		}
	}
	if base, ok := rep.Mode(Modes()[0].Name); ok && base.Test.MsgPerS > 0 && base.Test.SendMsgPerS > 0 {
		for _, rs := range [][]ModeResult{rep.Results, rep.Baseline} {
			for i := range rs {
				t := rs[i].Test
				rs[i].Ratio = t.SendMsgPerS / base.Test.SendMsgPerS
				rs[i].StoredRatio = t.MsgPerS / base.Test.MsgPerS
			}
		}
	}
	return rep, errors.Join(errs...)
}

// replCluster is one mode's brokers.
type replCluster struct {
	procs []*kafkaproc.Process
	profs []string
}

func (c *replCluster) brokerList() string {
	var parts []string
	for i, p := range c.procs {
		parts = append(parts, strconv.Itoa(i)+":"+p.Addr())
	}
	return strings.Join(parts, ",")
}

// stop stops every broker cleanly (writing its CPU profile).
func (c *replCluster) stop() error {
	var errs []error
	for _, p := range c.procs {
		errs = append(errs, p.Stop())
	}
	return errors.Join(errs...)
}

// startReplCluster starts the mode's brokers with extra over the shipped settings.
func startReplCluster(ctx context.Context, cfg Config, dir, connect string, extra map[string]string) (*replCluster, error) {
	c := &replCluster{}
	for id := range Brokers {
		override := map[string]string{}
		maps.Copy(override, extra) // then the cluster's own, which extra cannot change
		maps.Copy(override, map[string]string{"brokerid": strconv.Itoa(id), "enable.zookeeper": "true", "zk.connect": connect})
		o := kafkaproc.Options{Bin: cfg.Bin, Dir: filepath.Join(dir, "broker-"+strconv.Itoa(id)), Host: cfg.Host, Override: override}
		if cfg.Profile {
			prof := filepath.Join(dir, "broker-"+strconv.Itoa(id)+".prof")
			o.Args = []string{"--cpuprofile", prof}
			c.profs = append(c.profs, prof)
		}
		p, err := kafkaproc.Start(ctx, o)
		if err != nil {
			return c, errors.Join(err, c.stop())
		}
		c.procs = append(c.procs, p)
	}
	return c, nil
}

// producerConfig is the experiment's producer for mode m, with props (a run's `producer:` properties,
// latency.ProducerPrefix cut off) set over it by their 0.7 names: a property may change any setting,
// the mode's acknowledgements and window included, and one the producer does not know is an error.
// The cluster's broker list is runMode's to set, once the cluster runs.
func producerConfig(m Mode, props map[string]string) (producer.Config, error) {
	pcfg := producer.DefaultConfig()
	pcfg.RequiredAcks, pcfg.Magic = m.Acks, message.MagicV0
	pcfg.RequestTimeout = 30 * time.Second
	pcfg.MaxInFlight = max(m.InFlight, 1)
	for k, v := range props {
		if err := pcfg.Set(k, v); err != nil {
			return pcfg, err
		}
	}
	return pcfg, nil
}

// runMode measures mode m on a cluster of its own, with extra's broker settings over the shipped ones
// and its producer properties (latency.ProducerPrefix) over the experiment's producer's.
func runMode(ctx context.Context, cfg Config, i int, m Mode, extra map[string]string) (r ModeResult, settings string, err error) {
	brokerProps, producerProps := latency.SplitProducer(extra, nil)
	r.Mode = m
	r.Test = measure.Result{System: m.Name, Test: "producer", Batch: Batch}
	// The producer's settings first: a property it does not know stops the mode before three
	// brokers start.
	pcfg, err := producerConfig(m, producerProps)
	if err != nil {
		return r, "", err
	}
	dir := filepath.Join(cfg.Dir, "mode-"+strconv.Itoa(i))
	defer os.RemoveAll(dir)
	connect := cfg.ZooKeeper + "/fig6-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	c, err := startReplCluster(ctx, cfg, dir, connect, brokerProps)
	if err != nil {
		return r, "", err
	}
	settings = c.procs[0].Settings()
	stopped := false
	defer func() {
		if !stopped {
			err = errors.Join(err, c.stop())
		}
	}()
	zc, err := zk.Connect(connect, 10*time.Second)
	if err != nil {
		return r, settings, err
	}
	defer zc.Close()
	replicas := []int32{0, 1, 2}[:m.Replicas]
	if err := waitFor(ctx, 30*time.Second, "three live brokers", func() bool {
		live, err := cluster.LiveBrokers(zc)
		return err == nil && len(live) == Brokers
	}); err != nil {
		return r, settings, err
	}
	if err := cluster.CreateTopic(zc, replicationTopic, cluster.Assignment{replicas}); err != nil {
		return r, settings, err
	}
	leader := c.procs[0]
	sc := consumer.NewSimpleConsumer(leader.Addr(), 30*time.Second)
	defer sc.Close()
	if err := waitFor(ctx, 30*time.Second, "broker 0 leading with every replica in sync", func() bool {
		s, err := cluster.ReadState(zc, replicationTopic, 0)
		_, lerr := sc.LatestOffset(replicationTopic, 0) // a broker that does not lead yet answers "not leader"
		return err == nil && s.Leader == 0 && len(s.ISR) == m.Replicas && lerr == nil
	}); err != nil {
		return r, settings, err
	}

	// One acks=-1 batch before the clock starts: it waits until every follower has fetched once (a
	// follower that asked before the leader knew it leads retries after a pause), so that no mode's
	// first batch measures the cluster's start.
	if err := warmUp(c.brokerList(), cfg.MessageSize); err != nil {
		return r, settings, fmt.Errorf("warm-up: %w", err)
	}
	pcfg.MetadataBrokerList = c.brokerList()
	p, err := producer.NewSync(pcfg)
	if err != nil {
		return r, settings, err
	}
	defer p.Close()
	batch := make([][]byte, Batch)
	for k := range batch {
		batch[k] = make([]byte, cfg.MessageSize)
		for j := range batch[k] {
			batch[k][j] = byte('a' + (k+j)%26)
		}
	}
	// A batch's latency runs from its Send to the return of the call that read its answer: with w in
	// flight, the Send w-1 batches later (it returns with at most w-1 unanswered), or the last Flush.
	w := pcfg.MaxInFlight
	started := make([]time.Time, 0, w)
	hist := hdrhistogram.New(1, 120_000_000, 3) // µs, up to 2 minutes
	pids := []string{"self"}
	for _, bp := range c.procs {
		pids = append(pids, strconv.Itoa(bp.Pid()))
	}
	before, okBefore := readCPU(pids)
	var sent atomic.Int64
	smp := measure.NewSampler(&sent, cfg.MessageSize, int64(cfg.Messages), 250*time.Millisecond, nil)
	start := time.Now()
	smp.Start()
	for n := 0; n < cfg.Messages; n += Batch {
		if err := ctx.Err(); err != nil {
			smp.Stop()
			return r, settings, err
		}
		started = append(started, time.Now())
		if err := p.Send(replicationTopic, 0, batch...); err != nil {
			smp.Stop()
			return r, settings, fmt.Errorf("send after %d messages: %w", n, err)
		}
		if len(started) == w || m.Acks == 0 {
			if m.Acks != 0 {
				_ = hist.RecordValue(max(time.Since(started[0]).Microseconds(), 1))
			}
			started = append(started[:0], started[1:]...)
		}
		sent.Add(Batch)
	}
	if err := p.Flush(); err != nil {
		smp.Stop()
		return r, settings, fmt.Errorf("flush: %w", err)
	}
	for _, t0 := range started {
		if m.Acks != 0 {
			_ = hist.RecordValue(max(time.Since(t0).Microseconds(), 1))
		}
	}
	end := int64(cfg.Messages+Batch) * int64(cfg.MessageSize+replicationPartSize) // the warm-up's batch too
	werr := waitFor(ctx, 10*time.Minute, "the leader exposing every message", func() bool {
		e, err := sc.LatestOffset(replicationTopic, 0)
		return err == nil && e >= end
	})
	wall := time.Since(start)
	series, sendDone := smp.Stop()
	after, okAfter := readCPU(pids)
	if werr != nil {
		return r, settings, werr
	}
	r.Load = machine.ReadLoad().String()
	r.Test.Seconds, r.Test.Msgs, r.Test.Series = wall.Seconds(), int64(cfg.Messages), series
	r.Test.MBSent = float64(cfg.Messages) * float64(cfg.MessageSize) / 1e6
	r.Test.MsgPerS = float64(cfg.Messages) / wall.Seconds()
	if sendDone > 0 {
		r.Test.SendSeconds = sendDone.Seconds()
		r.Test.SendMsgPerS = float64(cfg.Messages) / sendDone.Seconds()
	}
	if m.Acks != 0 {
		ms := func(q float64) float64 { return float64(hist.ValueAtQuantile(q)) / 1000 }
		r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs = ms(50), ms(99), ms(99.9), float64(hist.Max())/1000
		r.MeanMs = hist.Mean() / 1000
	}
	r.CPUMeasured = okBefore && okAfter
	for k := range pids {
		name := "producer"
		if k > 0 {
			name = "broker " + strconv.Itoa(k-1)
			if k == 1 {
				name += " (leader)"
			} else if k-1 >= m.Replicas {
				name += " (no replica)"
			}
		}
		r.CPU = append(r.CPU, ProcessCPU{Name: name, RunSeconds: (after[k].run - before[k].run).Seconds(),
			WaitSeconds: (after[k].wait - before[k].wait).Seconds()})
	}
	stopped = true
	if err := c.stop(); err != nil {
		return r, settings, err
	}
	if cfg.Profile {
		r.Profiles = map[string]string{}
		for id, prof := range c.profs {
			r.Profiles[strconv.Itoa(id)] = profileTop(ctx, cfg.Bin, prof, 12)
		}
	}
	return r, settings, nil
}

// warmUp sends one batch with acks=-1.
func warmUp(brokerList string, size int) error {
	pcfg := producer.DefaultConfig()
	pcfg.MetadataBrokerList, pcfg.RequiredAcks, pcfg.Magic = brokerList, -1, message.MagicV0
	pcfg.RequestTimeout = 30 * time.Second
	p, err := producer.NewSync(pcfg)
	if err != nil {
		return err
	}
	defer p.Close()
	batch := make([][]byte, Batch)
	for k := range batch {
		batch[k] = make([]byte, size)
	}
	return p.Send(replicationTopic, 0, batch...)
}

type cpuTimes struct{ run, wait time.Duration }

// readCPU reads the schedstat of each process ("self" is this one).
func readCPU(pids []string) ([]cpuTimes, bool) {
	out := make([]cpuTimes, len(pids))
	ok := true
	for i, pid := range pids {
		run, wait, good := schedstat.Read(pid)
		out[i], ok = cpuTimes{run, wait}, ok && good
	}
	return out, ok
}

// profileTop is the first lines of `go tool pprof -top` of a CPU profile, or why there are none.
func profileTop(ctx context.Context, bin, prof string, lines int) string {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, goCmd, "tool", "pprof", "-top", "-nodecount="+strconv.Itoa(lines), bin, prof).Output()
	if err != nil {
		return fmt.Sprintf("(no profile: %s tool pprof %s: %v)", goCmd, prof, err)
	}
	// Keep the summary lines and the table; drop pprof's file and build lines.
	var keep []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(l, "File:") || strings.HasPrefix(l, "Build ID:") || strings.HasPrefix(l, "Type:") || strings.HasPrefix(l, "Time:") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// waitFor polls cond every 20 ms until it holds, ctx ends or timeout passes.
func waitFor(ctx context.Context, timeout time.Duration, what string, cond func() bool) error {
	for deadline := time.Now().Add(timeout); !cond(); {
		if err := ctx.Err(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

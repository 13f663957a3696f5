package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/local"
	"github.com/kafkarepro/kafkarepro/experiments"
	"github.com/kafkarepro/kafkarepro/experiments/latency"
	"github.com/kafkarepro/kafkarepro/experiments/protocols"
	"github.com/kafkarepro/kafkarepro/experiments/replication"
	"github.com/kafkarepro/kafkarepro/internal/stats"
)

func TestParseFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"--quick", "--systems", "kafka, rabbitmq", "--check-ratio", "2"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if o.messages != QuickMessages || len(o.systems) != 2 || o.systems[1] != "rabbitmq" || o.checkRatio != 2 ||
		!strings.HasPrefix(o.out, "results"+string(filepath.Separator)) || o.services != "auto" {
		t.Errorf("options = %+v", o)
	}
	o, err = parseFlags(nil, &stderr)
	if err != nil || o.messages != 10_000_000 || o.size != 200 || len(o.systems) != 3 {
		t.Errorf("defaults = %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"--systems", "kafka,zeromq"}, {"--services", "cloud"}, {"--messages", "0"}, {"extra"}} {
		if _, err := parseFlags(bad, &stderr); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

func TestContainersHook(t *testing.T) {
	saved := newContainersProvider
	defer func() { newContainersProvider = saved }()
	if saved == nil {
		t.Error("compare/containers is not wired in (containers.go)")
	}
	newContainersProvider = nil
	_, _, err := newProvider(context.Background(), options{services: "containers"}, nil, io.Discard)
	if !errors.Is(err, ErrNoContainers) {
		t.Errorf("err = %v, want ErrNoContainers", err)
	}
}

// The whole quick run, for real, into a temporary folder.
func TestIntegration_ReproduceQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	// All three systems when their scripts exist (about two minutes on a
	// small machine); REPRODUCE_KAFKA_ONLY=1 keeps it to ours.
	systems := "kafka"
	repo, err := local.FindRepo()
	if err != nil {
		t.Fatal(err)
	}
	_, errA := os.Stat(filepath.Join(repo, "scripts", "activemq.sh"))
	_, errR := os.Stat(filepath.Join(repo, "scripts", "rabbitmq.sh"))
	if errA == nil && errR == nil && os.Getenv("REPRODUCE_KAFKA_ONLY") == "" {
		systems = "kafka,activemq,rabbitmq"
	}
	out := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	start := time.Now()
	// Figure 6's experiment small: experiments/replication_test.go runs it on its own.
	code := run(context.Background(), []string{"--quick", "--services", "local", "--systems", systems, "--out", out,
		"--replication-messages", "20000"}, &stdout, &stderr)
	t.Logf("took %v\n%s", time.Since(start), stdout.String())
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout.String(), stderr.String())
	}
	for _, f := range []string{"producer.csv", "consumer.csv", "series.csv", "summary.json", "REPORT.md",
		"fig4_producer.png", "fig5_consumer.png", "fig_storage.png", "fig_compression.png", "fig6_replication.png", "fig7_latency.png"} {
		if st, err := os.Stat(filepath.Join(out, f)); err != nil || st.Size() == 0 {
			t.Errorf("%s missing or empty: %v", f, err)
		}
	}
	var sum experiments.Summary
	data, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	if err := json.Unmarshal(data, &sum); err != nil {
		t.Fatal(err)
	}
	if len(sum.Errors) != 0 {
		t.Errorf("errors: %q", sum.Errors)
	}
	if c := sum.Compression; c == nil || len(c.Codecs) != 3 || c.Codecs[1].BytesPerMessage >= c.Codecs[0].BytesPerMessage {
		t.Errorf("compression experiment: %+v", c)
	}
	// The machine's ceiling beside our tests, and figure 7.
	if len(sum.Ceiling) != 3 {
		t.Errorf("ceiling: %+v, want three probes", sum.Ceiling)
	}
	for _, c := range sum.Ceiling {
		if c.MsgPerS <= 0 || c.OursMsgPerS <= 0 || c.Fraction <= 0 || c.TestMsgPerS <= 0 {
			t.Errorf("ceiling %s: %+v", c.Probe, c)
		}
		// The consumer probe in turns with our consumer reading figure 5's topic again; the row holds their medians.
		var probes, ours []float64
		for _, r := range c.Rounds {
			probes, ours = append(probes, r.ProbeMsgPerS), append(ours, r.OursMsgPerS)
		}
		want := 0
		if c.Probe == "consumer" {
			want = consumerRounds
		}
		if len(c.Rounds) != want || (want > 0 && (c.MsgPerS != stats.Median(probes) || c.OursMsgPerS != stats.Median(ours))) {
			t.Errorf("ceiling %s: %d rounds %+v, want %d and the row at their medians", c.Probe, len(c.Rounds), c, want)
		}
	}
	if report, _ := os.ReadFile(filepath.Join(out, "REPORT.md")); !strings.Contains(string(report), "**consumer, in turns**") {
		t.Errorf("REPORT.md does not list the consumer's rounds")
	}
	if l := sum.Latency; l == nil || len(l.Settings) != len(latency.Settings()) || l.Error != "" ||
		len(l.Baseline) != len(l.Settings) || l.BaselineProps != "log.grown.buffers.max=0 produce.coalesce.max.us=0 producer:socket.nagle.disable=true" {
		t.Errorf("latency experiment, with its baseline by default: %+v", l)
	}
	if report, _ := os.ReadFile(filepath.Join(out, "REPORT.md")); !strings.Contains(string(report), "settings hold on both percentiles") {
		t.Errorf("REPORT.md does not set figure 7 beside its baseline")
	}
	if r := sum.Replication; r == nil || len(r.Results) != len(replication.Modes()) || r.Results[3].P99Ms <= 0 ||
		len(r.Baseline) != 2 || r.Baseline[0].Mode != r.Results[3].Mode || r.Baseline[0].P99Ms <= 0 || r.BaselineProps != sum.Latency.BaselineProps {
		t.Errorf("replication experiment, with its acks=-1 modes' baseline by default: %+v", r)
	}
	if report, _ := os.ReadFile(filepath.Join(out, "REPORT.md")); !strings.Contains(string(report), "The acks=-1 modes again with") {
		t.Errorf("REPORT.md does not set figure 6's acks=-1 modes beside their baseline")
	}
	// The Kafka protocol beside the paper's: four paths, each phase measured, in REPORT.md.
	if p := sum.Protocols; p == nil || len(p.Paths) != 4 || p.Error != "" {
		t.Errorf("protocols experiment: %+v", p)
	} else {
		for _, path := range p.Paths {
			for _, ph := range []*protocols.Phase{path.Producer, path.Consumer} {
				if ph != nil && (ph.Messages != p.Messages || ph.MsgPerS <= 0) {
					t.Errorf("protocols %s on %s: %+v", path.Name, path.Topic, ph)
				}
			}
		}
		if report, _ := os.ReadFile(filepath.Join(out, "REPORT.md")); !strings.Contains(string(report), "of the paper's protocol's fetch rate") {
			t.Errorf("REPORT.md lacks the protocols experiment's ratios")
		}
	}
	if want := len(strings.Split(systems, ",")); len(sum.Systems) != want {
		t.Fatalf("%d systems in summary.json, want %d", len(sum.Systems), want)
	}
	for _, r := range sum.Systems[1:] {
		if r.ProducerRate(1) <= 0 || r.ConsumerRate() <= 0 {
			t.Errorf("%s not fully measured: %+v", r.Name, r)
		}
	}
	k := sum.Systems[0]
	if k.Name != "kafka" || k.ProducerRate(1) <= 0 || k.ProducerRate(50) <= 0 || k.ConsumerRate() <= 0 {
		t.Fatalf("kafka not fully measured: %+v", k)
	}
	// §3.1 / §5: 9 bytes of overhead per message on disk, exactly.
	if st, ok := k.MainStorage(); !ok || st.OverheadBytes != 9 {
		t.Errorf("kafka storage = %+v, want 9 bytes of overhead", st)
	}
	if sum.Machine.Cores == 0 || sum.Machine.GoVersion == "" || sum.Machine.Kernel == "" {
		t.Errorf("machine = %+v", sum.Machine)
	}
	if k.Settings["flush"] == "" || k.Settings["server_version"] == "" {
		t.Errorf("settings = %v", k.Settings)
	}
	// §5: every local server's writes during the consumer test are measured.
	for _, r := range sum.Systems {
		if r.Consumer == nil {
			continue // reported above
		}
		if io := r.Consumer.ServerIO; io == nil || !io.Measured || io.Processes < 1 {
			t.Errorf("%s: server I/O during the consumer test = %+v, want measured (local provider)", r.Name, io)
		} else {
			t.Logf("%s server during the consumer test: write_bytes %d, wchar %d, %d processes", r.Name, io.WriteBytes, io.WChar, io.Processes)
		}
	}
}

// killer wraps a System and kills the server's process with SIGKILL once the
// producer has sent half of its messages: a server dying mid-test.
type killer struct {
	compare.System
	pid int
}

func (k *killer) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	stop := make(chan struct{})
	defer close(stop)
	go func(sent *atomic.Int64) {
		for sent.Load() < int64(spec.Messages/2) {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
		_ = syscall.Kill(k.pid, syscall.SIGKILL)
	}(spec.Sent)
	return k.System.Produce(ctx, spec)
}

// A real broker killed in the middle of the producer test: that system's
// test ends with an error in the summary, the run goes on with the next
// system and reports what it measured.
func TestIntegration_KilledServerRunContinues(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real servers")
	}
	prov, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer prov.Close()
	victim := experiments.Target{Name: "kafka", Open: func(ctx context.Context) (compare.System, func() error, error) {
		srv, err := prov.Start(ctx, "kafka")
		if err != nil {
			return nil, nil, err
		}
		sys, err := adapters["kafka"](srv)
		if err != nil {
			return nil, nil, errors.Join(err, srv.Stop())
		}
		pid := srv.(interface{ Pid() int }).Pid()
		return &killer{System: sys, pid: pid}, srv.Stop, nil
	}}
	cfg := experiments.DefaultConfig()
	cfg.Messages = 2_000_000 // long enough to be killed in the middle
	cfg.Batches = map[string][]int{"kafka": {1}}
	survivor := target(prov, "kafka")
	reports, err := experiments.Run(context.Background(), cfg, []experiments.Target{victim, survivor})
	if err != nil {
		t.Fatal(err)
	}
	v := reports[0]
	if len(v.Producer) != 1 || v.Producer[0].Error == "" || v.Consumer != nil {
		t.Fatalf("killed system: %+v", v)
	}
	t.Logf("recorded error: %s", v.Producer[0].Error)
	if v.Producer[0].Msgs < int64(cfg.Messages/2) {
		t.Errorf("the killed test kept %d messages, want at least the %d sent before the kill", v.Producer[0].Msgs, cfg.Messages/2)
	}
	if s := reports[1]; len(s.Errors) != 0 || s.ProducerRate(1) <= 0 || s.ConsumerRate() <= 0 {
		t.Errorf("the next system was not measured: %+v", s)
	}
	if sum := experiments.NewSummary(cfg, reports, nil); len(sum.Errors) == 0 {
		t.Error("summary has no error for the killed server")
	}
}

// Nothing of ours may be left running. Ours are this process's children
// (the local provider starts each broker itself, and "ip netns exec" execs
// in place): a plain `pgrep -f` also saw the brokers of any other run on the
// machine, a `make reproduce` or another package's tests beside this one,
// and failed a run that had left nothing behind.
func TestMain(m *testing.M) {
	code := m.Run()
	if out, _ := exec.Command("pgrep", "-P", strconv.Itoa(os.Getpid()), "-f", "kafkarepro-local-.*/bin/kafka server-start").Output(); len(out) > 0 {
		println("leftover kafka servers:", string(out))
		code = 1
	}
	os.Exit(code)
}

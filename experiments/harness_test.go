package experiments

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
	"github.com/kafkarepro/kafkarepro/paper"
)

// fakeSystem counts messages at a fixed pace; failAfter > 0 makes it fail
// like a server that died mid-test.
type fakeSystem struct {
	name      string
	perTick   int // messages per millisecond tick
	failAfter int // fail the producer after this many messages (0: never)
	disk      atomic.Int64
	closed    bool
}

var errServerDied = errors.New("fake: connection reset by peer (server died)")

func (f *fakeSystem) Name() string { return f.name }
func (f *fakeSystem) Settings() map[string]string {
	return map[string]string{"persistence": "fake", "protocol": "none"}
}

func (f *fakeSystem) run(ctx context.Context, n int, counter *atomic.Int64, failAfter int) (compare.Result, error) {
	start := time.Now()
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for counter.Load() < int64(n) {
		select {
		case <-ctx.Done():
			return compare.Result{Messages: counter.Load()}, ctx.Err()
		case <-t.C:
		}
		counter.Add(int64(min(f.perTick, n-int(counter.Load()))))
		if failAfter > 0 && counter.Load() >= int64(failAfter) {
			return compare.Result{Messages: counter.Load()}, errServerDied
		}
	}
	return compare.Result{Messages: int64(n), Bytes: int64(n) * 200, Elapsed: time.Since(start)}, nil
}

func (f *fakeSystem) Produce(ctx context.Context, s compare.ProduceSpec) (compare.Result, error) {
	r, err := f.run(ctx, s.Messages, s.Sent, f.failAfter)
	f.disk.Add(r.Messages * int64(s.MessageSize+9))
	return r, err
}

func (f *fakeSystem) Consume(ctx context.Context, s compare.ConsumeSpec) (compare.Result, error) {
	if s.PrefetchMessages != 1000 || s.PrefetchBytes != 200*1024 {
		return compare.Result{}, errors.New("fake: wrong prefetch")
	}
	return f.run(ctx, s.Messages, s.Received, 0)
}

func (f *fakeSystem) DiskBytes() (int64, error) { return f.disk.Load(), nil }
func (f *fakeSystem) Close() error              { f.closed = true; return nil }

func target(f *fakeSystem, stopped *bool) Target {
	return Target{Name: f.name, Open: func(context.Context) (compare.System, func() error, error) {
		return f, func() error { *stopped = true; return nil }, nil
	}}
}

func testConfig(n int) Config {
	cfg := DefaultConfig()
	cfg.Messages = n
	cfg.SampleInterval = 10 * time.Millisecond
	return cfg
}

func TestSamplerSeries(t *testing.T) {
	var c atomic.Int64
	s := measure.NewSampler(&c, 200, 200000, 5*time.Millisecond, nil)
	s.Start()
	for i := 0; i < 40; i++ {
		c.Add(5000)
		time.Sleep(time.Millisecond)
	}
	series, doneAt := s.Stop()
	if doneAt <= 0 {
		t.Error("the sampler did not note when the counter reached the total")
	}
	if len(series) < 3 {
		t.Fatalf("got %d samples in ~40 ms at 5 ms, want several", len(series))
	}
	last := series[len(series)-1]
	if want := 40 * 5000 * 200 / 1e6; last.MB != want {
		t.Errorf("last sample at %v MB, want %v (every message counted)", last.MB, want)
	}
	var total float64
	for i, p := range series {
		if i > 0 && (p.MB < series[i-1].MB || p.Seconds <= series[i-1].Seconds) {
			t.Fatalf("series not increasing at %d: %+v after %+v", i, p, series[i-1])
		}
		if p.MsgPerS < 0 {
			t.Fatalf("negative rate %+v", p)
		}
		prev := 0.0
		if i > 0 {
			prev = series[i-1].Seconds
		}
		total += p.MsgPerS * (p.Seconds - prev)
	}
	// The rates integrate back to the message count.
	if got := total; got < 0.99*200000 || got > 1.01*200000 {
		t.Errorf("integral of the series = %.0f messages, want 200000", got)
	}
}

func TestRunWritesEverything(t *testing.T) {
	ours := &fakeSystem{name: "kafka", perTick: 400}
	other := &fakeSystem{name: "rabbitmq", perTick: 50}
	var s1, s2 bool
	cfg := testConfig(20000)
	reports, err := Run(context.Background(), cfg, []Target{target(ours, &s1), target(other, &s2)})
	if err != nil {
		t.Fatal(err)
	}
	if !s1 || !s2 || !ours.closed || !other.closed {
		t.Errorf("servers not stopped/closed: %v %v %v %v", s1, s2, ours.closed, other.closed)
	}
	if len(reports[0].Producer) != 2 || reports[0].Producer[1].Batch != 50 || len(reports[1].Producer) != 1 {
		t.Fatalf("producer tests = %+v / %+v; want kafka batches 1,50 and rabbitmq batch 1", reports[0].Producer, reports[1].Producer)
	}
	for _, r := range reports {
		for _, tr := range r.Tests() {
			if !tr.OK() || tr.Msgs != 20000 || tr.MsgPerS <= 0 || len(tr.Series) == 0 {
				t.Errorf("%s %s: %+v (series %d)", tr.System, tr.Test, tr, len(tr.Series))
			}
		}
		st, ok := r.MainStorage()
		if !ok || st.OverheadBytes != 9 || st.BytesPerMessage != 209 {
			t.Errorf("%s storage = %+v, want 209 bytes/message, 9 overhead", r.Name, st)
		}
	}
	fig, err := paper.Load()
	if err != nil {
		t.Fatal(err)
	}
	sum := NewSummary(cfg, reports, fig)
	sum.Run = "test"
	sum.Services, sum.ServicesWhy = "containers", "auto: Docker 20.10 answered; images: scripts/build-images.sh, 0.7 s"
	sum.LoadAtStart, sum.LoadAtEnd = &machine.Load{Avg1: 1.5, PageCacheMB: 100}, &machine.Load{Avg1: 2.5, PageCacheMB: 200}
	sum.FreePages = &machine.FreePageReporting{Present: true, Holdable: true, Held: true, MinFreeMs: 300000, MaxWaitingMiB: 16384, Before: "0 ms, 1024 MiB"}
	dir := t.TempDir()
	if err := Write(dir, sum, fig); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(dir, "producer.csv"))
	if len(rows) != 4 || strings.Join(rows[0][:6], ",") != "system,batch,seconds,mb_sent,msgs,msg_per_s" {
		t.Fatalf("producer.csv = %v", rows)
	}
	if rows[2][0] != "kafka" || rows[2][1] != "50" || rows[2][4] != "20000" || rows[2][3] != "4.000" {
		t.Errorf("producer.csv kafka batch 50 row = %v", rows[2])
	}
	if rows := readCSV(t, filepath.Join(dir, "consumer.csv")); len(rows) != 3 {
		t.Errorf("consumer.csv = %v", rows)
	}
	var back Summary
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if back.ServicesWhy != sum.ServicesWhy || back.LoadAtEnd == nil || back.LoadAtEnd.Avg1 != 2.5 {
		t.Errorf("summary.json: services_why %q, load at the end %+v", back.ServicesWhy, back.LoadAtEnd)
	}
	if back.FreePages == nil || *back.FreePages != *sum.FreePages {
		t.Errorf("summary.json: free page reporting %+v, want %+v", back.FreePages, sum.FreePages)
	}
	if len(back.Systems) != 2 || len(back.Averages) != 5 || len(back.Errors) != 0 {
		t.Errorf("summary.json: %d systems, %d averages, errors %v", len(back.Systems), len(back.Averages), back.Errors)
	}
	names := map[string]bool{}
	for _, r := range back.Ratios {
		names[r.Name] = true
	}
	for _, n := range []string{"kafka_producer_b50_over_b1", "kafka_producer_b50_over_rabbitmq", "kafka_consumer_over_rabbitmq", "rabbitmq_space_over_kafka"} {
		if !names[n] {
			t.Errorf("ratio %s missing from %v", n, back.Ratios)
		}
	}
	for _, f := range []string{"fig4_producer.png", "fig5_consumer.png", "fig_storage.png", "REPORT.md", "series.csv"} {
		checkNonEmpty(t, filepath.Join(dir, f))
	}
	// The run folder loads back with its samples (reproduce --replot).
	loaded, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range loaded.Systems {
		for j, tr := range r.Tests() {
			if want := reports[i].Tests()[j]; len(tr.Series) != len(want.Series) || tr.Msgs != want.Msgs {
				t.Errorf("loaded %s %s: %d samples, %d msgs; want %d, %d", tr.System, tr.Test, len(tr.Series), tr.Msgs, len(want.Series), want.Msgs)
			}
		}
	}
	report, _ := os.ReadFile(filepath.Join(dir, "REPORT.md"))
	for _, want := range []string{"400,000", "22,000", "| kafka | 50 |", "persistence", "loopback",
		"Servers: **containers** provider — auto: Docker 20.10 answered; images: scripts/build-images.sh, 0.7 s.",
		"Machine at the start: load average: 1.50, 0.00, 0.00, page cache 100 MB; at the end: load average: 2.50",
		"Free page reporting to the VM's host (docs/PERFORMANCE.md, \"The machine\"): held: freed pages are reported to the host after 300000 ms, at most 16384 MiB waiting (before the run: 0 ms, 1024 MiB)."} {
		if !strings.Contains(string(report), want) {
			t.Errorf("REPORT.md lacks %q", want)
		}
	}
}

// A system whose server dies mid-test has that test recorded with its
// error, and the run goes on with the next system.
func TestFailingSystemDoesNotStopRun(t *testing.T) {
	bad := &fakeSystem{name: "activemq", perTick: 100, failAfter: 3000}
	good := &fakeSystem{name: "kafka", perTick: 400}
	var s1, s2 bool
	cfg := testConfig(10000)
	reports, err := Run(context.Background(), cfg, []Target{target(bad, &s1), target(good, &s2)})
	if err != nil {
		t.Fatal(err)
	}
	if !s1 || !bad.closed {
		t.Error("the failed system's server was not stopped")
	}
	b := reports[0]
	if len(b.Producer) != 1 || b.Producer[0].Error == "" || !strings.Contains(b.Producer[0].Error, "server died") {
		t.Fatalf("failed producer = %+v", b.Producer)
	}
	if b.Producer[0].Msgs < 3000 || b.Producer[0].MsgPerS <= 0 {
		t.Errorf("failed producer did not keep what it measured: %+v", b.Producer[0])
	}
	if b.Consumer != nil || len(b.Errors) != 2 {
		t.Errorf("consumer = %v, errors = %q; want no consumer test and 2 errors", b.Consumer, b.Errors)
	}
	if g := reports[1]; len(g.Errors) != 0 || g.ConsumerRate() <= 0 || g.ProducerRate(50) <= 0 {
		t.Errorf("the system after the failure was not measured: %+v", g)
	}
	sum := NewSummary(cfg, reports, nil)
	if len(sum.Errors) != 2 || !strings.Contains(sum.Errors[0], "activemq producer (batch 1)") {
		t.Errorf("summary errors = %q", sum.Errors)
	}
	dir := t.TempDir()
	if err := Write(dir, sum, nil); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(dir, "producer.csv"))
	if !strings.Contains(rows[1][6], "server died") {
		t.Errorf("producer.csv error column = %q", rows[1][6])
	}
	if lines, ok := CheckRatio(reports, 1); ok || !strings.Contains(strings.Join(lines, "\n"), "activemq was not measured") {
		t.Errorf("CheckRatio with a failed system = %v, %q; want failure naming activemq", ok, lines)
	}
}

func TestOpenFailureRecorded(t *testing.T) {
	tg := Target{Name: "rabbitmq", Open: func(context.Context) (compare.System, func() error, error) {
		return nil, nil, errors.New("rabbitmq did not start, see /tmp/x/log")
	}}
	reports, err := Run(context.Background(), testConfig(100), []Target{tg})
	if err != nil || len(reports) != 1 || len(reports[0].Errors) != 1 || !strings.Contains(reports[0].Errors[0], "/tmp/x/log") {
		t.Fatalf("reports = %+v, err = %v", reports, err)
	}
}

func TestTestTimeoutRecorded(t *testing.T) {
	slow := &fakeSystem{name: "activemq", perTick: 1}
	cfg := testConfig(1_000_000)
	cfg.TestTimeout = 50 * time.Millisecond
	var stopped bool
	reports, _ := Run(context.Background(), cfg, []Target{target(slow, &stopped)})
	if p := reports[0].Producer[0]; !strings.Contains(p.Error, "time limit") || p.Msgs == 0 {
		t.Errorf("timed-out producer = %+v", p)
	}
}

func TestCheckRatio(t *testing.T) {
	mk := func(name string, b1, b50, cons float64) SystemReport {
		r := SystemReport{Name: name, Producer: []measure.Result{{System: name, Test: "producer", Batch: 1, Msgs: 1, MsgPerS: b1}}}
		if b50 > 0 {
			r.Producer = append(r.Producer, measure.Result{System: name, Test: "producer", Batch: 50, Msgs: 1, MsgPerS: b50})
		}
		r.Consumer = &measure.Result{System: name, Test: "consumer", Msgs: 1, MsgPerS: cons}
		return r
	}
	reports := []SystemReport{mk("kafka", 50000, 400000, 100000), mk("activemq", 5000, 0, 10000), mk("rabbitmq", 20000, 0, 30000)}
	if lines, ok := CheckRatio(reports, 2); !ok {
		t.Errorf("ratio 2 failed: %q", lines)
	}
	lines, ok := CheckRatio(reports, 4)
	if ok {
		t.Fatal("ratio 4 passed, but our consumer is only 3.3x RabbitMQ's")
	}
	joined := strings.Join(lines, "\n")
	if !strings.Contains(joined, "FAIL consumer") || !strings.Contains(joined, "rabbitmq") || strings.Count(joined, "FAIL") != 1 {
		t.Errorf("lines = %s", joined)
	}
	if _, ok := CheckRatio(reports[1:], 1); ok {
		t.Error("check passed without our system")
	}
	if lines, ok := CheckRatio(reports[:1], 3); !ok || len(lines) != 1 {
		t.Errorf("kafka alone: %v %q", ok, lines)
	}
}

func readCSV(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return rows
}

func checkNonEmpty(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil || st.Size() < 100 {
		t.Errorf("%s: missing or tiny (%v)", path, err)
	}
}

func TestEstimateRun(t *testing.T) {
	s := &Summary{Messages: 1000, Seconds: 30, Systems: []SystemReport{{
		Name:     "x",
		Producer: []measure.Result{{Test: "producer", Seconds: 10}},
		Consumer: &measure.Result{Test: "consumer", Seconds: 5},
	}}}
	// 15 s in tests x 10 + 15 s outside = 165 s.
	if got := EstimateRun(s, 10_000); got != 165*time.Second {
		t.Errorf("EstimateRun = %v, want 2m45s", got)
	}
}

func TestReadMachineLoad(t *testing.T) {
	if _, err := os.Stat("/proc/loadavg"); err != nil {
		t.Skip("no /proc/loadavg")
	}
	l := machine.ReadLoad()
	if l.PageCacheMB <= 0 || l.Avg1 < 0 {
		t.Errorf("ReadMachineLoad = %+v, want a page cache size", l)
	}
	s := machine.Load{Avg1: 1.2, Avg5: 0.9, Avg15: 0.75, PageCacheMB: 1696}.String()
	if s != "load average: 1.20, 0.90, 0.75, page cache 1,696 MB" {
		t.Errorf("String = %q", s)
	}
}

// machine.Resident reads the page-cache state of a folder's files by mincore(2):
// a file just written is resident, and after its pages are dropped with
// POSIX_FADV_DONTNEED (synced first) it is not.
func TestResident(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "seg.log")
	if err := os.WriteFile(path, make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	res, total, err := machine.Resident(dir)
	if err != nil || total != 1<<20 || res != total {
		t.Fatalf("just written: %d of %d bytes resident, %v; want all of 1 MiB", res, total, err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	res, total, err = machine.Resident(dir)
	if err != nil || total != 1<<20 || res > total/4 {
		t.Fatalf("dropped: %d of %d bytes resident, %v; want (nearly) none", res, total, err)
	}
}

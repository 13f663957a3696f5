package experiments

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
)

// ioSystem is a fakeSystem whose server is a "local process": its I/O
// counters grow by producerWrites during each producer test and by
// consumerWrites (plus the payload as wchar) during the consumer test.
type ioSystem struct {
	*fakeSystem
	producerWrites, consumerWrites int64
	failAfterConsume               bool

	mu       sync.Mutex
	c        compare.IOCounters
	consumed bool
}

func (s *ioSystem) Produce(ctx context.Context, spec compare.ProduceSpec) (compare.Result, error) {
	r, err := s.fakeSystem.Produce(ctx, spec)
	s.mu.Lock()
	s.c.WriteBytes += s.producerWrites
	s.c.WChar += s.producerWrites
	s.mu.Unlock()
	return r, err
}

func (s *ioSystem) Consume(ctx context.Context, spec compare.ConsumeSpec) (compare.Result, error) {
	r, err := s.fakeSystem.Consume(ctx, spec)
	s.mu.Lock()
	s.c.WriteBytes += s.consumerWrites
	s.c.WChar += s.consumerWrites + r.Bytes
	s.consumed = true
	s.mu.Unlock()
	return r, err
}

func (s *ioSystem) IOCounters() (compare.IOCounters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failAfterConsume && s.consumed {
		return compare.IOCounters{}, errors.New("open /proc/4242/io: no such file or directory")
	}
	c := s.c
	c.Processes = 2
	return c, nil
}

// The consumer test records only what the server wrote during it, for
// systems whose server is a local process; the others say "not measured"
// in summary.json, consumer.csv and REPORT.md.
func TestServerIODuringConsumerTest(t *testing.T) {
	ours := &ioSystem{fakeSystem: &fakeSystem{name: "kafka", perTick: 400}, producerWrites: 1 << 20, consumerWrites: 0}
	amq := &ioSystem{fakeSystem: &fakeSystem{name: "activemq", perTick: 200}, producerWrites: 1 << 20, consumerWrites: 3_000_000}
	broken := &ioSystem{fakeSystem: &fakeSystem{name: "broken", perTick: 200}, failAfterConsume: true}
	container := &fakeSystem{name: "rabbitmq", perTick: 200}
	open := func(sys compare.System) Target {
		return Target{Name: sys.Name(), Open: func(context.Context) (compare.System, func() error, error) { return sys, nil, nil }}
	}
	cfg := testConfig(5000)
	reports, err := Run(context.Background(), cfg, []Target{open(ours), open(amq), open(broken), open(container)})
	if err != nil {
		t.Fatal(err)
	}
	want := []measure.ServerIO{
		{Measured: true, WriteBytes: 0, WChar: 5000 * 200, Processes: 2},
		{Measured: true, WriteBytes: 3_000_000, WChar: 3_000_000 + 5000*200, Processes: 2},
	}
	for i, w := range want {
		got := reports[i].Consumer.ServerIO
		if got == nil || *got != w {
			t.Errorf("%s consumer ServerIO = %+v, want %+v", reports[i].Name, got, w)
		}
	}
	if io := reports[2].Consumer.ServerIO; io == nil || io.Measured || !strings.Contains(io.Note, "/proc/4242/io") {
		t.Errorf("broken counters: ServerIO = %+v, want not measured, naming the error", io)
	}
	if io := reports[3].Consumer.ServerIO; io == nil || io.Measured || !strings.Contains(io.Note, measure.NotMeasured) {
		t.Errorf("container: ServerIO = %+v, want not measured", io)
	}
	for _, r := range reports {
		for _, p := range r.Producer {
			if p.ServerIO != nil {
				t.Errorf("%s producer has ServerIO %+v; only the consumer test is measured", r.Name, p.ServerIO)
			}
		}
	}

	sum := NewSummary(cfg, reports, nil)
	dir := t.TempDir()
	if err := Write(dir, sum, nil); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, filepath.Join(dir, "consumer.csv"))
	if strings.Join(rows[0], ",") != strings.Join(ConsumerCSVHeader, ",") || strings.Join(rows[0][:len(CSVHeader)], ",") != strings.Join(CSVHeader, ",") {
		t.Fatalf("consumer.csv header = %v, want the old columns then server_write_bytes, server_wchar", rows[0])
	}
	n := len(rows[0])
	for i, w := range [][2]string{{"0", "1000000"}, {"3000000", "4000000"}, {measure.NotMeasured, measure.NotMeasured}, {measure.NotMeasured, measure.NotMeasured}} {
		if got := [2]string{rows[i+1][n-2], rows[i+1][n-1]}; got != w {
			t.Errorf("consumer.csv %s: server columns %v, want %v", rows[i+1][0], got, w)
		}
	}
	if rows := readCSV(t, filepath.Join(dir, "producer.csv")); len(rows[0]) != len(CSVHeader) {
		t.Errorf("producer.csv header = %v, want the unchanged %v", rows[0], CSVHeader)
	}
	report, err := os.ReadFile(filepath.Join(dir, "REPORT.md"))
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(string(report), "\n") {
		if strings.HasPrefix(l, "| server disk writes during the consumer test") {
			line = l
		}
	}
	for _, w := range []string{"no disk write activities on the Kafka broker", "| 0 B |", "3,000,000 B (3.0 MB)", "not measured"} {
		if !strings.Contains(line, w) {
			t.Errorf("REPORT.md row %q lacks %q", line, w)
		}
	}
	// summary.json keeps the measurement (and reproduce --replot redraws it).
	back, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if io := back.Systems[1].Consumer.ServerIO; io == nil || *io != want[1] {
		t.Errorf("loaded activemq ServerIO = %+v, want %+v", io, want[1])
	}
}

func TestBytesText(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 4096: "4,096 B (4.1 kB)", 123_456_789: "123,456,789 B (123.5 MB)"} {
		if got := bytesText(n); got != want {
			t.Errorf("bytesText(%d) = %q, want %q", n, got, want)
		}
	}
}

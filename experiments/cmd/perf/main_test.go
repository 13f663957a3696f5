package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/experiments/machine"
)

func TestParseFlags(t *testing.T) {
	o, err := parseFlags([]string{"--messages", "1000", "--phases", "b1 consumer"}, io.Discard)
	if err != nil || o.messages != 1000 || o.b1Messages != 1000 || o.size != 200 || o.fetchSize != 307200 ||
		strings.Join(o.phases, ",") != "b1,consumer" || o.bin != "bin/kafka" {
		t.Errorf("parseFlags = %+v, %v", o, err)
	}
	for _, bad := range [][]string{{"--phases", "b2"}, {"--messages", "0"}, {"extra"}} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) accepted", bad)
		}
	}
}

// The whole command on a small run: three result lines, each naming the
// broker's settings, the load with every step, and a clean shutdown.
func TestIntegration_Perf(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts our broker")
	}
	o, err := parseFlags([]string{"--messages", "20000", "--kafka-bin", filepath.Join(t.TempDir(), "kafka")}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"broker settings kafka-0.7-shipped: brokerid=0 enable.zookeeper=false log.default.flush.interval.ms=1000 ",
		"producer50 result: tool=producer-perf topic=perf50 batch=50 ",
		"producer1 result: tool=producer-perf topic=perf1 batch=1 ",
		"consumer result: tool=consumer-perf topic=perf50 ",
		"rate per tenth", "broker during producer50: ",
		"broker: clean shutdown (exit 0, ",
		"summary (broker settings kafka-0.7-shipped):",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	if n := len(regexp.MustCompile(`(?m)^result: .* settings=kafka-0\.7-shipped$`).FindAllString(text, -1)); n != 3 {
		t.Errorf("%d summary result lines with settings=kafka-0.7-shipped, want 3:\n%s", n, text)
	}
	if n := len(regexp.MustCompile(`(?m)^== .*\(load average: [0-9.]+, [0-9.]+, [0-9.]+, page cache [0-9,]+ MB\)$`).FindAllString(text, -1)); n < 5 {
		t.Errorf("%d steps name the load and the page cache, want every one (5):\n%s", n, text)
	}
}

// printTenths splits the broker's samples into ten spans of time and
// prints each one's CPU, wait, bytes written, reads and bytes per read,
// the tool's writes and CPU, the machine's idle and stolen time, and the
// memory reported to the host.
func TestPrintTenths(t *testing.T) {
	t0 := time.Unix(0, 0)
	var s []brokerSample
	var cpu [8]int64    // cumulative ticks: user nice system idle iowait irq softirq steal
	for i := range 21 { // every 100 ms for 2 s: 10 ms of CPU, 1 MB, 100 reads of 2,290 B, 500 tool writes, 5 ms of tool CPU per sample
		m := machine.ActivitySample{At: t0.Add(time.Duration(i) * 100 * time.Millisecond), CPU: cpu, Reported: int64(i/10) * 524_288_000}
		s = append(s, brokerSample{at: m.At,
			run: time.Duration(i) * 10 * time.Millisecond, wait: time.Duration(i) * time.Millisecond, writeBytes: int64(i) * 1e6,
			reads: int64(i) * 100, readBytes: int64(i) * 229_000, toolWrites: int64(i) * 500, toolRun: time.Duration(i) * 5 * time.Millisecond,
			haveSys: true, haveTool: true, machine: m, haveMachine: true})
		// The next 100 ms of both CPUs, 20 ticks: 10 user, 4 system, 5 idle
		// and 1 stolen (a tenth of two samples: 25% idle, 5% steal), but
		// in the third tenth (samples 4 to 6) 3 idle and 3 stolen (15% and 15%).
		idle, steal := int64(5), int64(1)
		if i == 4 || i == 5 {
			idle, steal = 3, 3
		}
		cpu[0], cpu[2], cpu[3], cpu[7] = cpu[0]+10, cpu[2]+4, cpu[3]+idle, cpu[7]+steal
	}
	// 524.288 MB reported to the host between 0.9 s and 1.0 s (the fifth
	// tenth), and no count at all at the last sample.
	s[20].machine.Reported = -1
	// The tool had exited at the last sample, which carries its figures over (sampleBroker).
	s[20].toolWrites, s[20].toolRun = s[19].toolWrites, s[19].toolRun
	var b strings.Builder
	printTenths(&b, "producer50", s)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 12 || !strings.Contains(lines[0], "producer50") {
		t.Fatalf("got:\n%s", b.String())
	}
	if h := strings.Join(strings.Fields(lines[1]), " "); !strings.HasSuffix(h, "tool cpu s idle % steal % reported MB") {
		t.Fatalf("header %q, want it to end with the tool's CPU, idle %%, steal %% and reported MB", lines[1])
	}
	for _, l := range lines[2:] {
		f := strings.Fields(l)
		if len(f) != 13 || f[2] != "0.020" || f[3] != "0.002" || f[4] != "2.0" || f[5] != "100.0" || f[6] != "200" || f[7] != "2290" {
			t.Fatalf("row %q, want 0.020 s CPU, 0.002 s wait, 2.0 MB, 100.0 MB per CPU s, 200 reads of 2290 B", l)
		}
		if tenth := f[0]; tenth != "10" && (f[8] != "1000" || f[9] != "0.010") {
			t.Fatalf("row %q, want 1000 tool writes and 0.010 s of tool CPU", l)
		}
		if tenth := f[0]; tenth == "10" && (f[8] != "500" || f[9] != "0.005") {
			t.Fatalf("last row %q: the tool had exited at its last sample, want its writes up to then, 500 and 0.005 s", l)
		}
		idle, steal := "25", "5"
		if f[0] == "3" {
			idle, steal = "15", "15"
		}
		if f[10] != idle || f[11] != steal {
			t.Fatalf("row %q: idle %s%% and steal %s%%, want %s and %s", l, f[10], f[11], idle, steal)
		}
		want := map[string]string{"5": "524", "10": "-"}[f[0]]
		if want == "" {
			want = "0"
		}
		if f[12] != want {
			t.Fatalf("row %q: reported MB %s, want %s", l, f[12], want)
		}
	}

	// A sample that could not read the machine: no tenth gets its columns.
	s[7].haveMachine = false
	b.Reset()
	printTenths(&b, "producer50", s)
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n")[2:] {
		if f := strings.Fields(l); len(f) != 13 || f[10] != "-" || f[11] != "-" || f[12] != "-" {
			t.Fatalf("row %q: want - for idle, steal and reported MB when a sample lacks the machine", l)
		}
	}
}

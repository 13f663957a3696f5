package experiments

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
)

// stepSeries is a test's series of 200-byte messages: 1 MB (5,000 messages)
// a 0.1 s point for 0.5 s, then 0.2 MB a point (1,000 messages): 50,000
// msg/s, then 10,000.
func stepSeries() []measure.Point {
	var series []measure.Point
	mb := 0.0
	for i := 1; i <= 10; i++ {
		if i <= 5 {
			mb += 1
		} else {
			mb += 0.2
		}
		series = append(series, measure.Point{Seconds: float64(i) / 10, MB: mb})
	}
	return series
}

// A test's rate in a tenth comes from its series (stepSeries).
func TestTenthRateFromTheSeries(t *testing.T) {
	r := measure.Result{Series: stepSeries()}
	for _, c := range []struct {
		from, to float64
		want     string
	}{
		{0, 0.1, "50,000"},
		{0.05, 0.15, "50,000"}, // between points: interpolated
		{0.5, 0.7, "10,000"},
		{0.45, 0.55, "30,000"}, // half of each: (0.5 + 0.1) MB in 0.1 s
		{0.9, 1.2, "3,333"},    // past the end: the last value, 0.1 MB in 0.3 s
	} {
		if got := tenthRate(r, 200, c.from, c.to); got != c.want {
			t.Errorf("tenthRate(%.2f, %.2f) = %s, want %s", c.from, c.to, got, c.want)
		}
	}
	if got := tenthRate(measure.Result{}, 200, 0, 1); got != "—" {
		t.Errorf("without a series: %s, want —", got)
	}
}

// machineTables is what writeMachineActivity writes for s.
func machineTables(s *Summary) string {
	var b strings.Builder
	writeMachineActivity(func(f string, a ...any) { fmt.Fprintf(&b, f, a...) }, s)
	return b.String()
}

func TestMachineActivityTable(t *testing.T) {
	tenths := make([]machine.ActivityTenth, 10)
	for i := range tenths {
		tenths[i] = machine.ActivityTenth{End: float64(i+1) / 10, User: 30, System: 60, Idle: 10}
	}
	tenths[4].Steal, tenths[4].Idle, tenths[4].IOStallMs = 25, 0, 42
	s := &Summary{MessageSize: 200, Systems: []SystemReport{
		{Name: "kafka", Producer: []measure.Result{{System: "kafka", Batch: 50, MsgPerS: 1e6, Machine: tenths}}},
		{Name: "activemq", Producer: []measure.Result{{System: "activemq", Batch: 1, MsgPerS: 1e4}}},
	}}
	out := machineTables(s)
	for _, want := range []string{
		"**kafka producer, batch 50** (1,000,000 msg/s over the test)",
		"| tenth | ends s | msg/s | user % | system % | idle % | iowait % | steal % | CPU stall ms | memory stall ms | I/O stall ms | dirty MB | writeback MB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
		"| 5 | 0.50 | — | 30 | 60 | 0 | 0 | 25 | 0 | 0 | 42 | 0 | 0 |",
		"| 10 | 1.00 | — | 30 | 60 | 10 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "reported MB |") {
		t.Error("a column for memory reported to the host, though no tenth has a reading")
	}
	if strings.Contains(out, "activemq producer") {
		t.Error("a test without samples got a table")
	}
	if out := machineTables(&Summary{Systems: []SystemReport{{Name: "x"}}}); out != "" {
		t.Errorf("no samples anywhere, yet: %q", out)
	}
}

// Where the kernel counts the memory it reports to its host, the table
// gains a column for it, "—" in a tenth without a reading; where no tenth
// has one, the column is left out (TestMachineActivityTable's rows end at
// writeback).
func TestMachineActivityTableReported(t *testing.T) {
	tenths := make([]machine.ActivityTenth, 10)
	for i := range tenths {
		mb := 0.0
		if i == 6 {
			mb = 1141
		}
		tenths[i] = machine.ActivityTenth{End: float64(i+1) / 10, ReportedMB: &mb}
	}
	tenths[0].ReportedMB = nil
	s := &Summary{MessageSize: 200, Systems: []SystemReport{
		{Name: "kafka", Producer: []measure.Result{{System: "kafka", Batch: 50, MsgPerS: 1e6, Machine: tenths}}},
	}}
	out := machineTables(s)
	for _, want := range []string{
		"| dirty MB | writeback MB | reported MB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
		"| 1 | 0.10 | — | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | — |\n",
		"| 7 | 0.70 | — | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 1141 |\n",
		"| 8 | 0.80 | — | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 | 0 |\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

// Each row's rate is the test's own in that tenth, not since the start: a
// series at 50,000 msg/s for 0.5 s and 10,000 after gives 10,000 in the last
// tenth (from the start it would be 30,000).
func TestMachineActivityTableRates(t *testing.T) {
	series := stepSeries()
	tenths := make([]machine.ActivityTenth, 10)
	for i := range tenths {
		tenths[i] = machine.ActivityTenth{End: float64(i+1) / 10}
	}
	s := &Summary{MessageSize: 200, Systems: []SystemReport{
		{Name: "kafka", Producer: []measure.Result{{System: "kafka", Batch: 1, MsgPerS: 3e4, Series: series, Machine: tenths}}},
	}}
	out := machineTables(s)
	for _, want := range []string{"| 1 | 0.10 | 50,000 |", "| 5 | 0.50 | 50,000 |", "| 6 | 0.60 | 10,000 |", "| 10 | 1.00 | 10,000 |"} {
		if !strings.Contains(out, want) {
			t.Errorf("the table lacks %q:\n%s", want, out)
		}
	}
}

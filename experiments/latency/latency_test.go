package latency

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
)

// TestLatency runs figure 7's experiment for a short while against
// in-process brokers, on the settings that flush within 100 ms (the 3 s
// ones need 15 s each). Flushing after every message shows delays far
// below the 100 ms timer's, whose p50 is at least 20 ms: the flush policy,
// not the consumer's polling, sets the delay (§3.1).
func TestLatency(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three brokers for a second each")
	}
	var fast []Setting
	for _, s := range Settings() {
		if s.period(2000) <= 100*time.Millisecond {
			fast = append(fast, s)
		}
	}
	var started []string // each broker's produce.coalesce.max.us, in turn
	l, err := Run(context.Background(), Config{Rate: 2000, Duration: time.Second, Unpaced: 2000, Size: 200,
		Start: func(ctx context.Context, props map[string]string) (string, string, func() error, error) {
			b := brokertest.Start(t, 0, brokertest.Options{Props: props})
			started = append(started, props["produce.coalesce.max.us"])
			return b.HostPort(), "brokertest with " + props["log.flush.interval"] + "/" + props["log.default.flush.interval.ms"], func() error { return nil }, nil
		},
		Progress: func(s string) { t.Log(s) }, Settings: fast, Baseline: map[string]string{"produce.coalesce.max.us": "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Settings) != 3 || len(fast) != 3 || len(l.Baseline) != 3 || l.BaselineProps != "produce.coalesce.max.us=0" {
		t.Fatalf("%d settings and %d baselines (%q) measured, want 3 of each (flushes every 1 and 100 messages, every 100 ms)",
			len(l.Settings), len(l.Baseline), l.BaselineProps)
	}
	if got := strings.Join(started, ","); got != ",0,,0,,0" {
		t.Errorf("brokers started with produce.coalesce.max.us %q, want each setting then its baseline: \",0,,0,,0\"", got)
	}
	by := map[string]SettingResult{}
	for _, r := range l.Settings {
		if r.Messages < 2001 || r.Seconds < 5*r.Setting.period(2000).Seconds() || r.UnpacedHeldMsgPerS <= 0 || r.P50Ms <= 0 || r.MaxMs < r.P999Ms || r.P999Ms < r.P99Ms || r.P99Ms < r.P50Ms || r.UnpacedMsgPerS <= 0 {
			t.Errorf("%s: %+v", r.Setting.Name, r)
		}
		by[r.Setting.Name] = r
	}
	one, timer := by["log.flush.interval=1"], by["log.default.flush.interval.ms=100"]
	if one.P50Ms >= timer.P50Ms || timer.P50Ms < 20 {
		t.Errorf("p50 %.1f ms flushing every message, %.1f ms flushing every 100 ms: want the first far below the second, the second at least 20 ms",
			one.P50Ms, timer.P50Ms)
	}
	dir := t.TempDir()
	png := filepath.Join(dir, "fig7.png")
	if err := Plot(png, l); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 10_000 {
		t.Fatalf("figure 7: %v %v", st, err)
	}
	if s := Section(l); len(s) < 500 {
		t.Fatalf("REPORT section: %q", s)
	}
}

// TestBaselineSection: a row holds when both percentiles are at most 10% above the baseline's.
// flush every message: p50 2.0 against 1.8 is 2.0/1.8 = 1.11, above 1.10: no; every 100: p50 1.9/1.8 = 1.06
// and p99 5.0/6.0 = 0.83: yes.
func TestBaselineSection(t *testing.T) {
	s := Settings()
	l := &Result{BaselineProps: "produce.coalesce.max.us=0",
		Settings: []SettingResult{{Setting: s[0], P50Ms: 2.0, P99Ms: 5.0}, {Setting: s[1], P50Ms: 1.9, P99Ms: 5.0}},
		Baseline: []SettingResult{{Setting: s[0], P50Ms: 1.8, P99Ms: 6.0}, {Setting: s[1], P50Ms: 1.8, P99Ms: 6.0}}}
	got := Section(l)
	for _, want := range []string{
		"with `produce.coalesce.max.us=0` over each",
		"| log.flush.interval=1 | 1.8 | 2.0 | 1.11 | 6.0 | 5.0 | 0.83 | no |\n",
		"| log.flush.interval=100 | 1.8 | 1.9 | 1.06 | 6.0 | 5.0 | 0.83 | yes |\n",
		"1 of 2 settings hold on both percentiles",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the section lacks %q:\n%s", want, got)
		}
	}
	if Within10(1.1001, 1) || !Within10(1.1, 1) || !Within10(0.5, 1) {
		t.Error("Within10: want 1.1 × the baseline to hold and anything above it not")
	}
	if strings.Contains(Section(&Result{Settings: l.Settings}), "baseline") {
		t.Error("a run without a baseline shows its table")
	}
}

// A baseline's producer: keys go to both producers, without the prefix and
// over Config.Producer; the rest start the broker.
func TestSplitProducer(t *testing.T) {
	broker, prod := SplitProducer(map[string]string{
		"produce.coalesce.max.us":       "0",
		"producer:socket.nagle.disable": "true",
	}, map[string]string{"buffer.size": "65536", "socket.nagle.disable": "false"})
	if len(broker) != 1 || broker["produce.coalesce.max.us"] != "0" {
		t.Errorf("broker settings %v, want produce.coalesce.max.us=0 alone", broker)
	}
	if len(prod) != 2 || prod["socket.nagle.disable"] != "true" || prod["buffer.size"] != "65536" {
		t.Errorf("producer properties %v, want socket.nagle.disable=true over the base, buffer.size kept", prod)
	}
	if _, p := SplitProducer(map[string]string{"log.flush.interval": "1"}, nil); p != nil {
		t.Errorf("no producer key and no base: %v, want nil (the defaults)", p)
	}
}

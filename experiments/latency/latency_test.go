package latency

import (
	"context"
	"os"
	"path/filepath"
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
	l, err := Run(context.Background(), Config{Rate: 2000, Duration: time.Second, Unpaced: 2000, Size: 200,
		Start: func(ctx context.Context, props map[string]string) (string, string, func() error, error) {
			b := brokertest.Start(t, 0, brokertest.Options{Props: props})
			return b.HostPort(), "brokertest with " + props["log.flush.interval"] + "/" + props["log.default.flush.interval.ms"], func() error { return nil }, nil
		},
		Progress: func(s string) { t.Log(s) }, Settings: fast})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Settings) != 3 || len(fast) != 3 {
		t.Fatalf("%d settings measured, want 3 (flushes every 1 and 100 messages, every 100 ms)", len(l.Settings))
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

package experiments

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"
)

func TestPlotsAreRealPNGs(t *testing.T) {
	dir := t.TempDir()
	tests := []TestResult{
		{System: "kafka", Test: "producer", Batch: 1, MsgPerS: 50000, Series: []Point{{0.25, 2.5, 50000}, {0.5, 5, 52000}}},
		{System: "kafka", Test: "producer", Batch: 50, MsgPerS: 400000, Series: []Point{{0.25, 20, 400000}}},
		{System: "activemq", Test: "producer", Batch: 1, MsgPerS: 1000, Series: []Point{{1, 0.2, 1000}, {2, 0.4, 0}, {3, 0.6, 1100}}, Error: "died"},
	}
	p := filepath.Join(dir, "f.png")
	if err := PlotThroughput(p, "Producer", tests); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, p)
	empty := filepath.Join(dir, "empty.png")
	if err := PlotThroughput(empty, "nothing", nil); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, empty)
	s := &Summary{MessageSize: 200, Systems: []SystemReport{
		{Name: "kafka", Storage: []Storage{{Messages: 10, BytesPerMessage: 209, OverheadBytes: 9}}},
		{Name: "activemq", Storage: []Storage{{Messages: 10, BytesPerMessage: 350, OverheadBytes: 150}}},
	}}
	sp := filepath.Join(dir, "s.png")
	if err := PlotStorage(sp, s, nil); err != nil {
		t.Fatal(err)
	}
	checkPNG(t, sp)
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", path, err)
	}
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("%s: %v is too small", path, b)
	}
}

func TestLogTicksAndCommas(t *testing.T) {
	ticks := logTicks{labelAll: true}.Ticks(1000, 500000)
	labels := map[string]bool{}
	for _, tk := range ticks {
		if tk.Label != "" {
			labels[tk.Label] = true
		}
	}
	for _, want := range []string{"1,000", "2,000", "5,000", "100,000", "500,000"} {
		if !labels[want] {
			t.Errorf("tick %s missing from %v", want, labels)
		}
	}
	if commas(1234567.4) != "1,234,567" || commas(999) != "999" {
		t.Errorf("commas: %s %s", commas(1234567.4), commas(999))
	}
}

func TestProgressPlainLines(t *testing.T) {
	var b bytes.Buffer
	p := NewProgress(&b)
	p.Begin("kafka producer", 100)
	p.lastPlain = p.lastPlain.Add(-time.Minute) // due for a plain line
	p.Update(50, 1000)
	p.End("done")
	out := b.String()
	if !strings.Contains(out, "kafka producer: started") || !strings.Contains(out, "50/100") ||
		!strings.Contains(out, "50.0%") || !strings.Contains(out, "kafka producer: done") || strings.Contains(out, "\r") {
		t.Errorf("progress output:\n%s", out)
	}
}

// Bursty counting (0, 2r, 0, 2r, ...) is drawn at its true rate r, and a
// stall stays visible.
func TestSmoothBursts(t *testing.T) {
	tr := TestResult{Msgs: 40_000, MBSent: 8} // 200 bytes per message
	for i := 1; i <= 40; i++ {
		rate := 0.0
		if i%2 == 0 {
			rate = 8000
		}
		tr.Series = append(tr.Series, Point{Seconds: float64(i) * 0.25, MB: float64(i/2) * 0.4, MsgPerS: rate})
	}
	xys := smooth(tr)
	if len(xys) != 40 {
		t.Fatalf("%d points, want 40", len(xys))
	}
	for _, xy := range xys[8:] {
		if xy.Y < 3000 || xy.Y > 5000 {
			t.Errorf("smoothed rate %.0f at %.1f MB, want about 4000", xy.Y, xy.X)
		}
	}
}

// A window with no progress becomes a stall mark, not a line point; the
// windows after everything was sent (a producer waiting for the server)
// end the line.
func TestSplitStallsAndEnd(t *testing.T) {
	xys := plotter.XYs{{X: 1, Y: 100}, {X: 2, Y: 120}, {X: 2, Y: 0}, {X: 3, Y: 90}, {X: 4, Y: 80}, {X: 4, Y: 0}, {X: 4, Y: 5}}
	segs, stalls := split(xys, 4)
	if len(segs) != 2 || len(segs[0]) != 2 || len(segs[1]) != 2 || segs[1][1].X != 4 {
		t.Errorf("segments = %v", segs)
	}
	if len(stalls) != 1 || stalls[0].X != 2 {
		t.Errorf("stalls = %v, want one at 2 MB", stalls)
	}
}

func TestFigureSizeAndCaption(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f.png")
	tests := []TestResult{{System: "kafka", Test: "producer", Batch: 50, Msgs: 1000, MBSent: 0.2, MsgPerS: 500,
		SendSeconds: 0.5, SendMsgPerS: 2000, Seconds: 2, Series: []Point{{0.25, 0.1, 2000}, {0.5, 0.2, 2000}}}}
	if err := PlotThroughput(p, "Producer", tests); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 1350 || b.Dy() != 825 {
		t.Errorf("figure is %v, want 1350x825 (9x5.5 in at 150 dpi)", b)
	}
	c := throughputCaption(tests, true)
	if !strings.Contains(c, "2,000 msg/s") || !strings.Contains(c, "500 msg/s until stored") || !strings.Contains(c, "waited 1.50 s") {
		t.Errorf("caption does not give both rates: %s", c)
	}
	if got := wrap(newSideLegend().TextStyle, "a b c", 1); len(got) != 3 {
		t.Errorf("wrap = %q, want one word a line", got)
	}
}

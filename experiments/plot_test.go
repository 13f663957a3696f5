package experiments

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/plotter"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
)

func TestPlotsAreRealPNGs(t *testing.T) {
	dir := t.TempDir()
	tests := []measure.Result{
		{System: "kafka", Test: "producer", Batch: 1, MsgPerS: 50000, Series: []measure.Point{{Seconds: 0.25, MB: 2.5, MsgPerS: 50000}, {Seconds: 0.5, MB: 5, MsgPerS: 52000}}},
		{System: "kafka", Test: "producer", Batch: 50, MsgPerS: 400000, Series: []measure.Point{{Seconds: 0.25, MB: 20, MsgPerS: 400000}}},
		{System: "activemq", Test: "producer", Batch: 1, MsgPerS: 1000, Series: []measure.Point{{Seconds: 1, MB: 0.2, MsgPerS: 1000}, {Seconds: 2, MB: 0.4, MsgPerS: 0}, {Seconds: 3, MB: 0.6, MsgPerS: 1100}}, Error: "died"},
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

// decodePNG reads the PNG at path.
func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", path, err)
	}
	return img
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	img := decodePNG(t, path)
	if b := img.Bounds(); b.Dx() < 300 || b.Dy() < 200 {
		t.Errorf("%s: %v is too small", path, b)
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
	tr := measure.Result{Msgs: 40_000, MBSent: 8} // 200 bytes per message
	for i := 1; i <= 40; i++ {
		rate := 0.0
		if i%2 == 0 {
			rate = 8000
		}
		tr.Series = append(tr.Series, measure.Point{Seconds: float64(i) * 0.25, MB: float64(i/2) * 0.4, MsgPerS: rate})
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
	tests := []measure.Result{{System: "kafka", Test: "producer", Batch: 50, Msgs: 1000, MBSent: 0.2, MsgPerS: 500,
		SendSeconds: 0.5, SendMsgPerS: 2000, Seconds: 2, Series: []measure.Point{{Seconds: 0.25, MB: 0.1, MsgPerS: 2000}, {Seconds: 0.5, MB: 0.2, MsgPerS: 2000}}}}
	if err := PlotThroughput(p, "Producer", tests); err != nil {
		t.Fatal(err)
	}
	if b := decodePNG(t, p).Bounds(); b.Dx() != 1350 || b.Dy() != 825 {
		t.Errorf("figure is %v, want 1350x825 (9x5.5 in at 150 dpi)", b)
	}
	c := throughputCaption(tests, true)
	if !strings.Contains(c, "2,000 msg/s") || !strings.Contains(c, "500 msg/s until stored") || !strings.Contains(c, "waited 1.50 s") {
		t.Errorf("caption does not give both rates: %s", c)
	}
	if got := figure.Wrap(figure.NewSideLegend().TextStyle, "a b c", 1); len(got) != 3 {
		t.Errorf("wrap = %q, want one word a line", got)
	}
}

// Every figure draws a system in its one colour (SystemColor), whichever
// other systems it shows and in whatever order: figure 4 with ActiveMQ
// first, figure 5 with it last, and the storage bars. A system that is not
// in a figure leaves no pixel of its colour there.
func TestOneColourPerSystemInEveryFigure(t *testing.T) {
	dir := t.TempDir()
	series := func(rate float64) []measure.Point {
		var pts []measure.Point
		for i := 1; i <= 40; i++ {
			pts = append(pts, measure.Point{Seconds: float64(i) * 0.25, MB: float64(i) * 0.5, MsgPerS: rate})
		}
		return pts
	}
	test := func(system, kind string, batch int, rate float64) measure.Result {
		return measure.Result{System: system, Test: kind, Batch: batch, Msgs: 100_000, MBSent: 20, Seconds: 10, MsgPerS: rate, Series: series(rate)}
	}
	fig4 := filepath.Join(dir, "fig4.png")
	if err := PlotThroughput(fig4, "Producer", []measure.Result{test("activemq", "producer", 1, 15000), test("kafka", "producer", 1, 300000),
		test("kafka", "producer", 50, 2000000), test("rabbitmq", "producer", 1, 20000)}); err != nil {
		t.Fatal(err)
	}
	fig5 := filepath.Join(dir, "fig5.png")
	if err := PlotThroughput(fig5, "Consumer", []measure.Result{test("kafka", "consumer", 0, 5000000), test("rabbitmq", "consumer", 0, 28000),
		test("activemq", "consumer", 0, 12000)}); err != nil {
		t.Fatal(err)
	}
	onlyTwo := filepath.Join(dir, "two.png")
	if err := PlotThroughput(onlyTwo, "Consumer", []measure.Result{test("rabbitmq", "consumer", 0, 28000), test("kafka", "consumer", 0, 5000000)}); err != nil {
		t.Fatal(err)
	}
	storage := filepath.Join(dir, "storage.png")
	s := &Summary{MessageSize: 200, Messages: 100_000, Systems: []SystemReport{
		{Name: "rabbitmq", Storage: []Storage{{Messages: 10, BytesPerMessage: 404, OverheadBytes: 204}}},
		{Name: "kafka", Storage: []Storage{{Messages: 10, BytesPerMessage: 209, OverheadBytes: 9}}},
		{Name: "activemq", Storage: []Storage{{Messages: 10, BytesPerMessage: 780, OverheadBytes: 580}}},
	}}
	if err := PlotStorage(storage, s, nil); err != nil {
		t.Fatal(err)
	}
	for _, fig := range []struct {
		path string
		in   []string
		out  []string
	}{
		{fig4, []string{"kafka", "activemq", "rabbitmq"}, nil},
		{fig5, []string{"kafka", "activemq", "rabbitmq"}, nil},
		{onlyTwo, []string{"kafka", "rabbitmq"}, []string{"activemq"}},
		{storage, []string{"kafka", "activemq", "rabbitmq"}, nil},
	} {
		counts := colourCounts(t, fig.path)
		for _, sys := range fig.in {
			if n := counts[figure.SystemColor(sys)]; n < 50 {
				t.Errorf("%s: %d pixels of %s's colour %v, want its lines or bar", filepath.Base(fig.path), n, sys, figure.SystemColor(sys))
			}
		}
		for _, sys := range fig.out {
			if n := counts[figure.SystemColor(sys)]; n != 0 {
				t.Errorf("%s: %d pixels of %s's colour, but %s is not in it", filepath.Base(fig.path), n, sys, sys)
			}
		}
	}
	// The palette gives distinct colours, and an unknown system a stable one.
	seen := map[color.RGBA]string{}
	for _, sys := range []string{"kafka", "activemq", "rabbitmq"} {
		if other, dup := seen[figure.SystemColor(sys)]; dup {
			t.Errorf("%s and %s share a colour", sys, other)
		}
		seen[figure.SystemColor(sys)] = sys
	}
	if figure.SystemColor("zeromq") != figure.SystemColor("zeromq") {
		t.Error("an unknown system's colour changes")
	}
	if _, clash := seen[figure.SystemColor("zeromq")]; clash {
		t.Error("an unknown system takes a known system's colour")
	}
}

// colourCounts counts the pixels of each exact colour of a PNG.
func colourCounts(t *testing.T, path string) map[color.RGBA]int {
	t.Helper()
	img := decodePNG(t, path)
	counts := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	return counts
}

// No figure of the run (this package's and the further experiments')
// takes a colour by position (gonum's plotutil.Color(i)): a colour comes
// from SystemColor.
func TestNoColourByPosition(t *testing.T) {
	var files []string
	for _, dir := range []string{".", "compression", "latency", "replication", "figure"} {
		fs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(fs) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, f := range fs {
			if !strings.HasSuffix(f, "_test.go") {
				files = append(files, f)
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), "plotutil.Color") {
			t.Errorf("%s picks a colour by position (plotutil.Color); use SystemColor", f)
		}
	}
}

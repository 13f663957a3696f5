package replication

import (
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
)

// Figure 6 has one bar per mode, each in the mode's own colour, and no
// file when the experiment did not run.
func TestPlotOneBarPerModeInItsColour(t *testing.T) {
	dir := t.TempDir()
	r := &Result{Messages: 100_000, MessageSize: 200, Batch: Batch, Cores: 2}
	for i, m := range Modes() {
		x := ModeResult{Mode: m, Ratio: 1 / float64(i+1)}
		if m.Acks != 0 {
			x.P50Ms, x.P99Ms = 2, 9
		}
		r.Results = append(r.Results, x)
	}
	r.Results[2].Error = "broker 1 died" // a failed mode draws no bar
	path := filepath.Join(dir, "fig6.png")
	if err := Plot(path, r); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	seen := map[color.RGBA]string{}
	for i, x := range r.Results {
		c := figure.SystemColor(x.Mode.Name)
		if other, dup := seen[c]; dup {
			t.Errorf("%q and %q share a colour", x.Mode.Name, other)
		}
		seen[c] = x.Mode.Name
		// The legend's swatch alone is about 1,000 pixels; the smallest bar here about 10,000.
		n := counts[c]
		switch {
		case i == 2 && n > 1500:
			t.Errorf("the failed mode %q has %d pixels of its colour, want only its legend swatch", x.Mode.Name, n)
		case i != 2 && n < 5000:
			t.Errorf("mode %q: %d pixels of its colour %v, want its bar", x.Mode.Name, n, c)
		}
	}

	none := filepath.Join(dir, "none.png")
	if err := Plot(none, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("a run without the experiment drew %s (stat: %v)", none, err)
	}
}

package latency

import (
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/figure"
)

// Plot draws figure 7: send → receipt delay (ms, log scale) at
// each flush setting, one line per percentile (p50, p99, p99.9, max), the
// settings along the x axis with the unpaced producer's rate under each.
// Nothing is drawn when the experiment did not run.
func Plot(path string, l *Result) error {
	if l == nil || len(l.Settings) == 0 {
		return nil
	}
	p := figure.NewPlot("§3.1: the flush trade-off (figure 7)", "flush setting (unpaced batch-1 producer's msg/s under it)")
	p.Add(plotter.NewGrid())
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = figure.LogTicks{LabelAll: true}
	leg := figure.NewSideLegend()
	lo, hi := math.Inf(1), 0.0
	series := []struct {
		name string
		v    func(SettingResult) float64
	}{
		{"p50", func(r SettingResult) float64 { return r.P50Ms }},
		{"p99", func(r SettingResult) float64 { return r.P99Ms }},
		{"p99.9", func(r SettingResult) float64 { return r.P999Ms }},
		{"max", func(r SettingResult) float64 { return r.MaxMs }},
	}
	var ticks []plot.Tick
	for i, r := range l.Settings {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: fmt.Sprintf("%s\n(%s msg/s)", shortSetting(r.Setting), figure.Commas(r.UnpacedMsgPerS))})
	}
	for si, s := range series {
		var xys plotter.XYs
		for i, r := range l.Settings {
			if v := s.v(r); v > 0 && r.Error == "" {
				xys = append(xys, plotter.XY{X: float64(i), Y: v})
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		if len(xys) == 0 {
			continue
		}
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("experiments: plot %s: %w", path, err)
		}
		// All Kafka: its colour in every figure; the percentiles differ by mark and dash.
		line.Color, line.Width, line.Dashes = figure.SystemColor(compare.Ours), vg.Points(1.5), plotutil.Dashes(si)
		pts.Color, pts.Shape, pts.Radius = figure.SystemColor(compare.Ours), plotutil.Shape(si), vg.Points(3.5)
		p.Add(line, pts)
		leg.Add(s.name, line, pts)
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	p.Y.Min = math.Pow(10, math.Floor(math.Log10(lo/1.5)))
	p.Y.Max = math.Pow(10, math.Ceil(math.Log10(hi*1.5)))
	p.X.Min, p.X.Max = -0.5, float64(len(l.Settings))-0.5
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	caption := fmt.Sprintf("Delay from the producer's send to the consumer's receipt, CRC checked: %s messages/s of %d bytes, one per request, %.0f s per setting or five flush periods if longer, one broker per setting; the consumer polls every 1 ms when caught up. "+
		"A message is visible only after the broker flushes it (§3.1): after log.flush.interval messages or log.default.flush.interval.ms, whichever comes first (the count settings keep the 3,000 ms timer; the timer settings flush on time alone).",
		figure.Commas(float64(l.Rate)), l.Size, l.Seconds)
	return figure.Figure{Plot: p, YLabel: "send → receipt (ms, log scale)", Legend: leg, Caption: caption}.Save(path)
}

// shortSetting is a setting's tick label.
func shortSetting(s Setting) string {
	if s.FlushInterval == NoCountFlush {
		return fmt.Sprintf("every %s ms", figure.Commas(float64(s.FlushIntervalMs)))
	}
	if s.FlushInterval == 1 {
		return "every message"
	}
	return fmt.Sprintf("every %s msgs", figure.Commas(float64(s.FlushInterval)))
}

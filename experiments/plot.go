package experiments

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"kafkarepro/paper"
)

// PlotThroughput draws figure 4 or 5: throughput (msg/s) against MB sent,
// one line per system and batch size. The y axis is logarithmic so that a
// system three orders of magnitude slower still shows. Each line is the
// rate over a moving window of about a second (see smooth), and an
// interval in which nothing moved is drawn at the bottom of the axis, not
// left out.
func PlotThroughput(path, title string, tests []TestResult) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "data sent so far (MB, 10^6 bytes of payload)"
	p.Y.Label.Text = "throughput (messages/s, log scale, moving window >= 1 s)"
	p.Y.Scale = plot.LogScale{}
	p.Legend.Top = true
	p.Legend.Left = false
	p.Add(plotter.NewGrid())
	lines := make([]plotter.XYs, len(tests))
	lo, hi := math.Inf(1), 0.0
	for i, t := range tests {
		lines[i] = smooth(t)
		for _, xy := range lines[i] {
			if xy.Y > 0 {
				lo, hi = math.Min(lo, xy.Y), math.Max(hi, xy.Y)
			}
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	// Whole decades around the data, at most five of them (the legend sits
	// above the data area).
	top := math.Pow(10, math.Ceil(math.Log10(hi*1.5)))
	floor := math.Max(math.Pow(10, math.Floor(math.Log10(lo))), top/1e5)
	p.Y.Min, p.Y.Max = floor, top
	p.Y.Tick.Marker = logTicks{labelAll: top/floor <= 1e3}
	p.X.Min = 0
	for i, t := range tests {
		xys := lines[i]
		if len(xys) == 0 {
			continue
		}
		for j := range xys {
			xys[j].Y = math.Max(xys[j].Y, floor) // a stall shows as a drop to the floor
		}
		label := fmt.Sprintf("%s: avg %s msg/s", t.Label(), commas(t.MsgPerS))
		if t.Error != "" {
			label += " (FAILED)"
		}
		if len(xys) == 1 { // a single sample: draw a short flat line
			xys = append(xys, plotter.XY{X: xys[0].X * 1.001, Y: xys[0].Y})
		}
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("experiments: plot %s line %s: %w", path, label, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		l.Dashes = plotutil.Dashes(i)
		p.Add(l)
		p.Legend.Add(label, l)
	}
	if err := p.Save(8*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("experiments: save %s: %w", path, err)
	}
	return nil
}

// smooth turns a test's samples into the plotted line: at each sample, the
// rate over a window of earlier samples. Adapters count in bursts (a whole
// buffered write of thousands of messages), so single 250 ms intervals
// alternate between 0 and several times the rate; on a log scale the zeros
// would vanish and the line would show only the bursts. The window is at
// least a second and three times the mean gap between bursts, and at most
// a twentieth of the test, so a short test keeps its shape.
func smooth(t TestResult) plotter.XYs {
	if len(t.Series) == 0 || t.MBSent <= 0 || t.Msgs <= 0 {
		return nil
	}
	msgPerMB := float64(t.Msgs) / t.MBSent
	last := t.Series[len(t.Series)-1].Seconds
	bursts := 0
	for _, pt := range t.Series {
		if pt.MsgPerS > 0 {
			bursts++
		}
	}
	window := 1.0
	if bursts > 0 {
		window = math.Max(window, 3*last/float64(bursts))
	}
	window = math.Min(window, last/20)
	out := make(plotter.XYs, 0, len(t.Series))
	j, prevMB, prevS := -1, 0.0, 0.0 // j: the sample the window starts after (-1: the test's start)
	for i, pt := range t.Series {
		for j+1 < i && pt.Seconds-t.Series[j+1].Seconds >= window {
			j++
		}
		if j >= 0 {
			prevMB, prevS = t.Series[j].MB, t.Series[j].Seconds
		}
		if dt := pt.Seconds - prevS; dt > 0 {
			out = append(out, plotter.XY{X: pt.MB, Y: (pt.MB - prevMB) * msgPerMB / dt})
		}
	}
	return out
}

// PlotStorage draws the bytes each system keeps on disk per message beyond
// the payload, beside the paper's 9 (Kafka) and 144 (ActiveMQ). Kafka and
// ActiveMQ always appear, so the paper's two numbers are marked even when a
// system was not measured; each bar's value is written under its name.
func PlotStorage(path string, s *Summary, fig *paper.Figures) error {
	names := []string{"kafka", "activemq"}
	got := map[string]float64{}
	for _, r := range s.Systems {
		if st, ok := r.MainStorage(); ok {
			got[r.Name] = math.Max(st.OverheadBytes, 0)
			if !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
	}
	var measured, paperVals plotter.Values
	var ticks []string
	for _, n := range names {
		m, ok := got[n]
		pv := 0.0
		if fig != nil {
			pv, _ = fig.OverheadBytes(n)
		}
		measured, paperVals = append(measured, m), append(paperVals, pv)
		label := n + "\nthis run: "
		if ok {
			label += strconv.FormatFloat(m, 'f', 1, 64)
		} else {
			label += "not measured"
		}
		if pv > 0 {
			label += "\npaper: " + strconv.FormatFloat(pv, 'f', 0, 64)
		}
		ticks = append(ticks, label)
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Storage overhead per %d-byte message on disk", s.MessageSize)
	p.Y.Label.Text = "bytes per message beyond the payload"
	p.Add(plotter.NewGrid())
	w := vg.Points(40)
	mb, err := plotter.NewBarChart(measured, w)
	if err != nil {
		return fmt.Errorf("experiments: plot %s: %w", path, err)
	}
	mb.Color = plotutil.Color(0)
	mb.Offset = -w / 2
	pb, err := plotter.NewBarChart(paperVals, w)
	if err != nil {
		return fmt.Errorf("experiments: plot %s: %w", path, err)
	}
	pb.Color = color.RGBA{R: 190, G: 190, B: 190, A: 255}
	pb.Offset = w / 2
	p.Add(mb, pb)
	p.Legend.Add("this run", mb)
	p.Legend.Add("paper §5 (Kafka 9, ActiveMQ 144)", pb)
	p.Legend.Top = true
	p.Legend.Left = true
	p.NominalX(ticks...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Min = 0
	p.Y.Max = math.Max(floats(measured), floats(paperVals))*1.3 + 1
	if err := p.Save(7*vg.Inch, 4.5*vg.Inch, path); err != nil {
		return fmt.Errorf("experiments: save %s: %w", path, err)
	}
	return nil
}

func floats(v plotter.Values) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, x)
	}
	return m
}

// logTicks marks 1..9 times each power of ten and labels the powers of
// ten, and also 2 and 5 times them when labelAll is set (a range of a few
// decades, where a range inside one decade would otherwise have no label).
type logTicks struct{ labelAll bool }

func (lt logTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (lt.labelAll && (m == 2 || m == 5)) {
				t.Label = commas(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// commas formats a rate as an integer with thousands separators: 400,000.
func commas(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

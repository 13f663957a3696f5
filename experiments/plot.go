package experiments

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
)

// PlotThroughput draws figure 4 or 5: throughput (msg/s) against MB sent,
// one solid line per system and batch size, as in the paper, in the
// system's colour (SystemColor); a batch other than 1 carries marks along
// its line (batchGlyph). The y axis is
// logarithmic so that a system three orders of magnitude slower still
// shows. Each line is the rate over a moving window (see smooth); a window
// in which nothing moved is marked with a cross on the bottom of the axis
// instead of pulling the line down, and the wait after the last message
// left a producer (until the server holds everything) is not a line point:
// it is in the dashed average of each test, and the caption says how long
// it was. Each limit (the link's ceiling for our messages, when the run
// went over one) is a dotted line across the figure.
func PlotThroughput(path, title string, tests []measure.Result, limits ...Limit) error {
	return plotThroughput(path, title, "", tests, limits...)
}

// plotThroughput is PlotThroughput with another caption ("" for figure 4's or 5's).
func plotThroughput(path, title, caption string, tests []measure.Result, limits ...Limit) error {
	producer := len(tests) > 0 && tests[0].Test == "producer"
	xLabel := "data read so far (MB of payload, 10^6 bytes)"
	if producer {
		xLabel = "data sent so far (MB of payload, 10^6 bytes)"
	}
	p := figure.NewPlot(title, xLabel)
	p.Add(plotter.NewGrid())
	p.X.Min = 0
	leg := figure.NewSideLegend()

	lines := make([][]plotter.XYs, len(tests))
	stalls := make([]plotter.XYs, len(tests))
	lo, hi := math.Inf(1), 0.0
	note := func(v float64) {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for i, t := range tests {
		lines[i], stalls[i] = split(smooth(t), t.MBSent)
		for _, seg := range lines[i] {
			for _, xy := range seg {
				note(xy.Y)
			}
		}
		note(t.MsgPerS)
	}
	maxX := 0.0
	for _, t := range tests {
		maxX = math.Max(maxX, t.MBSent)
	}
	for _, l := range limits {
		note(l.MsgPerS)
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	// Whole decades around the data (at most six), so every system shows.
	top := math.Pow(10, math.Ceil(math.Log10(hi*1.5)))
	floor := math.Max(math.Pow(10, math.Floor(math.Log10(lo/1.5))), top/1e6)
	p.Y.Scale = plot.LogScale{}
	p.Y.Min, p.Y.Max = floor, top
	p.Y.Tick.Marker = figure.LogTicks{LabelAll: top/floor <= 1e3}

	anyStall := false
	for i, t := range tests {
		col := figure.SystemColor(t.System)
		shape, marked := figure.BatchGlyph(t.Batch)
		var thumb []plot.Thumbnailer
		for _, seg := range lines[i] {
			for j := range seg {
				seg[j].Y = math.Max(seg[j].Y, floor)
			}
			if len(seg) == 1 { // a single sample: a short flat line
				seg = append(seg, plotter.XY{X: seg[0].X + 0.002*math.Max(t.MBSent, 1), Y: seg[0].Y})
			}
			l, err := plotter.NewLine(seg)
			if err != nil {
				return fmt.Errorf("experiments: plot %s line %s: %w", path, t.Label(), err)
			}
			l.Color, l.Width = col, vg.Points(2)
			p.Add(l)
			thumb = []plot.Thumbnailer{l}
		}
		if marked && len(thumb) > 0 {
			sc, err := plotter.NewScatter(marks(lines[i], 12))
			if err != nil {
				return fmt.Errorf("experiments: plot %s marks of %s: %w", path, t.Label(), err)
			}
			sc.GlyphStyle = figure.GlyphStyle(col, shape)
			p.Add(sc)
			thumb = append(thumb, sc)
		}
		if t.MsgPerS > 0 && t.MBSent > 0 {
			avg, err := plotter.NewLine(plotter.XYs{{X: 0, Y: t.MsgPerS}, {X: t.MBSent, Y: t.MsgPerS}})
			if err != nil {
				return fmt.Errorf("experiments: plot %s average of %s: %w", path, t.Label(), err)
			}
			avg.Color, avg.Width, avg.Dashes = col, vg.Points(1), []vg.Length{vg.Points(6), vg.Points(4)}
			p.Add(avg)
			if marked { // the batch's marks on its average too, at both ends
				sc, err := plotter.NewScatter(plotter.XYs{{X: 0.04 * t.MBSent, Y: t.MsgPerS}, {X: 0.96 * t.MBSent, Y: t.MsgPerS}})
				if err != nil {
					return fmt.Errorf("experiments: plot %s average of %s: %w", path, t.Label(), err)
				}
				sc.GlyphStyle = figure.GlyphStyle(col, shape)
				p.Add(sc)
			}
			if thumb == nil {
				thumb = []plot.Thumbnailer{avg}
			}
		}
		if len(stalls[i]) > 0 {
			anyStall = true
			for j := range stalls[i] {
				stalls[i][j].Y = floor * math.Pow(top/floor, 0.02)
			}
			sc, err := plotter.NewScatter(stalls[i])
			if err != nil {
				return fmt.Errorf("experiments: plot %s stalls of %s: %w", path, t.Label(), err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}
			p.Add(sc)
		}
		addLegend(&leg, t, thumb, producer)
	}
	if len(tests) > 0 {
		leg.Add("")
		avg, _ := plotter.NewLine(plotter.XYs{{X: 0, Y: 1}, {X: 1, Y: 1}})
		avg.Color, avg.Width, avg.Dashes = color.Gray{Y: 90}, vg.Points(1), []vg.Length{vg.Points(6), vg.Points(4)}
		leg.Add("dashed: the test's average", avg)
		if anyStall {
			sc, _ := plotter.NewScatter(plotter.XYs{{X: 0, Y: 1}})
			sc.GlyphStyle = draw.GlyphStyle{Color: color.Gray{Y: 90}, Radius: vg.Points(4), Shape: draw.CrossGlyph{}}
			leg.Add("nothing moved in a window", sc)
		}
	}
	if err := addLimits(p, &leg, limits, maxX); err != nil {
		return err
	}
	if caption == "" {
		caption = throughputCaption(tests, producer)
	}
	return figure.Figure{Plot: p, YLabel: "throughput (messages/s, log scale)", Legend: leg, Caption: caption + limitsCaption(limits)}.Save(path)
}

// addLegend adds a test's entries: its name with the line, then its
// averages. A producer's average runs until the server holds every
// message; when the client alone was much faster (our batch-50 producer
// waits for the broker's last flush), both rates are given.
func addLegend(leg *plot.Legend, t measure.Result, thumb []plot.Thumbnailer, producer bool) {
	name := t.Label()
	if t.Error != "" {
		name += " (FAILED)"
	}
	if len(thumb) > 0 {
		leg.Add(name, thumb...)
	} else {
		leg.Add(name + " (no data)")
	}
	if t.Error != "" {
		leg.Add(fmt.Sprintf("    %s msg/s until it failed", figure.Commas(t.MsgPerS)))
		return
	}
	if !producer {
		leg.Add(fmt.Sprintf("    avg %s msg/s", figure.Commas(t.MsgPerS)))
		return
	}
	leg.Add(fmt.Sprintf("    avg %s msg/s until stored", figure.Commas(t.MsgPerS)))
	if clientMuchFaster(t) {
		leg.Add(fmt.Sprintf("    client sent %s msg/s", figure.Commas(t.SendMsgPerS)))
	}
}

// clientMuchFaster reports whether a producer's client finished sending
// well before the server held every message (its rate a quarter higher).
func clientMuchFaster(t measure.Result) bool {
	return t.OK() && t.SendMsgPerS > 1.25*t.MsgPerS
}

// throughputCaption says what the lines of figure 4 or 5 are.
func throughputCaption(tests []measure.Result, producer bool) string {
	var b strings.Builder
	if producer {
		b.WriteString("Solid: messages leaving the producer client per second against the payload sent so far (paper figure 4)")
	} else {
		b.WriteString("Solid: messages reaching the consumer application per second against the payload read so far (paper figure 5)")
	}
	b.WriteString(", over a moving window of at least 1 s (1/20 of a test shorter than 20 s). ")
	if producer {
		b.WriteString("Dashed: each test's average, timed until the server holds every message (ours: until the broker has flushed and exposes the last one).")
	} else {
		b.WriteString("Dashed: each test's average, from the subscription to the last message.")
	}
	b.WriteString(" Each system has one colour, the same in every figure")
	var marked []string
	for _, t := range tests {
		if shape, ok := figure.BatchGlyph(t.Batch); ok && !slices.Contains(marked, fmt.Sprint(t.Batch)) {
			name := "squares"
			if _, tri := shape.(draw.TriangleGlyph); tri {
				name = "triangles"
			}
			marked = append(marked, fmt.Sprint(t.Batch))
			fmt.Fprintf(&b, "; %s mark a batch of %d", name, t.Batch)
		}
	}
	b.WriteString(".")
	var short []string
	for _, t := range tests {
		if n := len(t.Series); t.Seconds > 0 && t.Seconds < 1 && n > 0 {
			short = append(short, fmt.Sprintf("%s %.2f s, %d samples", t.Label(), t.Seconds, n))
		}
	}
	if len(short) > 0 {
		fmt.Fprintf(&b, " Tests under a second have few samples (%s).", strings.Join(short, "; "))
	}
	for _, t := range tests {
		if producer && clientMuchFaster(t) {
			fmt.Fprintf(&b, " %s: the client sent all %s messages in %.2f s (%s msg/s), then waited %.2f s for the server to store them (final flush), hence %s msg/s until stored.",
				t.Label(), figure.Commas(float64(t.Msgs)), t.SendSeconds, figure.Commas(t.SendMsgPerS), t.Seconds-t.SendSeconds, figure.Commas(t.MsgPerS))
		}
	}
	return b.String()
}

// marks picks about n points spread evenly over a test's line segments,
// where its batch's glyphs are drawn.
func marks(segs []plotter.XYs, n int) plotter.XYs {
	total := 0
	for _, seg := range segs {
		total += len(seg)
	}
	step := max(1, total/n)
	var out plotter.XYs
	k := step / 2
	for _, seg := range segs {
		for _, xy := range seg {
			if k%step == 0 {
				out = append(out, xy)
			}
			k++
		}
	}
	return out
}

// split cuts a smoothed line where the rate is zero: the parts with
// progress are drawn as lines, and a zero window (a stall) becomes a mark
// at its x. The line ends at the first point where everything was sent:
// later windows are a producer's wait for the server, in its average.
func split(xys plotter.XYs, totalMB float64) (segs []plotter.XYs, stalls plotter.XYs) {
	var cur plotter.XYs
	for i, xy := range xys {
		if i > 0 && xys[i-1].X >= totalMB*(1-1e-9) {
			break
		}
		if xy.Y > 0 {
			cur = append(cur, xy)
			continue
		}
		if len(cur) > 0 {
			segs, cur = append(segs, cur), nil
		}
		stalls = append(stalls, xy)
	}
	if len(cur) > 0 {
		segs = append(segs, cur)
	}
	return segs, stalls
}

// smooth turns a test's samples into the plotted line: at each sample, the
// rate over a window of earlier samples. The adapters count every message,
// but ActiveMQ and RabbitMQ hold their producer back in bursts (flow
// control, journal writes), so single 250 ms intervals alternate between 0
// and several times the rate; on a log scale the zeros would vanish and
// the line would show only the bursts. The window is at least a second and
// three times the mean gap between bursts, and at most a twentieth of the
// test, so a short test keeps its shape.
func smooth(t measure.Result) plotter.XYs {
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

package experiments

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/paper"
)

// PlotStorage draws the bytes each system keeps on disk per message beyond
// the payload (§5: "On average, each message had an overhead of 9 bytes in
// Kafka, versus 144 bytes in ActiveMQ"). Each bar is this run, with its value written on top; the
// paper's number is a black mark across the bar. Kafka and ActiveMQ always
// appear, so the paper's two numbers are marked even when a system was not
// measured.
func PlotStorage(path string, s *Summary, fig *paper.Figures) error {
	names := []string{compare.Ours, "activemq"}
	got := map[string]Storage{}
	how := map[string]string{}
	for _, r := range s.Systems {
		if st, ok := r.MainStorage(); ok {
			got[r.Name] = st
			if !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
		how[r.Name] = r.Settings["disk_bytes"]
	}
	p := figure.NewPlot(fmt.Sprintf("Storage: bytes on disk per %d-byte message beyond the payload", s.MessageSize), "")
	p.Add(plotter.NewGrid())

	var bars plotter.Values
	var ticks []string
	var tops, marks plotter.XYs
	var topLabels, markLabels []string
	ymax := 10.0
	for i, n := range names {
		st, measured := got[n]
		v := math.Max(st.OverheadBytes, 0)
		bars = append(bars, v)
		tick := n
		if measured {
			tick += fmt.Sprintf("\n(batch %d)", st.Batch)
			topLabels = append(topLabels, strconv.FormatFloat(v, 'f', 1, 64))
		} else {
			topLabels = append(topLabels, "not measured")
		}
		tops = append(tops, plotter.XY{X: float64(i), Y: v})
		ymax = math.Max(ymax, v)
		pv := 0.0
		if fig != nil {
			pv, _ = fig.OverheadBytes(n)
		}
		if pv > 0 {
			marks = append(marks, plotter.XY{X: float64(i), Y: pv})
			markLabels = append(markLabels, "paper: "+strconv.FormatFloat(pv, 'f', 0, 64))
			ymax = math.Max(ymax, pv)
		} else if fig != nil {
			tick += "\n(no paper value)"
		}
		ticks = append(ticks, tick)
	}

	// One bar chart per system, so that each bar has its system's colour.
	w := vg.Points(70)
	leg := figure.NewSideLegend()
	for i, v := range bars {
		bc, err := plotter.NewBarChart(plotter.Values{v}, w)
		if err != nil {
			return fmt.Errorf("experiments: plot %s: %w", path, err)
		}
		bc.XMin = float64(i)
		bc.Color = figure.SystemColor(names[i])
		bc.LineStyle.Width = 0
		p.Add(bc)
		if _, measured := got[names[i]]; measured {
			leg.Add(names[i]+", this run", bc)
		}
	}

	valueStyle := figure.FontSize(p.Y.Tick.Label, 11)
	valueStyle.XAlign, valueStyle.YAlign = text.XCenter, text.YBottom
	if err := figure.AddLabels(p, tops, topLabels, valueStyle, vg.Point{Y: vg.Points(5)}); err != nil {
		return fmt.Errorf("experiments: plot %s: %w", path, err)
	}
	if len(marks) > 0 {
		// The paper's value: a thick black mark across the bar, labelled
		// on its right.
		for _, m := range marks {
			l, err := plotter.NewLine(plotter.XYs{{X: m.X - 0.3, Y: m.Y}, {X: m.X + 0.3, Y: m.Y}})
			if err != nil {
				return fmt.Errorf("experiments: plot %s: %w", path, err)
			}
			l.Color, l.Width = color.Black, vg.Points(3)
			p.Add(l)
			if m == marks[0] {
				leg.Add("paper §5 (Kafka 9, ActiveMQ 144)", l)
			}
		}
		markStyle := figure.FontSize(p.Y.Tick.Label, 10)
		markStyle.XAlign, markStyle.YAlign = text.XLeft, text.YCenter
		right := make(plotter.XYs, len(marks))
		for i, m := range marks {
			right[i] = plotter.XY{X: m.X + 0.32, Y: m.Y}
		}
		if err := figure.AddLabels(p, right, markLabels, markStyle, vg.Point{}); err != nil {
			return fmt.Errorf("experiments: plot %s: %w", path, err)
		}
	}

	p.NominalX(ticks...)
	p.X.Min, p.X.Max = -0.6, float64(len(names))-0.4
	p.Y.Min, p.Y.Max = 0, ymax*1.2
	p.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ts := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = strconv.FormatFloat(ts[i].Value, 'f', -1, 64)
			}
		}
		return ts
	})

	var cap strings.Builder
	fmt.Fprintf(&cap, "Growth of each store's files during the producer test of the batch named under each bar (%s messages), per message, minus the %d-byte payload. Measured as: ",
		figure.Commas(float64(s.Messages)), s.MessageSize)
	sep := ""
	for _, n := range names {
		if _, ok := got[n]; !ok {
			continue
		}
		h := how[n]
		if h == "" && n == compare.Ours {
			h = "length of the segment files: a 4-byte length, 1 magic byte and a 4-byte CRC per message (§3.1)"
		}
		if h == "" {
			h = "not reported by the adapter"
		}
		fmt.Fprintf(&cap, "%s%s: %s", sep, n, h)
		sep = "; "
	}
	cap.WriteString(".")
	if s.Messages < 10_000_000 {
		cap.WriteString(" A short run weighs a store's fixed files (indexes, first journal) more than the paper's 10,000,000 messages.")
	}
	return figure.Figure{Plot: p, YLabel: "bytes per message beyond the payload", Legend: leg, Caption: cap.String()}.Save(path)
}

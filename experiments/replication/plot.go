package replication

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
)

// Plot draws figure 6 as one bar per mode, in the mode's colour: the
// producer's rate over the 1-replica mode's (ModeResult.Ratio), with the
// ratio written on the bar and, for a mode whose sends are acknowledged, the
// p50 and p99 latency of one acknowledged batch under it. A dotted line at
// 1 is the 1-replica rate. Nothing is drawn when the experiment did not run.
func Plot(path string, r *Result) error {
	if r == nil || len(r.Results) == 0 {
		return nil
	}
	title := fmt.Sprintf("The price of replication (§6, figure 6): %s messages of %d bytes, batch %d",
		figure.Commas(float64(r.Messages)), r.MessageSize, r.Batch)
	p := figure.NewPlot(title, "")
	p.Add(plotter.NewGrid())

	w := vg.Points(60)
	leg := figure.NewSideLegend()
	var ticks []string
	var tops plotter.XYs
	var labels []string
	ymax := 1.0
	for i, x := range r.Results {
		v := 0.0
		label := "failed"
		if x.Error == "" {
			v = math.Max(x.Ratio, 0)
			label = fmt.Sprintf("%.2f×", x.Ratio)
			if x.Mode.Acks != 0 {
				label += fmt.Sprintf("\np50 %.1f ms\np99 %.1f ms", x.P50Ms, x.P99Ms)
			}
		}
		bc, err := plotter.NewBarChart(plotter.Values{v}, w)
		if err != nil {
			return fmt.Errorf("replication: plot %s: %w", path, err)
		}
		bc.XMin = float64(i)
		bc.Color = figure.SystemColor(x.Mode.Name)
		bc.LineStyle.Width = 0
		p.Add(bc)
		leg.Add(x.Mode.Name, bc)
		ticks = append(ticks, strings.ReplaceAll(x.Mode.Name, ", ", "\n"))
		tops = append(tops, plotter.XY{X: float64(i), Y: v})
		labels = append(labels, label)
		ymax = math.Max(ymax, v)
	}

	one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(r.Results)) - 0.5, Y: 1}})
	if err != nil {
		return fmt.Errorf("replication: plot %s: %w", path, err)
	}
	one.Color, one.Width, one.Dashes = color.Black, vg.Points(1), []vg.Length{vg.Points(2), vg.Points(3)}
	p.Add(one)
	leg.Add("the 1-replica rate", one)

	sty := figure.FontSize(p.Y.Tick.Label, 10)
	sty.XAlign, sty.YAlign = text.XCenter, draw.YBottom
	if err := figure.AddLabels(p, tops, labels, sty, vg.Point{Y: vg.Points(4)}); err != nil {
		return fmt.Errorf("replication: plot %s: %w", path, err)
	}
	p.NominalX(ticks...)
	p.X.Min, p.X.Max = -0.6, float64(len(r.Results))-0.4
	p.Y.Min, p.Y.Max = 0, ymax*1.45 // room for the labels above the tallest bar
	return figure.Figure{Plot: p, YLabel: "producer's rate over the 1-replica mode's", Legend: leg, Caption: caption(r)}.Save(path)
}

// caption says what figure 6's bars are and how the modes compare.
func caption(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "One producer (batches of %d; with acks 1 and -1, %d in flight unless the mode says one) against three broker processes and ZooKeeper on this %d-core machine. "+
		"Each bar is the rate at which messages left the producer (and, where acks ask for it, were acknowledged) over the 1-replica mode's; "+
		"under the ratio, the p50 and p99 latency of one acknowledged batch. ", r.Batch, InFlight, r.Cores)
	var parts []string
	for _, x := range r.Results {
		if x.Error != "" {
			parts = append(parts, x.Mode.Name+" failed")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %.2f×", x.Mode.Name, x.Ratio))
	}
	fmt.Fprintf(&b, "This run: %s. Kreps (2014, three machines, a pipelining producer): acks=1 0.96×, acks=-1 0.51×.", strings.Join(parts, ", "))
	return b.String()
}

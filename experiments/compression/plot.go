package compression

import (
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/figure"
)

// codecColors: no codec in Kafka's colour of every other figure, the codecs
// in the palette's next two.
func codecColor(codec string) color.RGBA {
	switch codec {
	case "gzip":
		return figure.OtherColors[0]
	case "snappy":
		return figure.OtherColors[1]
	}
	return figure.SystemColor(compare.Ours)
}

// Plot draws the compression experiment: for each measure
// (bytes on disk per message, producer and consumer msg/s, CPU per message
// of each side), one mark per codec, as a ratio to no compression on a
// log scale, with the measured value written beside it.
func Plot(path string, c *Result) error {
	if c == nil || len(c.Codecs) == 0 || c.Codecs[0].Codec != "none" {
		return nil
	}
	type measure struct {
		name string
		get  func(CodecResult) float64
		unit func(float64) string
	}
	us := func(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) + " µs" }
	measures := []measure{
		{"disk bytes\nper message", func(r CodecResult) float64 { return r.BytesPerMessage }, func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + " B" }},
		{"producer\nmsg/s", func(r CodecResult) float64 { return r.ProducerMsgPerS }, func(v float64) string { return figure.Commas(v) }},
		{"consumer\nmsg/s", func(r CodecResult) float64 { return r.ConsumerMsgPerS }, func(v float64) string { return figure.Commas(v) }},
	}
	if c.Codecs[0].CPUMeasured {
		measures = append(measures,
			measure{"producer\nCPU/msg", func(r CodecResult) float64 { return r.ProducerCPUus }, us},
			measure{"broker CPU/msg\n(producing)", func(r CodecResult) float64 { return r.BrokerCPUProduceUs }, us},
			measure{"consumer\nCPU/msg", func(r CodecResult) float64 { return r.ConsumerCPUus }, us},
			measure{"broker CPU/msg\n(consuming)", func(r CodecResult) float64 { return r.BrokerCPUConsumeUs }, us})
	}
	p := figure.NewPlot(fmt.Sprintf("Compression: %s log lines of %.0f bytes on average, batches of %d", figure.Commas(float64(c.Messages)), c.AvgPayload, c.Batch), "")
	p.Add(plotter.NewGrid())
	p.Y.Scale = plot.LogScale{}
	leg := figure.NewSideLegend()
	valueStyle := figure.FontSize(p.Y.Tick.Label, 8)
	valueStyle.XAlign, valueStyle.YAlign = text.XLeft, text.YCenter
	one, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: 1}, {X: float64(len(measures)) - 0.5, Y: 1}})
	if err != nil {
		return fmt.Errorf("experiments: plot %s: %w", path, err)
	}
	one.Color, one.Width = color.Gray{Y: 120}, vg.Points(1)
	p.Add(one)
	ymin, ymax := 0.5, 2.0
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.TriangleGlyph{}, draw.BoxGlyph{}}
	for ci, r := range c.Codecs {
		var pts plotter.XYs
		var labels []string
		for mi, m := range measures {
			base, v := m.get(c.Codecs[0]), m.get(r)
			if base <= 0 || v <= 0 {
				continue // too small to measure (a CPU time under a microsecond in all)
			}
			ratio := v / base
			ymin, ymax = min(ymin, ratio), max(ymax, ratio)
			pts = append(pts, plotter.XY{X: float64(mi) + (float64(ci)-1)*0.22, Y: ratio})
			labels = append(labels, m.unit(v))
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("experiments: plot %s: %w", path, err)
		}
		sc.GlyphStyle = figure.GlyphStyle(codecColor(r.Codec), shapes[ci%len(shapes)])
		p.Add(sc)
		leg.Add(r.Codec, sc)
		if err := figure.AddLabels(p, pts, labels, valueStyle, vg.Point{X: vg.Points(6)}); err != nil {
			return fmt.Errorf("experiments: plot %s: %w", path, err)
		}
	}
	var ticks []string
	for _, m := range measures {
		ticks = append(ticks, m.name)
	}
	p.NominalX(ticks...)
	p.X.Min, p.X.Max = -0.5, float64(len(measures))-0.3
	p.Y.Min, p.Y.Max = ymin/1.5, ymax*1.5
	p.Y.Tick.Marker = ratioTicks{}
	caption := fmt.Sprintf("Each mark is a codec's value divided by no compression's, on a log scale (the grey line is 1; the number beside a mark is the value itself). "+
		"Producer: the client builds each batch of %d magic-1 messages (and its wrapper) and sends it, timed until the broker's flushed end shows the last byte; "+
		"consumer: fetches of 300 KB from the page cache, every CRC checked, every wrapper unpacked. "+
		"CPU: schedstat run time of the client process and of the broker process during each test, per message. Corpus: seed %d.",
		c.Batch, c.Seed)
	return figure.Figure{Plot: p, YLabel: "relative to no compression", Legend: leg, Caption: caption}.Save(path)
}

// ratioTicks are figure.LogTicks labelled as ratios: 0.1×, 0.2×, 0.5×, 1×, 2×, ...
type ratioTicks struct{}

func (ratioTicks) Ticks(min, max float64) []plot.Tick {
	ts := figure.LogTicks{LabelAll: true}.Ticks(min, max)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value, 'g', 3, 64) + "×"
		}
	}
	return ts
}

package experiments

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Figure size and resolution: 9 x 5.5 inches at 150 dpi (1350 x 825
// pixels), large enough to read every label of a figure on a projector.
const (
	figWidth  = 9 * vg.Inch
	figHeight = 5.5 * vg.Inch
	figDPI    = 150
)

// figure is one PNG: a plot, an optional legend column on its right (so
// the legend never hides a line) and a caption under it that says what
// the lines are, as a figure in a paper would.
type figure struct {
	plot    *plot.Plot
	yLabel  string      // drawn by save, centred on the data area (see newFigurePlot)
	legend  plot.Legend // drawn in the right-hand column; empty: no column
	caption string
}

// fontSize returns a copy of sty at the given size in points.
func fontSize(sty text.Style, pt float64) text.Style {
	sty.Font.Size = vg.Points(pt)
	return sty
}

// newFigurePlot returns a plot with the title and axis fonts used by every
// figure. The y label is left to figure.save: gonum centres its glyph box
// on the arithmetic middle of the axis range, which on a log scale lies
// near the top, and then shrinks the data area to make room for it.
func newFigurePlot(title, xLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle = fontSize(p.Title.TextStyle, 14)
	p.X.Label.Text = xLabel
	p.X.Label.TextStyle = fontSize(p.X.Label.TextStyle, 12)
	p.Y.Label.TextStyle = fontSize(p.Y.Label.TextStyle, 12)
	p.X.Tick.Label = fontSize(p.X.Tick.Label, 10)
	p.Y.Tick.Label = fontSize(p.Y.Tick.Label, 10)
	return p
}

// newSideLegend returns a legend for the right-hand column.
func newSideLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle = fontSize(l.TextStyle, 10)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(28)
	l.Padding = vg.Points(3)
	return l
}

// save draws the figure and writes it as a PNG.
func (f figure) save(path string) error {
	c := vgimg.NewWith(vgimg.UseWH(figWidth, figHeight), vgimg.UseDPI(figDPI))
	dc := draw.New(c)
	// A white page and a small margin all round.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	margin := vg.Points(8)
	dc = draw.Crop(dc, margin, -margin, margin, -margin)

	capStyle := fontSize(f.plot.X.Label.TextStyle, 9.5)
	capStyle.XAlign, capStyle.YAlign = text.XLeft, text.YBottom
	lines := wrap(capStyle, f.caption, dc.Size().X)
	lineH := capStyle.Height("Ag") * 1.15
	capH := vg.Length(len(lines)) * lineH
	for i, l := range lines {
		dc.FillText(capStyle, vg.Point{X: dc.Min.X, Y: dc.Min.Y + capH - vg.Length(i+1)*lineH}, l)
	}
	plotArea := draw.Crop(dc, 0, 0, capH+vg.Points(6), 0)

	if col := f.legendWidth(plotArea); col > 0 {
		legendArea := draw.Crop(plotArea, plotArea.Size().X-col+vg.Points(10), 0, 0, -vg.Points(30))
		plotArea = draw.Crop(plotArea, 0, -col, 0, 0)
		f.legend.Draw(legendArea)
	}
	if f.yLabel != "" {
		sty := f.plot.Y.Label.TextStyle
		sty.Rotation = math.Pi / 2
		sty.XAlign, sty.YAlign = text.XCenter, text.YTop
		// Centred between the x axis (about 45 points high) and the title.
		top := plotArea.Max.Y - f.plot.Title.TextStyle.Height(f.plot.Title.Text) - f.plot.Title.Padding
		y := (plotArea.Min.Y + vg.Points(45) + top) / 2
		plotArea.FillText(sty, vg.Point{X: plotArea.Min.X, Y: y}, f.yLabel)
		plotArea = draw.Crop(plotArea, sty.Height(f.yLabel)+vg.Points(4), 0, 0, 0)
	}
	f.plot.Draw(plotArea)

	out, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("experiments: create %s: %w", path, err)
	}
	_, err = vgimg.PngCanvas{Canvas: c}.WriteTo(out)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("experiments: write %s: %w", path, err)
	}
	return nil
}

// legendWidth is the width of the legend column, at most 40% of the figure.
func (f figure) legendWidth(c draw.Canvas) vg.Length {
	r := f.legend.Rectangle(c)
	if r.Size().Y == 0 {
		return 0
	}
	return min(r.Size().X+vg.Points(16), c.Size().X*0.4)
}

// wrap breaks text into lines no wider than width; "\n" starts a new
// paragraph.
func wrap(sty text.Style, s string, width vg.Length) []string {
	var lines []string
	for _, para := range strings.Split(s, "\n") {
		line := ""
		for _, word := range strings.Fields(para) {
			next := word
			if line != "" {
				next = line + " " + word
			}
			if line != "" && sty.Width(next) > width {
				lines = append(lines, line)
				next = word
			}
			line = next
		}
		lines = append(lines, line)
	}
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	return lines
}

// Package figure is what every figure of the experiments shares: the size and fonts, a legend column and a
// caption (Figure), the palette that gives each system and mode one colour in every figure, log-scale
// ticks, and numbers written with thousands separators as the reports write them.
package figure

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
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

// Figure is one PNG: a plot, an optional legend column on its right (so
// the legend never hides a line) and a caption under it that says what
// the lines are, as a figure in a paper would.
type Figure struct {
	Plot    *plot.Plot
	YLabel  string      // drawn by Save, centred on the data area (see NewPlot)
	Legend  plot.Legend // drawn in the right-hand column; empty: no column
	Caption string
}

// FontSize returns a copy of sty at the given size in points.
func FontSize(sty text.Style, pt float64) text.Style {
	sty.Font.Size = vg.Points(pt)
	return sty
}

// NewPlot returns a plot with the title and axis fonts used by every
// figure. The y label is left to Figure.Save: gonum centres its glyph box
// on the arithmetic middle of the axis range, which on a log scale lies
// near the top, and then shrinks the data area to make room for it.
func NewPlot(title, xLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle = FontSize(p.Title.TextStyle, 14)
	p.X.Label.Text = xLabel
	p.X.Label.TextStyle = FontSize(p.X.Label.TextStyle, 12)
	p.Y.Label.TextStyle = FontSize(p.Y.Label.TextStyle, 12)
	p.X.Tick.Label = FontSize(p.X.Tick.Label, 10)
	p.Y.Tick.Label = FontSize(p.Y.Tick.Label, 10)
	return p
}

// NewSideLegend returns a legend for the right-hand column.
func NewSideLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle = FontSize(l.TextStyle, 10)
	l.Top, l.Left = true, true
	l.ThumbnailWidth = vg.Points(28)
	l.Padding = vg.Points(3)
	return l
}

// Save draws the figure and writes it as a PNG.
func (f Figure) Save(path string) error {
	c := vgimg.NewWith(vgimg.UseWH(figWidth, figHeight), vgimg.UseDPI(figDPI))
	dc := draw.New(c)
	// A white page and a small margin all round.
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	margin := vg.Points(8)
	dc = draw.Crop(dc, margin, -margin, margin, -margin)

	capStyle := FontSize(f.Plot.X.Label.TextStyle, 9.5)
	capStyle.XAlign, capStyle.YAlign = text.XLeft, text.YBottom
	lines := Wrap(capStyle, f.Caption, dc.Size().X)
	lineH := capStyle.Height("Ag") * 1.15
	capH := vg.Length(len(lines)) * lineH
	for i, l := range lines {
		dc.FillText(capStyle, vg.Point{X: dc.Min.X, Y: dc.Min.Y + capH - vg.Length(i+1)*lineH}, l)
	}
	plotArea := draw.Crop(dc, 0, 0, capH+vg.Points(6), 0)

	if col := f.legendWidth(plotArea); col > 0 {
		legendArea := draw.Crop(plotArea, plotArea.Size().X-col+vg.Points(10), 0, 0, -vg.Points(30))
		plotArea = draw.Crop(plotArea, 0, -col, 0, 0)
		f.Legend.Draw(legendArea)
	}
	if f.YLabel != "" {
		sty := f.Plot.Y.Label.TextStyle
		sty.Rotation = math.Pi / 2
		sty.XAlign, sty.YAlign = text.XCenter, text.YTop
		// Centred between the x axis (about 45 points high) and the title.
		top := plotArea.Max.Y - f.Plot.Title.TextStyle.Height(f.Plot.Title.Text) - f.Plot.Title.Padding
		y := (plotArea.Min.Y + vg.Points(45) + top) / 2
		plotArea.FillText(sty, vg.Point{X: plotArea.Min.X, Y: y}, f.YLabel)
		plotArea = draw.Crop(plotArea, sty.Height(f.YLabel)+vg.Points(4), 0, 0, 0)
	}
	f.Plot.Draw(plotArea)

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
func (f Figure) legendWidth(c draw.Canvas) vg.Length {
	r := f.Legend.Rectangle(c)
	if r.Size().Y == 0 {
		return 0
	}
	return min(r.Size().X+vg.Points(16), c.Size().X*0.4)
}

// Wrap breaks text into lines no wider than width; "\n" starts a new
// paragraph.
func Wrap(sty text.Style, s string, width vg.Length) []string {
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

// AddLabels writes texts at points of the plot in one style.
func AddLabels(p *plot.Plot, at plotter.XYs, texts []string, sty text.Style, off vg.Point) error {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: texts})
	if err != nil {
		return err
	}
	for i := range l.TextStyle {
		l.TextStyle[i] = sty
	}
	l.Offset = off
	p.Add(l)
	return nil
}

package experiments

import (
	"fmt"
	"image/color"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Limit is a ceiling drawn across a throughput figure as a dotted line:
// what the link carries of one test's messages (Network.Limits). Label is
// its legend entry; Note, for the caption, says how it was computed.
type Limit struct {
	Label   string
	Note    string
	MsgPerS float64
}

// addLimits draws each limit as a dotted dark line from x 0 to maxX, with
// its legend entry after a blank line.
func addLimits(p *plot.Plot, leg *plot.Legend, limits []Limit, maxX float64) error {
	if len(limits) == 0 {
		return nil
	}
	leg.Add("")
	for i, l := range limits {
		line, err := plotter.NewLine(plotter.XYs{{X: 0, Y: l.MsgPerS}, {X: max(maxX, 1), Y: l.MsgPerS}})
		if err != nil {
			return fmt.Errorf("experiments: plot limit %q: %w", l.Label, err)
		}
		line.Color = color.Gray{Y: uint8(40 + 50*(i%2))}
		line.Width, line.Dashes = vg.Points(1.5), []vg.Length{vg.Points(1.5), vg.Points(3)}
		p.Add(line)
		leg.Add(l.Label, line)
	}
	return nil
}

// limitsCaption is the caption's sentence on the limits.
func limitsCaption(limits []Limit) string {
	var notes []string
	for _, l := range limits {
		notes = append(notes, l.Note)
	}
	if len(notes) == 0 {
		return ""
	}
	return " " + strings.Join(notes, "; ") + "."
}

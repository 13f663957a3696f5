package figure

import (
	"hash/fnv"
	"image/color"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The palette: one colour per system, the same in every figure (4, 5 and
// the storage bars), whatever else a figure shows and in whatever order, so
// a reader who learned "Kafka is red" in figure 4 reads figure 5 without
// the legend. The colours are gonum's soft palette (plotutil.SoftColors).
var systemColors = map[string]color.RGBA{
	"kafka":    {R: 241, G: 90, B: 96, A: 255},  // red
	"activemq": {R: 93, G: 165, B: 218, A: 255}, // blue
	"rabbitmq": {R: 250, G: 164, B: 58, A: 255}, // orange
	// Figure 6's modes (package replication): one replica is the §5 producer, in Kafka's red.
	"1 replica":                        {R: 241, G: 90, B: 96, A: 255},   // red
	"3 replicas, acks=0":               {R: 122, G: 195, B: 106, A: 255}, // green
	"3 replicas, acks=1":               {R: 158, G: 103, B: 171, A: 255}, // purple
	"3 replicas, acks=-1":              {R: 96, G: 96, B: 96, A: 255},    // grey
	"3 replicas, acks=-1, 1 in flight": {R: 64, G: 170, B: 160, A: 255},  // teal
}

// OtherColors are for a system the palette does not name: one of these,
// chosen by a hash of its name, so it too keeps its colour across figures.
var OtherColors = []color.RGBA{
	{R: 122, G: 195, B: 106, A: 255}, // green
	{R: 158, G: 103, B: 171, A: 255}, // purple
	{R: 206, G: 112, B: 88, A: 255},  // brown
	{R: 215, G: 127, B: 180, A: 255}, // pink
}

// SystemColor is the colour of system in every figure.
func SystemColor(system string) color.RGBA {
	if c, ok := systemColors[system]; ok {
		return c
	}
	h := fnv.New32a()
	h.Write([]byte(system))
	return OtherColors[h.Sum32()%uint32(len(OtherColors))]
}

// BatchGlyph tells the lines of one system apart within a figure without a
// second colour: batch 1 is a plain line, any other batch carries marks
// along it (a triangle for the paper's batch of 50).
func BatchGlyph(batch int) (draw.GlyphDrawer, bool) {
	switch batch {
	case 0, 1:
		return nil, false
	case 50:
		return draw.TriangleGlyph{}, true
	default:
		return draw.BoxGlyph{}, true
	}
}

// GlyphStyle is a mark of a batch's line, in its system's colour.
func GlyphStyle(c color.Color, shape draw.GlyphDrawer) draw.GlyphStyle {
	return draw.GlyphStyle{Color: c, Radius: vg.Points(4.5), Shape: shape}
}

package figure

import (
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
)

// LogTicks marks 1..9 times each power of ten and labels the powers of
// ten, and also 2 and 5 times them when LabelAll is set (a range of a few
// decades, where a range inside one decade would otherwise have no label).
type LogTicks struct{ LabelAll bool }

func (lt LogTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		base := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * base
			if v < min || v > max {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || (lt.LabelAll && (m == 2 || m == 5)) {
				t.Label = Commas(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// Commas formats a rate as an integer with thousands separators: 400,000.
func Commas(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// OneLine makes s fit one cell of a Markdown table: line breaks become "; "
// and a "|" becomes "/".
func OneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\n", "; "), "|", "/")
}

package perfcheck

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
)

// HistoryHeader is the first line of results/perf/history.csv: one row per
// path and run, the head's figures (ns_per_msg is empty when the run had no
// wall-clock part) and what it was compared with.
var HistoryHeader = []string{"commit", "date", "path", "instructions_per_msg", "ns_per_msg", "allocs_per_msg",
	"base", "base_instructions_per_msg", "verdict"}

// AppendHistory appends the report's rows to the CSV file at path,
// writing the header first when the file is new.
func AppendHistory(path string, r *Report) error {
	_, err := os.Stat(path)
	fresh := errors.Is(err, os.ErrNotExist)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("perfcheck: history: %w", err)
	}
	w := csv.NewWriter(f)
	if fresh {
		w.Write(HistoryHeader)
	}
	date := r.Started.UTC().Format(time.RFC3339)
	for _, p := range r.Paths {
		verdict := "ok"
		if p.New {
			verdict = "new"
		}
		if len(p.Failures) > 0 {
			verdict = "fail"
		}
		ns, base := "", ""
		if p.Head.NsPerMsg > 0 {
			ns = strconv.FormatFloat(p.Head.NsPerMsg, 'f', 2, 64)
		}
		if !p.New {
			base = strconv.FormatFloat(p.Base.InstrPerMsg, 'f', 1, 64)
		}
		w.Write([]string{r.Head, date, p.Path, strconv.FormatFloat(p.Head.InstrPerMsg, 'f', 1, 64), ns,
			strconv.FormatFloat(p.Head.AllocsPerOp*float64(p.Ops)/float64(p.Messages), 'g', 4, 64), r.Base, base, verdict})
	}
	w.Flush()
	return errors.Join(w.Error(), f.Close())
}

// historyRow is one row of history.csv.
type historyRow struct {
	commit, date, path string
	instr              float64
}

func readHistory(r io.Reader) ([]historyRow, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, err
	}
	var rows []historyRow
	for i, rec := range recs {
		if i == 0 || len(rec) < 4 {
			continue
		}
		v, err := strconv.ParseFloat(rec[3], 64)
		if err != nil {
			return nil, fmt.Errorf("line %d: instructions %q: %w", i+1, rec[3], err)
		}
		rows = append(rows, historyRow{commit: rec[0], date: rec[1], path: rec[2], instr: v})
	}
	return rows, nil
}

// PlotHistory draws history.csv at csvPath into pngPath: instructions per
// message of every path, one line each, against the runs in order (a run
// is a date and commit), on a logarithmic axis since the paths differ by
// tens of times.
func PlotHistory(csvPath, pngPath string) error {
	f, err := os.Open(csvPath)
	if err != nil {
		return fmt.Errorf("perfcheck: history: %w", err)
	}
	rows, err := readHistory(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("perfcheck: history %s: %w", csvPath, err)
	}
	// A run is the rows of one date and commit; runs are numbered in order.
	runOf := map[[2]string]int{}
	var runs [][2]string
	var paths []string
	for _, r := range rows {
		k := [2]string{r.date, r.commit}
		if _, ok := runOf[k]; !ok {
			runOf[k] = len(runs)
			runs = append(runs, k)
		}
		if !slices.Contains(paths, r.path) {
			paths = append(paths, r.path)
		}
	}
	p := plot.New()
	p.Title.Text = "perf-check history: instructions per message of each hot path (callgrind)"
	p.X.Label.Text = "run (oldest first)"
	p.Y.Label.Text = "instructions per message"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Add(plotter.NewGrid())
	lo, hi := math.Inf(1), 0.0
	for i, name := range paths {
		var xys plotter.XYs
		for _, r := range rows {
			if r.path == name && r.instr > 0 {
				xys = append(xys, plotter.XY{X: float64(runOf[[2]string{r.date, r.commit}] + 1), Y: r.instr})
				lo, hi = math.Min(lo, r.instr), math.Max(hi, r.instr)
			}
		}
		if len(xys) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("perfcheck: plot %s: %w", name, err)
		}
		l.Color, pts.Color = plotutil.Color(i), plotutil.Color(i)
		l.Dashes = plotutil.Dashes(i / 7)
		pts.Shape = plotutil.Shape(i)
		p.Add(l, pts)
		p.Legend.Add(name, l, pts)
	}
	if hi > 0 {
		// Room above the lines for the legend (a log axis: a factor).
		p.Y.Min, p.Y.Max = lo/1.5, hi*12
	}
	p.X.Min, p.X.Max = 0.5, float64(len(runs))+0.5
	var ticks []plot.Tick
	step := max(1, len(runs)/12)
	for i := 1; i <= len(runs); i += step {
		ticks = append(ticks, plot.Tick{Value: float64(i), Label: strconv.Itoa(i)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	if len(runs) > 0 {
		first, last := runs[0], runs[len(runs)-1]
		p.X.Label.Text = fmt.Sprintf("run (oldest first): %d runs, %s (%s) … %s (%s)", len(runs), first[0], first[1], last[0], last[1])
	}
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.XOffs = 0
	if err := p.Save(11*vg.Inch, 6*vg.Inch, pngPath); err != nil {
		return fmt.Errorf("perfcheck: save %s: %w", pngPath, err)
	}
	return nil
}

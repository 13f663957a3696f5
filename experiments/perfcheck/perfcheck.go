// Package perfcheck is the performance-regression check of CI (make
// perf-check). It measures the hot paths of kafka/internal/hotpath in two
// trees on the same machine in the same run, a base commit (by default the
// one results/perf/baseline names) and the head, and fails when the head is
// slower, naming the path:
//
//   - instructions per message, counted with valgrind --tool=callgrind: the
//     hot-path test binary of each tree runs a path for a fixed number of
//     operations and again for none (kafka/internal/hotpath TestRun), and
//     the difference of the two counts over the messages is the path's
//     cost, set-up and tear-down excluded. Counts do not depend on the
//     machine's load, so the limit is tight: 5% more fails. Allocations per
//     operation come from the same runs; a path that allocates where the
//     base did not fails.
//   - wall-clock time: the benchmarks (BenchmarkHotPath) of the two trees,
//     run in turns, base and head, several times each, compared with
//     benchstat's statistics (golang.org/x/perf/benchmath, the
//     Mann-Whitney U test). This machine is shared and noisy, so only a
//     large and significant slowdown fails (15%, p < 0.01), and only if a
//     second set of rounds of that path shows it again.
//
// On a failure it profiles the failing paths in both trees and prints the
// top of `go tool pprof -diff_base`. Every run appends the head's figures
// to results/perf/history.csv and redraws results/perf/history.png.
//
// Under valgrind, GODEBUG=asyncpreemptoff=1 keeps the runtime from
// interrupting itself with signals, and GOGC=off keeps the collector out of
// the counts (the paths allocate nothing in the steady state).
package perfcheck

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ErrRegression is returned by Run when a path got slower.
var ErrRegression = errors.New("perfcheck: performance regression")

// Config says what to compare.
type Config struct {
	// Head is the head tree: a checkout of the module (its working files,
	// committed or not, are what is measured).
	Head string
	// Base is the base revision, resolved in Head's repository and laid out
	// with `git worktree add`; BaseDir instead names a tree already laid out.
	Base    string
	BaseDir string
	// Paths restricts the check to these paths (all when empty).
	Paths []string
	// Work is a scratch folder (a temporary one when empty).
	Work string
	// WallClock runs the interleaved benchmarks too.
	WallClock bool
	// Rounds is how many times each side's benchmarks run (default 6).
	Rounds int
	// BenchTime is each benchmark's -test.benchtime (default 100ms).
	BenchTime string
	// Parallel is how many valgrind runs go at once (default 2).
	Parallel int
	// MaxInstr is the allowed growth of instructions per message
	// (default 0.05: 5% more fails).
	MaxInstr float64
	// MaxSlowdown and Alpha: a wall-clock slowdown of at least MaxSlowdown
	// with a p-value below Alpha fails (defaults 0.15 and 0.01).
	MaxSlowdown, Alpha float64
	// Messages is how many messages each counted run moves (default
	// 100,000; 30,000 for paths of one message per operation).
	Messages int
	// ProfileDir receives the CPU profiles of failing paths (default
	// Work/profiles).
	ProfileDir string
	// Log receives progress lines (default io.Discard).
	Log io.Writer
}

func (c Config) withDefaults() Config {
	if c.Rounds <= 0 {
		c.Rounds = 6
	}
	if c.BenchTime == "" {
		c.BenchTime = "100ms"
	}
	if c.Parallel <= 0 {
		c.Parallel = 2
	}
	if c.MaxInstr <= 0 {
		c.MaxInstr = 0.05
	}
	if c.MaxSlowdown <= 0 {
		c.MaxSlowdown = 0.15
	}
	if c.Alpha <= 0 {
		c.Alpha = 0.01
	}
	if c.Messages <= 0 {
		c.Messages = 100_000
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Report is what a check found.
type Report struct {
	Base, Head     string // commit ids (Head with "+dirty" when it has changes)
	Started        time.Time
	Seconds        float64
	Paths          []PathResult
	WallClock      bool
	BenchstatTable string // benchstat's own table of the wall-clock runs
}

// PathResult is one path in both trees.
type PathResult struct {
	Path string
	// Messages and Ops are the counted run's size.
	Messages, Ops int
	Base, Head    Figures
	// New: the base has no such path, so there is nothing to compare.
	New bool
	// Wall is the wall-clock comparison (nil without one).
	Wall *WallComparison
	// Failures says why the path fails, empty when it passes.
	Failures []string
	// Profile is the top of the differential CPU profile of a failing path.
	Profile string
	// BaseCounts and HeadCounts are every count of a path that was over the
	// instruction limit at its first count (confirmOverLimit); Base and
	// Head then hold their medians.
	BaseCounts, HeadCounts []float64
}

// Figures are one tree's measurements of one path.
type Figures struct {
	InstrPerMsg float64 // instructions per message (callgrind)
	AllocsPerOp float64 // heap allocations per operation
	NsPerMsg    float64 // median wall-clock ns per message (0 without benchmarks)
}

// Failed reports whether any path failed.
func (r *Report) Failed() bool {
	return slices.ContainsFunc(r.Paths, func(p PathResult) bool { return len(p.Failures) > 0 })
}

// Run compares the trees. It returns the report, and ErrRegression (with
// the report filled in) when a path got slower.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	rep := &Report{Started: time.Now(), WallClock: cfg.WallClock}
	if cfg.Work == "" {
		dir, err := os.MkdirTemp("", "perfcheck-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		cfg.Work = dir
	}
	if cfg.ProfileDir == "" {
		cfg.ProfileDir = filepath.Join(cfg.Work, "profiles")
	}
	head, err := filepath.Abs(cfg.Head)
	if err != nil {
		return nil, err
	}
	cfg.Head = head
	// The test binaries run in their trees: every path they get is absolute.
	for _, d := range []*string{&cfg.Work, &cfg.ProfileDir} {
		if *d, err = filepath.Abs(*d); err != nil {
			return nil, err
		}
	}
	if rep.Head, err = describeTree(ctx, head); err != nil {
		return nil, err
	}
	base := cfg.BaseDir
	if base == "" {
		if cfg.Base == "" {
			return nil, errors.New("perfcheck: no base: set Config.Base or Config.BaseDir")
		}
		wt, id, cleanup, err := addWorktree(ctx, head, cfg.Base, filepath.Join(cfg.Work, "base"))
		if err != nil {
			return nil, err
		}
		defer cleanup()
		base, rep.Base = wt, id
	} else if rep.Base, err = describeTree(ctx, base); err != nil {
		return nil, err
	}
	fmt.Fprintf(cfg.Log, "perf-check: base %s (%s), head %s (%s)\n", rep.Base, base, rep.Head, head)

	trees := map[string]*tree{}
	for _, side := range []string{"base", "head"} {
		dir := map[string]string{"base": base, "head": head}[side]
		t, err := buildTree(ctx, side, dir, head, cfg.Work)
		if err != nil {
			return nil, err
		}
		trees[side] = t
		fmt.Fprintf(cfg.Log, "perf-check: built %s's hot-path test binary (%d paths)\n", side, len(t.paths))
	}
	names, err := selectPaths(trees["head"], cfg.Paths)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		hp := trees["head"].paths[name]
		ops := max(1, opsFor(cfg.Messages, hp))
		pr := PathResult{Path: name, Ops: ops, Messages: ops * hp}
		if _, ok := trees["base"].paths[name]; !ok {
			pr.New = true
		}
		rep.Paths = append(rep.Paths, pr)
	}
	if err := countAll(ctx, cfg, trees, rep.Paths); err != nil {
		return nil, err
	}
	if err := confirmOverLimit(ctx, cfg, trees, rep.Paths); err != nil {
		return nil, err
	}
	if cfg.WallClock {
		table, err := wallClock(ctx, cfg, trees, rep.Paths)
		if err != nil {
			return nil, err
		}
		rep.BenchstatTable = table
	}
	judge(cfg, rep.Paths)
	if rep.Failed() {
		for i := range rep.Paths {
			if p := &rep.Paths[i]; len(p.Failures) > 0 && !p.New {
				p.Profile, err = diffProfile(ctx, cfg, trees, p.Path)
				if err != nil {
					p.Profile = "no differential profile: " + err.Error()
				}
			}
		}
	}
	rep.Seconds = time.Since(rep.Started).Seconds()
	if rep.Failed() {
		return rep, ErrRegression
	}
	return rep, nil
}

// opsFor is how many operations of perOp messages make about messages
// messages (30,000 for a one-message path, whose messages cost more).
func opsFor(messages, perOp int) int {
	if perOp == 1 {
		messages = min(messages, 30_000)
	}
	return (messages + perOp - 1) / perOp
}

// selectPaths returns the paths to check, in the head's order.
func selectPaths(head *tree, want []string) ([]string, error) {
	if len(want) == 0 {
		return head.order, nil
	}
	for _, w := range want {
		if _, ok := head.paths[w]; !ok {
			return nil, fmt.Errorf("perfcheck: no hot path %q in the head (it has %s)", w, strings.Join(head.order, ", "))
		}
	}
	return slices.DeleteFunc(slices.Clone(head.order), func(n string) bool { return !slices.Contains(want, n) }), nil
}

// judge fills in every path's failures.
func judge(cfg Config, paths []PathResult) {
	for i := range paths {
		p := &paths[i]
		if p.New {
			continue
		}
		if p.Base.InstrPerMsg > 0 && p.Head.InstrPerMsg >= (1+cfg.MaxInstr)*p.Base.InstrPerMsg {
			f := fmt.Sprintf("%.1f instructions per message against %.1f (%+.1f%%, the limit is +%.0f%%)",
				p.Head.InstrPerMsg, p.Base.InstrPerMsg, 100*(p.Head.InstrPerMsg/p.Base.InstrPerMsg-1), 100*cfg.MaxInstr)
			if len(p.HeadCounts) > 1 {
				f += fmt.Sprintf("; medians of %d counts a side, head %s, base %s", len(p.HeadCounts), counts(p.HeadCounts), counts(p.BaseCounts))
			}
			p.Failures = append(p.Failures, f)
		}
		if p.Head.AllocsPerOp >= p.Base.AllocsPerOp+0.5 {
			p.Failures = append(p.Failures, fmt.Sprintf("%.3g allocations per operation against %.3g (a new allocation)",
				p.Head.AllocsPerOp, p.Base.AllocsPerOp))
		}
		if w := p.Wall; w != nil && w.slow(cfg) {
			again := ""
			if w.First != nil {
				again = fmt.Sprintf(", and %+.1f%% (p=%.3f) on the first set of rounds", 100*w.First.Delta, w.First.P)
			}
			p.Failures = append(p.Failures, fmt.Sprintf("wall clock %+.1f%% (p=%.3f, n=%d+%d%s; the limit is +%.0f%% at p < %.2g)",
				100*w.Delta, w.P, w.N, w.N, again, 100*cfg.MaxSlowdown, cfg.Alpha))
		}
	}
}

// counts is "1839.2, 1778.4, 1849.0".
func counts(xs []float64) string {
	var parts []string
	for _, x := range xs {
		parts = append(parts, fmt.Sprintf("%.1f", x))
	}
	return strings.Join(parts, ", ")
}

// Print writes the report as a table and a verdict line per failing path.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "perf-check: base %s, head %s\n", r.Base, r.Head)
	fmt.Fprintf(w, "%-24s %12s %12s %8s %10s %10s %10s %10s %9s\n", "path", "base instr", "head instr", "change",
		"base ns", "head ns", "wall", "p", "allocs/op")
	for _, p := range r.Paths {
		change, wall, pv := "new", "", ""
		if !p.New {
			change = fmt.Sprintf("%+.2f%%", 100*(p.Head.InstrPerMsg/p.Base.InstrPerMsg-1))
		}
		if p.Wall != nil {
			wall, pv = fmt.Sprintf("%+.1f%%", 100*p.Wall.Delta), fmt.Sprintf("%.3f", p.Wall.P)
		}
		fmt.Fprintf(w, "%-24s %12.1f %12.1f %8s %10.1f %10.1f %10s %10s %4.2g→%-4.2g\n", p.Path, p.Base.InstrPerMsg, p.Head.InstrPerMsg,
			change, p.Base.NsPerMsg, p.Head.NsPerMsg, wall, pv, p.Base.AllocsPerOp, p.Head.AllocsPerOp)
	}
	fmt.Fprintln(w, "(instructions per message by callgrind; ns per message: median of the interleaved benchmarks)")
	for _, p := range r.Paths {
		if p.Wall != nil && p.Wall.First != nil {
			fmt.Fprintf(w, "perf-check: %s looked %+.1f%% slower (p=%.3f) on the wall clock and was measured again: %+.1f%% (p=%.3f)\n",
				p.Path, 100*p.Wall.First.Delta, p.Wall.First.P, 100*p.Wall.Delta, p.Wall.P)
		}
	}
	failed := 0
	for _, p := range r.Paths {
		for _, f := range p.Failures {
			fmt.Fprintf(w, "perf-check: FAIL %s: %s\n", p.Path, f)
			failed++
		}
		if p.Profile != "" {
			fmt.Fprintf(w, "perf-check: %s, where the head spends more (go tool pprof -top -diff_base):\n%s\n", p.Path, p.Profile)
		}
	}
	if failed == 0 {
		fmt.Fprintf(w, "perf-check: ok, %d paths, no regression (%.0f s)\n", len(r.Paths), r.Seconds)
	} else {
		fmt.Fprintf(w, "perf-check: FAILED, %d findings (%.0f s)\n", failed, r.Seconds)
	}
}

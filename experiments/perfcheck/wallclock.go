package perfcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"golang.org/x/perf/benchfmt"
	"golang.org/x/perf/benchmath"
)

// WallComparison is one path's wall-clock comparison.
type WallComparison struct {
	BaseNs, HeadNs float64 // median ns per operation
	Delta          float64 // HeadNs/BaseNs - 1
	P              float64 // Mann-Whitney U test's p-value
	N              int     // runs per side
	// First is the first set of rounds when the path looked slow there and
	// was measured again (this comparison is the second set's).
	First *WallComparison
}

// benchPattern is the -test.bench pattern of the named paths.
func benchPattern(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	// Benchmark names match level by level, split at "/": a path's name
	// holds one slash, so each level gets an alternation of its parts.
	var first, second []string
	for _, n := range names {
		a, b, _ := strings.Cut(n, "/")
		first, second = append(first, regexp.QuoteMeta(a)), append(second, regexp.QuoteMeta(b))
	}
	return "^BenchmarkHotPath$/^(" + strings.Join(first, "|") + ")$/^(" + strings.Join(second, "|") + ")$"
}

// wallClock runs the benchmarks of both trees in turns (base then head,
// then head then base, …) cfg.Rounds times each, compares every path and
// returns benchstat's table of the runs. A path that looks much slower is
// measured again, cfg.Rounds more times a side, and is judged on that
// second set: on this shared machine one set of rounds can be skewed by
// other work (an fsync-bound path by the disk) while the code is the same.
func wallClock(ctx context.Context, cfg Config, trees map[string]*tree, paths []PathResult) (string, error) {
	var names []string
	for _, p := range paths {
		if !p.New {
			names = append(names, p.Path)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	samples, err := benchRounds(ctx, cfg, trees, names, "")
	if err != nil {
		return "", err
	}
	var suspects []string
	for i := range paths {
		p := &paths[i]
		if p.Wall = compareWall(cfg, samples, p.Path); p.Wall == nil {
			continue
		}
		perOp := float64(p.Messages) / float64(p.Ops)
		p.Base.NsPerMsg, p.Head.NsPerMsg = p.Wall.BaseNs/perOp, p.Wall.HeadNs/perOp
		if p.Wall.slow(cfg) {
			suspects = append(suspects, p.Path)
		}
	}
	if len(suspects) > 0 {
		fmt.Fprintf(cfg.Log, "perf-check: wall clock: measuring %s again\n", strings.Join(suspects, ", "))
		again, err := benchRounds(ctx, cfg, trees, suspects, ".again")
		if err != nil {
			return "", err
		}
		for i := range paths {
			p := &paths[i]
			if !slices.Contains(suspects, p.Path) {
				continue
			}
			first := *p.Wall
			if p.Wall = compareWall(cfg, again, p.Path); p.Wall != nil {
				p.Wall.First = &first
			}
		}
	}
	return benchstat(ctx, cfg)
}

// slow reports whether w is a large and significant slowdown.
func (w *WallComparison) slow(cfg Config) bool { return w.Delta >= cfg.MaxSlowdown && w.P < cfg.Alpha }

// compareWall compares one path's samples (nil if a side has none).
func compareWall(cfg Config, samples map[string]map[string][]float64, path string) *WallComparison {
	b, h := samples["base"][path], samples["head"][path]
	if len(b) == 0 || len(h) == 0 {
		return nil
	}
	thresholds := benchmath.DefaultThresholds
	thresholds.CompareAlpha = cfg.Alpha
	bs, hs := benchmath.NewSample(slices.Clone(b), &thresholds), benchmath.NewSample(slices.Clone(h), &thresholds)
	bc := benchmath.AssumeNothing.Summary(bs, 0.95).Center
	hc := benchmath.AssumeNothing.Summary(hs, 0.95).Center
	cmp := benchmath.AssumeNothing.Compare(bs, hs)
	return &WallComparison{BaseNs: bc * 1e9, HeadNs: hc * 1e9, Delta: hc/bc - 1, P: cmp.P, N: min(len(b), len(h))}
}

// benchRounds runs the named paths' benchmarks in both trees, in turns,
// cfg.Rounds times a side, keeps the outputs in Work/<side>.bench<suffix>
// and returns every path's sec/op values by side.
func benchRounds(ctx context.Context, cfg Config, trees map[string]*tree, names []string, suffix string) (map[string]map[string][]float64, error) {
	outs := map[string]*bytes.Buffer{"base": {}, "head": {}}
	for round := range cfg.Rounds {
		order := []string{"base", "head"}
		if round%2 == 1 {
			order = []string{"head", "base"}
		}
		for _, side := range order {
			t := trees[side]
			cmd := exec.CommandContext(ctx, t.bin, "-test.run=^$", "-test.bench="+benchPattern(names),
				"-test.benchtime="+cfg.BenchTime, "-test.count=1", "-test.benchmem")
			cmd.Dir = t.dir
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = outs[side], &stderr
			if err := cmd.Run(); err != nil {
				return nil, fmt.Errorf("perfcheck: benchmarks of %s, round %d: %v\n%s", side, round+1, err, tail(stderr.String(), 2000))
			}
		}
		fmt.Fprintf(cfg.Log, "perf-check: wall clock, round %d of %d\n", round+1, cfg.Rounds)
	}
	samples := map[string]map[string][]float64{}
	for side, out := range outs {
		if err := os.WriteFile(filepath.Join(cfg.Work, side+".bench"+suffix), out.Bytes(), 0o644); err != nil {
			return nil, err
		}
		s, err := parseBench(out.Bytes(), side)
		if err != nil {
			return nil, err
		}
		samples[side] = s
	}
	return samples, nil
}

// parseBench reads the sec/op values of every BenchmarkHotPath path.
func parseBench(out []byte, side string) (map[string][]float64, error) {
	got := map[string][]float64{}
	r := benchfmt.NewReader(bytes.NewReader(out), side)
	for r.Scan() {
		res, ok := r.Result().(*benchfmt.Result)
		if !ok {
			continue
		}
		name := strings.TrimPrefix(string(res.Name.Full()), "HotPath/")
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			name = name[:i] // the GOMAXPROCS suffix
		}
		if v, ok := res.Value("sec/op"); ok {
			got[name] = append(got[name], v)
		}
	}
	if err := r.Err(); err != nil {
		return nil, fmt.Errorf("perfcheck: reading %s's benchmarks: %w", side, err)
	}
	return got, nil
}

// benchstat runs benchstat itself (a tool of this module) on the two
// outputs, for the table people know.
func benchstat(ctx context.Context, cfg Config) (string, error) {
	cmd := exec.CommandContext(ctx, "go", "tool", "benchstat", "-alpha", fmt.Sprint(cfg.Alpha),
		"base="+filepath.Join(cfg.Work, "base.bench"), "head="+filepath.Join(cfg.Work, "head.bench"))
	cmd.Dir = cfg.Head
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("perfcheck: go tool benchstat: %v\n%s", err, out)
	}
	return string(out), nil
}

package perfcheck

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/kafkarepro/kafkarepro/internal/sink"
	"github.com/kafkarepro/kafkarepro/internal/stats"
)

// count is one callgrind run's result.
type count struct {
	instr  int64 // instructions, every thread
	allocs int64 // heap allocations during the operations
}

// callgrind runs path with ops operations under valgrind in t and returns
// the instructions it executed, every thread's.
func callgrind(ctx context.Context, t *tree, work, path string, ops int) (count, error) {
	out := filepath.Join(work, fmt.Sprintf("callgrind.%s.%s.%d", t.side, strings.ReplaceAll(path, "/", "_"), ops))
	cmd := t.command(ctx, path, ops, "valgrind", "--tool=callgrind", "--callgrind-out-file="+out)
	// The paths that write to a sink get one running natively beside
	// valgrind (package internal/sink).
	sk, err := sink.Start(ctx, t.bin)
	if err != nil {
		return count{}, fmt.Errorf("perfcheck: %s: %w", t.side, err)
	}
	defer sk.Stop()
	cmd.Env = append(cmd.Env, sink.AddrEnv+"="+sk.Addr)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return count{}, fmt.Errorf("perfcheck: callgrind of %s in %s with %d operations: %v\n%s%s", path, t.side, ops, err,
			stdout.String(), ends(stderr.String(), 1500, 1500))
	}
	defer os.Remove(out)
	var c count
	kv, ok := lineWith(stdout.String(), "hotpath-run:")
	if !ok {
		return count{}, fmt.Errorf("perfcheck: %s in %s printed no hotpath-run line:\n%s", path, t.side, stdout.String())
	}
	c.allocs, _ = strconv.ParseInt(kv["allocs"], 10, 64)
	f, err := os.Open(out)
	if err != nil {
		return count{}, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "totals:"); ok {
			if c.instr, err = strconv.ParseInt(strings.Fields(rest)[0], 10, 64); err != nil {
				return count{}, fmt.Errorf("perfcheck: %s: %q: %w", out, sc.Text(), err)
			}
			return c, nil
		}
	}
	return count{}, fmt.Errorf("perfcheck: %s has no totals line", out)
}

func lineWith(out, prefix string) (map[string]string, bool) {
	for line := range strings.SplitSeq(out, "\n") {
		if kv, ok := fields(line, prefix); ok {
			return kv, true
		}
	}
	return nil, false
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// ends is s, or its first h and last t bytes when it is longer: where a
// failure is said (valgrind's own report comes first, its threads' stacks
// after it) and how it ended.
func ends(s string, h, t int) string {
	if len(s) <= h+t {
		return s
	}
	return s[:h] + "\n…\n" + s[len(s)-t:]
}

// callgrindTwice is callgrind, run once more when it fails: valgrind 3.19
// has been seen to crash on its own under a Go program, a run before and a
// run after succeeding on the same binary. A
// second run that succeeds measures the path again; one that fails again
// is the error.
func callgrindTwice(ctx context.Context, cfg Config, t *tree, path string, ops int) (count, error) {
	c, err := callgrind(ctx, t, cfg.Work, path, ops)
	if err != nil && ctx.Err() == nil {
		fmt.Fprintf(cfg.Log, "perf-check: %v\nperf-check: running %s in %s once more\n", err, path, t.side)
		c, err = callgrind(ctx, t, cfg.Work, path, ops)
	}
	return c, err
}

// perMessage is a path's instructions per message: a run of p.Ops
// operations less a run of none (set-up and tear-down), over its messages.
func (p *PathResult) perMessage(with, without count) float64 {
	return float64(with.instr-without.instr) / float64(p.Messages)
}

// countAll counts every path in both trees, cfg.Parallel runs at a time:
// per path and tree a run of p.Ops operations and one of none.
func countAll(ctx context.Context, cfg Config, trees map[string]*tree, paths []PathResult) error {
	type job struct {
		p    *PathResult
		side string
		ops  int
		got  count
		err  error
	}
	var jobs []*job
	for i := range paths {
		p := &paths[i]
		for _, side := range []string{"base", "head"} {
			if side == "base" && p.New {
				continue
			}
			jobs = append(jobs, &job{p: p, side: side, ops: p.Ops}, &job{p: p, side: side, ops: 0})
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan *job)
	var wg sync.WaitGroup
	for range cfg.Parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				j.got, j.err = callgrindTwice(ctx, cfg, trees[j.side], j.p.Path, j.ops)
				if j.err != nil {
					cancel()
					continue
				}
				fmt.Fprintf(cfg.Log, "perf-check: callgrind %s %s, %d operations: %d instructions\n", j.side, j.p.Path, j.ops, j.got.instr)
			}
		}()
	}
	for _, j := range jobs {
		select {
		case next <- j:
		case <-ctx.Done():
		}
	}
	close(next)
	wg.Wait()
	var errs []error
	runs := map[*PathResult]map[string][2]count{}
	for _, j := range jobs {
		if j.err != nil {
			errs = append(errs, j.err)
			continue
		}
		if runs[j.p] == nil {
			runs[j.p] = map[string][2]count{}
		}
		r := runs[j.p][j.side]
		if j.ops == 0 {
			r[0] = j.got
		} else {
			r[1] = j.got
		}
		runs[j.p][j.side] = r
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := range paths {
		p := &paths[i]
		for side, r := range runs[p] {
			f := Figures{
				InstrPerMsg: p.perMessage(r[1], r[0]),
				AllocsPerOp: float64(r[1].allocs) / float64(p.Ops),
			}
			if side == "base" {
				p.Base = f
			} else {
				p.Head = f
			}
		}
		fmt.Fprintf(cfg.Log, "perf-check: %-24s %10.1f → %10.1f instructions/message\n", p.Path, p.Base.InstrPerMsg, p.Head.InstrPerMsg)
	}
	return nil
}

// ConfirmCounts is how many counts of each side a path over the limit gets
// in all before it fails: its first and two more. A path whose goroutines
// trade a socket message by message (producer/send-batch1) does not count
// the same twice: the scheduler's interleaving moves its count by a few per
// cent between runs of the same binary. The medians of three counts a side are what the limit
// judges.
const ConfirmCounts = 3

// confirmOverLimit counts each side of every path over the instruction
// limit ConfirmCounts-1 more times and sets its figures to the medians,
// keeping every count in the path's BaseCounts and HeadCounts. A planted
// slowdown stays over the limit; a path's own spread does not.
func confirmOverLimit(ctx context.Context, cfg Config, trees map[string]*tree, paths []PathResult) error {
	for i := range paths {
		p := &paths[i]
		if p.New || p.Base.InstrPerMsg <= 0 || p.Head.InstrPerMsg < (1+cfg.MaxInstr)*p.Base.InstrPerMsg {
			continue
		}
		fmt.Fprintf(cfg.Log, "perf-check: %s %+.1f%%: counting each side %d more times to confirm\n",
			p.Path, 100*(p.Head.InstrPerMsg/p.Base.InstrPerMsg-1), ConfirmCounts-1)
		p.BaseCounts, p.HeadCounts = []float64{p.Base.InstrPerMsg}, []float64{p.Head.InstrPerMsg}
		for range ConfirmCounts - 1 {
			for _, side := range []string{"base", "head"} {
				per, err := countPerMessage(ctx, cfg, trees[side], p)
				if err != nil {
					return err
				}
				fmt.Fprintf(cfg.Log, "perf-check: callgrind %s %s again: %.1f instructions/message\n", side, p.Path, per)
				if side == "base" {
					p.BaseCounts = append(p.BaseCounts, per)
				} else {
					p.HeadCounts = append(p.HeadCounts, per)
				}
			}
		}
		p.Base.InstrPerMsg, p.Head.InstrPerMsg = stats.Median(p.BaseCounts), stats.Median(p.HeadCounts)
		fmt.Fprintf(cfg.Log, "perf-check: %-24s %10.1f → %10.1f instructions/message (medians of %d)\n",
			p.Path, p.Base.InstrPerMsg, p.Head.InstrPerMsg, ConfirmCounts)
	}
	return nil
}

// countPerMessage counts p once more in t: instructions per message.
func countPerMessage(ctx context.Context, cfg Config, t *tree, p *PathResult) (float64, error) {
	with, err := callgrindTwice(ctx, cfg, t, p.Path, p.Ops)
	if err != nil {
		return 0, err
	}
	without, err := callgrindTwice(ctx, cfg, t, p.Path, 0)
	if err != nil {
		return 0, err
	}
	return p.perMessage(with, without), nil
}

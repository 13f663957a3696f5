// Command perfcheck is make perf-check: the head tree against a base
// commit, hot path by hot path, in instructions per message (callgrind),
// allocations and wall-clock time (package experiments/perfcheck).
//
//	go run ./experiments/cmd/perfcheck                  # against results/perf/baseline
//	go run ./experiments/cmd/perfcheck --base HEAD~3    # or BASE=HEAD~3 make perf-check
//	go run ./experiments/cmd/perfcheck --paths message/iterate,log/append-batch50 --wallclock=false
//
// It exits 0 when no path got slower, 1 on a regression (each failing path
// named on a "perf-check: FAIL" line, with the top of its differential CPU
// profile) or an error, 2 on a usage error. Every run appends to
// results/perf/history.csv and redraws results/perf/history.png.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/kafkarepro/kafkarepro/experiments/perfcheck"
)

// BaselineFile names the base commit when neither --base nor $BASE does.
// A change that accepts a slowdown moves it on purpose, saying why.
const BaselineFile = "results/perf/baseline"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("perfcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg perfcheck.Config
	fs.StringVar(&cfg.Head, "head", ".", "the head tree (a checkout of the module)")
	fs.StringVar(&cfg.Base, "base", os.Getenv("BASE"), "base revision (default $BASE, else the commit in "+BaselineFile+")")
	fs.StringVar(&cfg.BaseDir, "base-dir", "", "a base tree already laid out, instead of --base")
	paths := fs.String("paths", "", "comma-separated hot paths to check (default all)")
	fs.BoolVar(&cfg.WallClock, "wallclock", true, "also compare wall-clock benchmarks")
	fs.IntVar(&cfg.Rounds, "rounds", 6, "benchmark runs per side")
	fs.StringVar(&cfg.BenchTime, "benchtime", "100ms", "-test.benchtime of each benchmark run")
	fs.IntVar(&cfg.Messages, "messages", 100_000, "messages per counted run")
	history := fs.String("history", "results/perf/history.csv", "CSV file to append to (empty: none)")
	png := fs.String("plot", "results/perf/history.png", "figure of the history to redraw (empty: none)")
	fs.StringVar(&cfg.ProfileDir, "profile-dir", "results/perf/failed", "where the CPU profiles of failing paths go")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *paths != "" {
		cfg.Paths = strings.Split(*paths, ",")
	}
	if cfg.Base == "" && cfg.BaseDir == "" {
		b, err := os.ReadFile(filepath.Join(cfg.Head, BaselineFile))
		if err != nil {
			fmt.Fprintf(stderr, "perfcheck: no --base, no $BASE and no %s: %v\n", BaselineFile, err)
			return 2
		}
		cfg.Base = firstWord(string(b))
	}
	cfg.Log = stderr
	rep, err := perfcheck.Run(ctx, cfg)
	if rep == nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	rep.Print(stdout)
	if rep.BenchstatTable != "" {
		fmt.Fprintf(stdout, "\nbenchstat (%d runs a side, interleaved):\n%s", cfg.Rounds, rep.BenchstatTable)
	}
	if *history != "" {
		if herr := perfcheck.AppendHistory(*history, rep); herr != nil {
			fmt.Fprintln(stderr, herr)
			return 1
		}
		if *png != "" {
			if perr := perfcheck.PlotHistory(*history, *png); perr != nil {
				fmt.Fprintln(stderr, perr)
				return 1
			}
		}
		fmt.Fprintf(stdout, "perf-check: appended to %s, redrew %s\n", *history, *png)
	}
	if err != nil {
		return 1
	}
	return 0
}

// firstWord is the commit id at the start of the baseline file (the rest
// of the line, or the next lines, may say why).
func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

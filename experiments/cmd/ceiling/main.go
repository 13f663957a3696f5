// Command ceiling is make ceiling: the machine's ceiling for the paper's
// workload (package experiments/ceiling) and our own tools, in turns, in
// one run, and ours as a fraction of each ceiling.
//
//	go run ./experiments/cmd/ceiling --messages 10000000 --rounds 3
//	go run ./experiments/cmd/ceiling --messages 2000000 --ours=false   # the probes alone
//
// A round runs the three probes (batch 1, batch 50, consumer), then `make
// perf`'s command (experiments/cmd/perf: a broker process through
// internal/kafkaproc, producer-perf batch 50, consumer-perf, producer-perf
// batch 1), so that each fraction sets side by side figures measured
// seconds (batch 50, the consumer) to a minute (batch 1) apart on the same
// machine. With
// --drop-cache (as root) every round starts by writing 1 to
// /proc/sys/vm/drop_caches, and every line names the page cache and the
// load average.
package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/kafkarepro/kafkarepro/experiments/ceiling"
	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
	"github.com/kafkarepro/kafkarepro/internal/stats"
)

// pairs are each probe and the tool run it bounds, as perf names it.
var pairs = []struct{ probe, ours, what string }{
	{ceiling.Consumer, "consumer", "consumer (figure 5)"},
	{ceiling.Batch50, "producer50", "producer, batch 50 (figure 4)"},
	{ceiling.Batch1, "producer1", "producer, batch 1 (figure 4)"},
}

type options struct {
	messages, b1Messages, size, rounds int
	ours, dropCache, holdFreed         bool
	dir                                string
	set                                string // perf's --set: broker settings over the shipped ones
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ceiling", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.messages, "messages", 10_000_000, "messages per probe and per tool run")
	fs.IntVar(&o.b1Messages, "b1-messages", 0, "messages of the batch-1 probe and producer (0: --messages)")
	fs.IntVar(&o.size, "message-size", 200, "payload bytes")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds of probes and tools")
	fs.BoolVar(&o.ours, "ours", true, "also run our tools (make perf) in every round")
	fs.BoolVar(&o.dropCache, "drop-cache", false, "drop the page cache before every round (root: echo 1 > /proc/sys/vm/drop_caches)")
	fs.StringVar(&o.dir, "dir", os.TempDir(), "folder for the probes' files")
	fs.StringVar(&o.set, "set", "", "broker settings over the shipped ones for our tools, key=value[,key=value...] (perf --set)")
	fs.BoolVar(&o.holdFreed, "hold-freed-memory", true, "on a VM whose kernel reports freed pages to its host, keep them in the guest for the run (root; machine.HoldFreedMemory)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.b1Messages <= 0 {
		o.b1Messages = o.messages
	}
	if err := measure(ctx, o, stdout); err != nil {
		fmt.Fprintln(stderr, "ceiling:", err)
		return 1
	}
	return 0
}

func measure(ctx context.Context, o options, w io.Writer) error {
	// The producer probes' files and make perf's logs: one batch-50 and one batch-1 copy of the messages.
	_, restore := machine.HoldForRun(w, o.holdFreed, o.dir, int64(o.messages+o.b1Messages)*int64(o.size+9))
	defer restore()
	var perfBin string
	if o.ours {
		repo, err := localsvc.RepoDir()
		if err != nil {
			return err
		}
		tmp, err := os.MkdirTemp("", "ceiling-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		perfBin = filepath.Join(tmp, "perf")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", perfBin, "./experiments/cmd/perf")
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build ./experiments/cmd/perf: %v\n%s", err, out)
		}
	}
	probe := map[string][]float64{}
	ours := map[string][]float64{}
	for round := 1; round <= o.rounds; round++ {
		if o.dropCache {
			if err := machine.DropPageCache(); err != nil {
				return err
			}
		}
		fmt.Fprintf(w, "== round %d of %d (%s)\n", round, o.rounds, machine.ReadLoad())
		// The probes in reverse (batch 1, batch 50, consumer), so that the
		// two that make perf runs first (batch 50, then the consumer) follow
		// their probes by seconds rather than minutes.
		for _, p := range slices.Backward(pairs) {
			n := o.messages
			if p.probe == ceiling.Batch1 {
				n = o.b1Messages
			}
			r, err := ceiling.Run(ctx, p.probe, ceiling.Config{Messages: int64(n), MessageSize: o.size, Dir: o.dir})
			if err != nil {
				return err
			}
			probe[p.probe] = append(probe[p.probe], r.MsgPerS)
			fmt.Fprintf(w, "ceiling %-18s %s\n", p.probe, ceiling.Describe(r))
		}
		if !o.ours {
			continue
		}
		got, err := runPerf(ctx, perfBin, o, w)
		if err != nil {
			return err
		}
		for k, v := range got {
			ours[k] = append(ours[k], v)
		}
	}
	fmt.Fprintf(w, "\nsummary: medians of %d rounds, %d messages of %d bytes (%s)\n", o.rounds, o.messages, o.size, machine.ReadLoad())
	fmt.Fprintf(w, "%-32s %14s %14s %9s\n", "", "ceiling msg/s", "ours msg/s", "ours/ceil")
	for _, p := range pairs {
		c := stats.Median(probe[p.probe])
		if !o.ours {
			fmt.Fprintf(w, "%-32s %14.0f\n", p.what, c)
			continue
		}
		u := stats.Median(ours[p.ours])
		fmt.Fprintf(w, "%-32s %14.0f %14.0f %8.0f%%\n", p.what, c, u, 100*u/c)
		fmt.Fprintf(w, "%-32s %s\n", "  round by round", roundByRound(probe[p.probe], ours[p.ours]))
		fmt.Fprintf(w, "result: probe=%s ceiling_msg_per_s=%.0f ours=%s ours_msg_per_s=%.0f fraction=%.3f rounds=%d\n",
			p.probe, c, p.ours, u, u/c, o.rounds)
	}
	return nil
}

// roundByRound is each round's ours over that round's probe, "0.93 0.62
// 0.76": how far apart the rounds lie says how much one median can move.
func roundByRound(probe, ours []float64) string {
	var b strings.Builder
	for i := range min(len(probe), len(ours)) {
		if i > 0 {
			b.WriteByte(' ')
		}
		if probe[i] > 0 {
			fmt.Fprintf(&b, "%.2f", ours[i]/probe[i])
		} else {
			b.WriteByte('-')
		}
	}
	return b.String()
}

// runPerf runs make perf's command once and returns each tool's msg_per_s,
// by the name perf gives the run (producer50, producer1, consumer).
func runPerf(ctx context.Context, bin string, o options, w io.Writer) (map[string]float64, error) {
	repo, err := localsvc.RepoDir()
	if err != nil {
		return nil, err
	}
	args := []string{"--messages", strconv.Itoa(o.messages), "--b1-messages", strconv.Itoa(o.b1Messages), "--message-size", strconv.Itoa(o.size)}
	if o.dropCache {
		args = append(args, "--drop-cache")
	}
	args = append(args, "--hold-freed-memory="+strconv.FormatBool(o.holdFreed))
	if o.set != "" {
		args = append(args, "--set", o.set)
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = repo
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("perf: %v\n%s", err, out.String())
	}
	text := out.String()
	got := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), " result: ")
		if !ok || !slices.ContainsFunc(pairs[:], func(p struct{ probe, ours, what string }) bool { return p.ours == name }) {
			continue
		}
		for _, f := range strings.Fields(rest) {
			if v, ok := strings.CutPrefix(f, "msg_per_s="); ok {
				got[name], _ = strconv.ParseFloat(v, 64)
			}
		}
		fmt.Fprintf(w, "ours    %-18s %s\n", name, rest)
	}
	// All of perf's output, its tenth tables and the broker's per tenth.
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		fmt.Fprintln(w, "  perf |", l)
	}
	for _, p := range pairs {
		if _, ok := got[p.ours]; !ok {
			return nil, fmt.Errorf("perf printed no %s result line:\n%s", p.ours, text)
		}
	}
	return got, nil
}

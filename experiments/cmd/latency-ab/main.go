// Command latency-ab measures figure 7 (experiments/latency, §3.1's flush
// trade-off) with one broker setting at each of several values, in turns,
// so that a change to the broker can be judged by the latency it costs on
// the same machine in the same minutes:
//
//	go run ./experiments/cmd/latency-ab --setting produce.coalesce.max.us --values 0,1000 --rounds 2
//	go run ./experiments/cmd/latency-ab --setting producer:socket.nagle.disable --values true,false
//
// Each round runs every value in order; each value runs every flush setting
// of figure 7 with a broker of its own (internal/kafkaproc, the shipped
// settings and the flush setting, plus --setting=value), a producer paced
// at --rate, one message per request, and beside it the unpaced batch-1
// producer's rate. Every line is one flush setting at one value.
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
	"time"

	"github.com/kafkarepro/kafkarepro/experiments/latency"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "latency-ab:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("latency-ab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	setting := fs.String("setting", "produce.coalesce.max.us", "the server.properties key to vary, or producer:KEY for a producer property (producer:socket.nagle.disable)")
	values := fs.String("values", "0,1000", "comma-separated values of --setting, measured in this order every round")
	rounds := fs.Int("rounds", 2, "rounds over the values")
	rate := fs.Int("rate", 100_000, "the paced producer's messages per second (reproduce uses half our batch-1 rate, at most 100,000)")
	duration := fs.Duration("duration", 10*time.Second, "paced phase per flush setting (at least five flush periods)")
	unpaced := fs.Int("unpaced", 500_000, "messages of the unpaced batch-1 producer per flush setting")
	size := fs.Int("message-size", 200, "payload bytes")
	if err := fs.Parse(args); err != nil {
		return err
	}
	vals := strings.Split(*values, ",")
	if *setting == "" || len(vals) == 0 || *rounds < 1 {
		return fmt.Errorf("need a --setting, --values and --rounds >= 1")
	}
	tmp, bin, err := kafkaproc.BuildTemp(ctx, "latency-ab-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for round := 1; round <= *rounds; round++ {
		for _, v := range vals {
			v = strings.TrimSpace(v)
			broker, prod := latency.SplitProducer(map[string]string{*setting: v}, nil)
			_, err := latency.Run(ctx, latency.Config{
				Rate: *rate, Duration: *duration, Unpaced: *unpaced, Size: *size,
				Start: kafkaproc.Launcher(bin, filepath.Join(tmp, fmt.Sprintf("round%d-%s", round, v)), localsvc.Host{},
					broker),
				Producer: prod,
				Progress: func(s string) { fmt.Fprintf(stdout, "round %d %s=%s %s\n", round, *setting, v, s) },
			})
			if err != nil {
				return fmt.Errorf("round %d, %s=%s: %w", round, *setting, v, err)
			}
		}
	}
	return nil
}

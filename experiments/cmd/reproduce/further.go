package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments"
	"github.com/kafkarepro/kafkarepro/experiments/compression"
	"github.com/kafkarepro/kafkarepro/experiments/latency"
	"github.com/kafkarepro/kafkarepro/experiments/protocols"
	"github.com/kafkarepro/kafkarepro/experiments/replication"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// furtherExperiment is one experiment beyond §5's, in a package of its own
// (experiments/compression, latency, replication, protocols). It runs after the §5
// tests when its flag asks for it, writes its part of the summary (with its
// error, if it failed, so that REPORT.md says so), and returns the error,
// which the run records under the experiment's name.
type furtherExperiment struct {
	name string
	on   bool
	run  func(ctx context.Context, sum *experiments.Summary) error
}

// further are the further experiments, in the order a run makes them.
func further(o options, stderr io.Writer) []furtherExperiment {
	return []furtherExperiment{
		{"compression", o.compression > 0, func(ctx context.Context, sum *experiments.Summary) error {
			fmt.Fprintf(stderr, "reproduce: compression experiment, %d messages per codec\n", o.compression)
			c, err := runCompression(ctx, o.host, o.compression, stderr)
			sum.Compression = withError(c, err, func(c *compression.Result) *string { return &c.Error })
			return err
		}},
		{"latency", o.latency > 0, func(ctx context.Context, sum *experiments.Summary) error {
			l, err := runLatency(ctx, o, sum, stderr)
			sum.Latency = withError(l, err, func(l *latency.Result) *string { return &l.Error })
			return err
		}},
		{"replication", o.replication > 0, func(ctx context.Context, sum *experiments.Summary) error {
			fmt.Fprintf(stderr, "reproduce: replication experiment (figure 6), %d messages per mode\n", o.replication)
			r, err := runReplication(ctx, o.host, o.replication, o.size, o.latencyBaseline, stderr)
			sum.Replication = withError(r, err, func(r *replication.Result) *string { return &r.Error })
			return err
		}},
		{"protocols", o.protocols > 0, func(ctx context.Context, sum *experiments.Summary) error {
			fmt.Fprintf(stderr, "reproduce: the Kafka protocol beside the paper's, %d messages per path\n", o.protocols)
			r, err := runProtocols(ctx, o, stderr)
			sum.Protocols = withError(r, err, func(r *protocols.Result) *string { return &r.Error })
			return err
		}},
	}
}

// withError returns an experiment's result, or an empty one if it failed
// before it measured anything, with the failure in the field errField
// points at, which REPORT.md shows.
func withError[R any](r *R, err error, errField func(*R) *string) *R {
	if r == nil {
		r = new(R)
	}
	if err != nil {
		*errField(r) = err.Error()
	}
	return r
}

// runCompression runs the compression experiment against a broker process
// of its own, started with the shipped settings by the one launcher
// (internal/kafkaproc) on the servers' host (the server host over a link),
// so its CPU time is the broker's alone.
func runCompression(ctx context.Context, host localsvc.Host, n int, stderr io.Writer) (*compression.Result, error) {
	tmp, bin, err := kafkaproc.BuildTemp(ctx, "reproduce-compression.")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	b, err := kafkaproc.Start(ctx, kafkaproc.Options{Bin: bin, Dir: filepath.Join(tmp, "broker"), Host: host})
	if err != nil {
		return nil, err
	}
	c, err := compression.Run(ctx, b.Addr(), b.Pid(), n, func(s string) { fmt.Fprintln(stderr, "reproduce:", s) })
	if c != nil {
		c.BrokerSettings = b.Settings()
	}
	return c, errors.Join(err, b.Stop())
}

// runLatency runs figure 7's experiment, one broker process per flush
// setting through the one launcher (internal/kafkaproc), on the servers'
// host (the server host over a link). Its producer runs at --latency-rate,
// or at half the rate our batch-1 producer reached in this run, well under
// what it can sustain so that the delay measured is the flush policy's and
// not a queue's, at most 100,000 msg/s.
func runLatency(ctx context.Context, o options, sum *experiments.Summary, stderr io.Writer) (*latency.Result, error) {
	rate := o.latencyRate
	if rate <= 0 {
		rate = 20_000
		for _, a := range sum.Averages {
			if a.System == compare.Ours && a.Test == "producer" && a.Batch == 1 && a.OK {
				rate = min(100_000, int(a.MsgPerS/2))
			}
		}
	}
	tmp, bin, err := kafkaproc.BuildTemp(ctx, "reproduce-latency.")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	unpaced := 500_000
	if o.messages < 1_000_000 {
		unpaced = 50_000
	}
	again := ""
	if o.latencyBaseline != nil {
		again = ", each setting again with " + fmt.Sprint(o.latencyBaseline)
	}
	fmt.Fprintf(stderr, "reproduce: latency experiment (figure 7), %d msg/s for %v per setting%s\n", rate, o.latency, again)
	return latency.Run(ctx, latency.Config{
		Rate: rate, Duration: o.latency, Unpaced: unpaced, Size: o.size,
		Start:    kafkaproc.Launcher(bin, tmp, o.host, nil),
		Baseline: o.latencyBaseline,
		Progress: func(s string) { fmt.Fprintln(stderr, "reproduce:", s) },
	})
}

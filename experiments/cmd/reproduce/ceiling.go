package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments"
	"github.com/kafkarepro/kafkarepro/experiments/ceiling"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
	"github.com/kafkarepro/kafkarepro/internal/stats"
)

// consumerRounds is how many turns the consumer probe and our consumer
// take (ceilingRun): each lasts about a second at the paper's scale, and
// on a small shared machine one such reading of either moves by a third
// from one turn to the next, so REPORT.md sets the medians of three side
// by side.
const consumerRounds = 3

// ceilingRun is the machine's ceiling measured during one reproduce run.
type ceilingRun struct {
	rows []experiments.CeilingRow
	err  error
}

// afterConsumer is experiments.Config.AfterConsumer for our system: the
// consumer probe in turns with our consumer reading figure 5's topic
// again, through the same adapter and the same measurement
// (experiments.RunConsumer), while our broker still runs. cfg is the
// run's configuration, read when the hook runs.
func (c *ceilingRun) afterConsumer(o options, cfg *experiments.Config, stderr io.Writer) func(context.Context, string, compare.System, string, measure.Result) {
	return func(ctx context.Context, system string, sys compare.System, topic string, test measure.Result) {
		if system != compare.Ours || !test.OK() {
			return // rest measures the consumer probe alone
		}
		again := func(ctx context.Context) (float64, error) {
			r := experiments.RunConsumer(ctx, *cfg, sys, system, topic, system+" consumer again, beside the probe")
			if !r.OK() {
				return 0, fmt.Errorf("our consumer reading %s again: %s", topic, r.Error)
			}
			return r.MsgPerS, nil
		}
		c.measure(ctx, o, stderr, []string{ceiling.Consumer}, again)
	}
}

// rest measures the probes afterConsumer did not (all three when our
// consumer test did not complete), after our system's tests.
func (c *ceilingRun) rest(ctx context.Context, o options, stderr io.Writer) {
	var probes []string
	for _, p := range ceiling.Probes {
		if !slices.ContainsFunc(c.rows, func(r experiments.CeilingRow) bool { return r.Probe == p }) {
			probes = append(probes, p)
		}
	}
	c.measure(ctx, o, stderr, probes, nil)
}

// measure runs probes (after a failed one, none) and keeps their rows in
// the order of ceiling.Probes.
func (c *ceilingRun) measure(ctx context.Context, o options, stderr io.Writer, probes []string, again func(context.Context) (float64, error)) {
	if c.err != nil || len(probes) == 0 {
		return
	}
	rows, err := measureCeiling(ctx, o, stderr, probes, again)
	c.rows, c.err = append(c.rows, rows...), err
	slices.SortStableFunc(c.rows, func(a, b experiments.CeilingRow) int {
		return slices.Index(ceiling.Probes, a.Probe) - slices.Index(ceiling.Probes, b.Probe)
	})
}

// measureCeiling runs probes of the machine's ceiling with the run's
// message count (at least 1,000,000, so that a quick run's probes last
// more than their start). With again (our consumer's test, repeated) the
// consumer probe runs consumerRounds times, each followed by again, and
// its row holds the medians and every turn.
func measureCeiling(ctx context.Context, o options, stderr io.Writer, probes []string, again func(context.Context) (float64, error)) ([]experiments.CeilingRow, error) {
	dir, err := os.MkdirTemp("", "reproduce-ceiling.")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	cfg := ceiling.Config{Messages: int64(max(o.messages, 1_000_000)), MessageSize: o.size, Dir: dir}
	var rows []experiments.CeilingRow
	for _, p := range probes {
		turns := 1
		if p == ceiling.Consumer && again != nil {
			turns = consumerRounds
		}
		var row experiments.CeilingRow
		var rates, seconds, ours []float64 // the probe's, its seconds, ours, turn by turn
		for i := range turns {
			r, err := ceiling.Run(ctx, p, cfg)
			if err != nil {
				return rows, err
			}
			fmt.Fprintf(stderr, "reproduce: ceiling %s: %s\n", p, ceiling.Describe(r))
			if i == 0 {
				row = experiments.CeilingRow{Probe: r.Probe, PageCacheMB: r.CachedMBBefore}
			}
			rates, seconds = append(rates, r.MsgPerS), append(seconds, r.Seconds)
			if turns == 1 {
				continue
			}
			rate, err := again(ctx)
			if err != nil {
				return rows, err
			}
			ours = append(ours, rate)
			row.Rounds = append(row.Rounds, experiments.CeilingRound{ProbeMsgPerS: r.MsgPerS, OursMsgPerS: rate})
			fmt.Fprintf(stderr, "reproduce: ceiling %s, round %d of %d: ours %.0f msg/s, %.0f%% of the probe\n", p, i+1, turns, rate, 100*rate/r.MsgPerS)
		}
		row.MsgPerS, row.Seconds, row.OursMsgPerS = stats.Median(rates), stats.Median(seconds), stats.Median(ours)
		rows = append(rows, row)
	}
	return rows, nil
}

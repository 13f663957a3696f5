package experiments

import (
	"fmt"
	"strings"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/figure"
)

// CeilingRow is one probe of the machine's ceiling (package
// experiments/ceiling: the fastest this machine moves the workload doing
// only the unavoidable work), measured in the same run as our tests, with
// the test of ours it bounds.
type CeilingRow struct {
	Probe   string  `json:"probe"` // consumer, producer-batch50, producer-batch1
	MsgPerS float64 `json:"msg_per_s"`
	Seconds float64 `json:"seconds"`
	// PageCacheMB is the machine's page cache when the (first) probe started.
	PageCacheMB int64 `json:"page_cache_mb"`
	// Bounds names our test it bounds; TestMsgPerS is that test's rate in
	// this run's figure, OursMsgPerS ours beside the probe (the test's
	// rate, or with Rounds the median of its repeats) and Fraction
	// OursMsgPerS / MsgPerS (0 when it did not run).
	Bounds      string  `json:"bounds"`
	TestMsgPerS float64 `json:"test_msg_per_s"`
	OursMsgPerS float64 `json:"ours_msg_per_s"`
	Fraction    float64 `json:"fraction"`
	// Rounds are the turns of a probe run in turns with our test repeated
	// (the consumer's: the probe, then our consumer reading figure 5's
	// topic again); MsgPerS, Seconds and OursMsgPerS are then the medians
	// of the rounds. A test lasting about a second moves by a third from
	// one turn to the next on a small shared machine (the turns of any
	// REPORT.md show it), so one reading of each would say little.
	Rounds []CeilingRound `json:"rounds,omitempty"`
}

// CeilingRound is one turn: the probe, then ours.
type CeilingRound struct {
	ProbeMsgPerS float64 `json:"probe_msg_per_s"`
	OursMsgPerS  float64 `json:"ours_msg_per_s"`
}

// ceilingTests maps a probe to the test of ours it bounds.
var ceilingTests = map[string]struct {
	label string
	test  string
	batch int
}{
	"consumer":         {"kafka consumer", "consumer", 0},
	"producer-batch50": {"kafka producer, batch 50", "producer", 50},
	"producer-batch1":  {"kafka producer, batch 1", "producer", 1},
}

// AttachCeiling records the probes in s, each beside our test it bounds.
func AttachCeiling(s *Summary, rows []CeilingRow) {
	for i := range rows {
		r := &rows[i]
		t, ok := ceilingTests[r.Probe]
		if !ok {
			continue
		}
		r.Bounds = t.label
		for _, a := range s.Averages {
			if a.System == compare.Ours && a.Test == t.test && a.Batch == t.batch && a.OK {
				r.TestMsgPerS = a.MsgPerS
			}
		}
		if len(r.Rounds) == 0 {
			r.OursMsgPerS = r.TestMsgPerS
		}
		r.Fraction = 0
		if r.MsgPerS > 0 {
			r.Fraction = r.OursMsgPerS / r.MsgPerS
		}
	}
	s.Ceiling = rows
}

// ceilingsOf names the probes that bound a ratio of ours (Ratios' names).
func ceilingsOf(ratio string) []string {
	var probes []string
	if strings.Contains(ratio, "kafka_consumer") {
		probes = append(probes, "consumer")
	}
	if strings.Contains(ratio, "producer_b50") {
		probes = append(probes, "producer-batch50")
	}
	if strings.Contains(ratio, "producer_b1") || strings.Contains(ratio, "_over_b1") {
		probes = append(probes, "producer-batch1")
	}
	return probes
}

// ceilingNote is the ratio table's cell of the ceilings that bound ratio:
// "batch-1 ceiling 627,524 msg/s, ours 79% of it".
func ceilingNote(s *Summary, ratio string) string {
	var parts []string
	for _, p := range ceilingsOf(ratio) {
		for _, r := range s.Ceiling {
			if r.Probe == p {
				part := fmt.Sprintf("%s ceiling %s msg/s", p, figure.Commas(r.MsgPerS))
				if r.Fraction > 0 {
					part += fmt.Sprintf(", ours %.0f%% of it", 100*r.Fraction)
				}
				parts = append(parts, part)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// ceilingSection is REPORT.md's table of the probes.
func ceilingSection(s *Summary) string {
	if len(s.Ceiling) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n## The machine's ceiling (same run)\n\n")
	b.WriteString("The fastest this machine moves the workload doing only the unavoidable work (`experiments/ceiling`, `make ceiling`): ")
	b.WriteString("200-byte messages over loopback between two processes, one CRC per message on each side that must compute or check one. ")
	b.WriteString("`consumer`: sendfile(2) of a file of message sets to a reader that checks every CRC; `producer-batch50`: sets of 50 built with their CRCs, one write(2) each, to a reader that checks them and writes them to a file fsynced every 10,000 messages; `producer-batch1`: the same with one write(2) per message. ")
	b.WriteString("Every ratio above that involves our tests is bounded by these; the ratio table names them.\n\n")
	b.WriteString("| probe | ceiling msg/s | seconds | page cache at start | bounds | ours msg/s | ours / ceiling |\n|---|---|---|---|---|---|---|\n")
	for _, r := range s.Ceiling {
		ours, frac := "not run", ""
		if r.OursMsgPerS > 0 {
			ours, frac = figure.Commas(r.OursMsgPerS), fmt.Sprintf("%.0f%%", 100*r.Fraction)
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f | %s MB | %s | %s | %s |\n", r.Probe, figure.Commas(r.MsgPerS), r.Seconds,
			figure.Commas(float64(r.PageCacheMB)), r.Bounds, ours, frac)
	}
	for _, r := range s.Ceiling {
		if len(r.Rounds) > 0 {
			b.WriteString(roundsNote(r))
		}
	}
	b.WriteString(onceNote(s.Ceiling))
	for _, r := range s.Ceiling {
		if r.Fraction > 1 && s.network().IsLink() {
			fmt.Fprintf(&b, "\n**%s: ours is above the probe** (%.0f%%): ours ran over the link between two namespaces, the probe over loopback; the two paths cost a sender differently per write (\"Which claims hold over loopback and which over the link\" below).\n",
				r.Probe, 100*r.Fraction)
			continue
		}
		if r.Fraction > 1 && len(r.Rounds) > 0 {
			lo, hi := roundsSpread(r.Rounds)
			fmt.Fprintf(&b, "\n**%s: ours is above the probe** (%.0f%% on the medians of %d turns, %.0f–%.0f%% turn by turn): within the spread of the turns ours moves the workload as fast as the probe, so in this run ours is at the machine's ceiling, which the probe did not exceed.\n",
				r.Probe, 100*r.Fraction, len(r.Rounds), 100*lo, 100*hi)
			continue
		}
		if r.Fraction > 1 {
			fmt.Fprintf(&b, "\n**%s: ours is above the probe** (%.0f%%): in this run the probe did not reach the machine's ceiling, so it bounds nothing here (a probe lasting %.2f s on a shared machine; `make ceiling` repeats probes and tools in turns).\n",
				r.Probe, 100*r.Fraction, r.Seconds)
		}
	}
	return b.String()
}

// onceNote is the paragraph under the ceiling table that names the probes
// set beside ours once: one run of the probe against the figure's one pass,
// a reading of each side rather than the medians of turns.
func onceNote(rows []CeilingRow) string {
	var once []string
	for _, r := range rows {
		if len(r.Rounds) == 0 && r.OursMsgPerS > 0 {
			once = append(once, r.Probe)
		}
	}
	if len(once) == 0 {
		return ""
	}
	return fmt.Sprintf("\n**Once each**: %s ran once, beside the figure's one pass, so each such ratio is one reading of either side, not the medians of turns (`make ceiling` sets the medians of alternating rounds side by side).\n",
		strings.Join(once, " and "))
}

// roundsNote is the paragraph under the ceiling table that lists a probe's
// rounds and sets this run's figure beside the probe's median.
func roundsNote(r CeilingRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n**%s, in turns** (the probe, then ours reading the test's topic again as the test did; the table holds the medians):", r.Probe)
	for i, t := range r.Rounds {
		fmt.Fprintf(&b, " round %d probe %s, ours %s", i+1, figure.Commas(t.ProbeMsgPerS), figure.Commas(t.OursMsgPerS))
		if t.ProbeMsgPerS > 0 {
			fmt.Fprintf(&b, " (%.0f%%)", 100*t.OursMsgPerS/t.ProbeMsgPerS)
		}
		b.WriteString(";")
	}
	if r.TestMsgPerS > 0 && r.MsgPerS > 0 {
		fmt.Fprintf(&b, " the figure's own pass %s msg/s, %.0f%% of the probe's median.\n", figure.Commas(r.TestMsgPerS), 100*r.TestMsgPerS/r.MsgPerS)
	} else {
		b.WriteString(" the figure's own pass did not complete.\n")
	}
	return b.String()
}

// roundsSpread is the least and the largest of ours over the probe, turn
// by turn.
func roundsSpread(rounds []CeilingRound) (lo, hi float64) {
	for i, t := range rounds {
		f := 0.0
		if t.ProbeMsgPerS > 0 {
			f = t.OursMsgPerS / t.ProbeMsgPerS
		}
		if i == 0 || f < lo {
			lo = f
		}
		if i == 0 || f > hi {
			hi = f
		}
	}
	return lo, hi
}

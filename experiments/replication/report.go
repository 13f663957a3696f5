package replication

import (
	"fmt"
	"strings"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/latency"
)

// Section is REPORT.md's section on figure 6: the modes' table, the reference ratios beside
// ours, what bounds each mode (measured: CPU and waiting per process, and the brokers' profiles), and the
// speed targets.
func Section(r *Result) string {
	var b strings.Builder
	b.WriteString("## The price of replication (§6: `fig6_replication.png`)\n\n")
	if r.Error != "" {
		fmt.Fprintf(&b, "The experiment failed: %s\n\n", r.Error)
	}
	if len(r.Results) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "One producer sends %s messages of %d bytes (the paper's format) in batches of %d (with acks 1 and -1, %d batches in flight "+
		"on its connection unless the mode says one: max.in.flight.requests.per.connection), "+
		"to a topic of one partition on a cluster of three broker processes and ZooKeeper sharing this %d-core machine (%s), a fresh "+
		"cluster for each mode. The producer's rate runs until its last send returned and every answer was read "+
		"(acks 1 and -1); the ratios, Kreps' and the speed targets compare it. The second rate runs until the leader exposes the "+
		"last message (committed by every in-sync replica and flushed), which the last flush weighs on in a short run. "+
		"Latency is one acknowledged batch, from its send until the producer had read its answer.\n\n",
		figure.Commas(float64(r.Messages)), r.MessageSize, r.Batch, InFlight, r.Cores, r.BrokerSettings)
	b.WriteString("| mode | producer msg/s | × 1 replica | msg/s until exposed | × | p50 ms | p99 ms | p99.9 ms | CPU µs/msg: producer, brokers 0 (leader), 1, 2 | cores busy | cores waiting | load |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, x := range r.Results {
		if x.Error != "" {
			fmt.Fprintf(&b, "| %s | failed: %s |||||||||||\n", x.Mode.Name, figure.OneLine(x.Error))
			continue
		}
		lat := "| – | – | –"
		if x.Mode.Acks != 0 {
			lat = fmt.Sprintf("| %.2f | %.2f | %.2f", x.P50Ms, x.P99Ms, x.P999Ms)
		}
		cpu, busy, waiting := "n/a", "n/a", "n/a"
		if x.CPUMeasured && x.Test.Msgs > 0 {
			var us []string
			for _, c := range x.CPU {
				us = append(us, fmt.Sprintf("%.1f", c.RunSeconds*1e6/float64(x.Test.Msgs)))
			}
			cpu = strings.Join(us, ", ")
			bz, wt := x.CoresBusy()
			busy, waiting = fmt.Sprintf("%.2f", bz), fmt.Sprintf("%.2f", wt)
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f | %s | %.2f %s | %s | %s | %s | %s |\n", x.Mode.Name, figure.Commas(x.Test.SendMsgPerS), x.Ratio,
			figure.Commas(x.Test.MsgPerS), x.StoredRatio, lat, cpu, busy, waiting, x.Load)
	}
	b.WriteString("\n| 3 replicas, against 1 replica | acks=1 (asynchronous) | acks=-1 (synchronous) |\n|---|---|---|\n")
	b.WriteString("| Kreps 2014: three machines, a producer with many requests in flight | 0.96× | 0.51× |\n")
	ratio := func(name string) string {
		if x, ok := r.Mode(name); ok && x.Error == "" {
			return fmt.Sprintf("%.2f×", x.Ratio)
		}
		return "–"
	}
	fmt.Fprintf(&b, "| this run: one machine of %d cores, %d batches in flight | %s | %s |\n", r.Cores, InFlight, ratio("3 replicas, acks=1"), ratio("3 replicas, acks=-1"))
	fmt.Fprintf(&b, "| this run, one batch in flight (the §5 producer) | – | %s |\n\n", ratio("3 replicas, acks=-1, 1 in flight"))

	b.WriteString("What bounds each mode, from the measurements above (schedstat: CPU time of each process, and the time its threads were ready to run but waited for a core):\n\n")
	for _, x := range r.Results {
		if x.Error == "" {
			fmt.Fprintf(&b, "- %s\n", bound(x, r.Cores, r.Batch))
		}
	}
	if x, ok := r.Mode("3 replicas, acks=-1"); ok && len(x.Profiles) > 0 {
		b.WriteString("\nThe leader's and a follower's CPU profile during the acks=-1 mode (`go tool pprof -top`; every mode's are in summary.json):\n\n")
		for _, id := range []string{"0", "1"} {
			if p := x.Profiles[id]; p != "" {
				fmt.Fprintf(&b, "broker %s:\n\n```\n%s\n```\n\n", id, p)
			}
		}
	}
	b.WriteString(baselineSection(r))
	lines, _ := r.Checks()
	b.WriteString("\nSpeed targets (the same run):\n\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "- %s\n", l)
	}
	b.WriteString("\n")
	return b.String()
}

// bound says in one sentence what the measurements show bounds a mode: the cores (busy
// nearly all the time, threads waiting) or the round trips of the one batch in flight.
func bound(x ModeResult, cores, batch int) string {
	s := x.Mode.Name + ": "
	if !x.CPUMeasured {
		return s + "not measured (no schedstat)"
	}
	busy, waiting := x.CoresBusy()
	s += fmt.Sprintf("%.2f of %d cores busy, %.2f cores' worth of threads waiting", busy, cores, waiting)
	if busy >= 0.85*float64(cores) {
		s += ": the cores bound it"
	}
	if x.Mode.Acks != 0 && x.Test.Msgs > 0 && x.Test.Seconds > 0 {
		perBatch := x.Test.Seconds / (float64(x.Test.Msgs) / float64(batch)) * 1000
		if x.Mode.InFlight > 1 {
			s += fmt.Sprintf("; a batch every %.3f ms on average, each answered %.2f ms (p50) after its send, %d in flight", perBatch, x.P50Ms, x.Mode.InFlight)
		} else {
			s += fmt.Sprintf("; each batch took %.2f ms on average (p50 %.2f ms), waiting for its answer before the next is sent", perBatch, x.P50Ms)
		}
	}
	s += windowBound(x, batch) + cpuBound(x, cores)
	var top []string
	for _, c := range x.CPU {
		if c.RunSeconds > 0 {
			top = append(top, fmt.Sprintf("%s %.2f s", c.Name, c.RunSeconds))
		}
	}
	return s + " (CPU: " + strings.Join(top, ", ") + fmt.Sprintf(" in %.2f s)", x.Test.Seconds)
}

// windowBound is Little's law for an acknowledged mode: with w batches in flight and a mean latency L,
// the producer cannot send faster than w × batch / L messages a second; measured near that, the window
// and the latency of one commit bound the mode, not the cores.
func windowBound(x ModeResult, batch int) string {
	if x.Mode.Acks == 0 || x.MeanMs <= 0 || x.Test.SendMsgPerS <= 0 {
		return ""
	}
	w := max(x.Mode.InFlight, 1)
	limit := float64(w*batch) / (x.MeanMs / 1000)
	return fmt.Sprintf("; Little's law: %d in flight / %.2f ms mean latency = at most %s msg/s, sent %s (%.0f%% of it)",
		w, x.MeanMs, figure.Commas(limit), figure.Commas(x.Test.SendMsgPerS), 100*x.Test.SendMsgPerS/limit)
}

// cpuBound is what the processes' CPU per message allows on the machine's cores if they were kept busy
// all the time: the mode's rate cannot pass cores / (the CPU all processes spend on one message).
func cpuBound(x ModeResult, cores int) string {
	perMsg, limit := x.CPULimit(cores)
	if limit <= 0 || x.Test.MsgPerS <= 0 {
		return ""
	}
	return fmt.Sprintf("; all processes spent %.2f µs of CPU per message, so %d cores allow at most %s msg/s (%.0f%% reached)",
		perMsg*1e6, cores, figure.Commas(limit), 100*x.Test.MsgPerS/limit)
}

// baselineSection sets each acks=-1 mode's latency beside the same mode's with the baseline settings
// (Result.Baseline), in figure 7's cells and under its rule (latency.BesideBaseline); "" without a baseline.
func baselineSection(r *Result) string {
	if len(r.Baseline) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nThe acks=-1 modes again with `%s` over the settings above (the baseline, as figure 7's; a `producer:` key is a property of the producer), each right after its own on a cluster of its own; a percentile holds when it is at most 10%% above the baseline's (or lower):\n\n", r.BaselineProps)
	b.WriteString("| mode | msg/s baseline | msg/s | p50 ms baseline | p50 ms | after / before | p99 ms baseline | p99 ms | after / before | both within 10% or better |\n|---|---|---|---|---|---|---|---|---|---|\n")
	for _, base := range r.Baseline {
		x, ok := r.Mode(base.Mode.Name)
		if !ok || x.Error != "" || base.Error != "" || base.P50Ms <= 0 || base.P99Ms <= 0 {
			fmt.Fprintf(&b, "| %s | not measured: %s |||||||||\n", base.Mode.Name, figure.OneLine(base.Error+x.Error))
			continue
		}
		cells, ok := latency.BesideBaseline(x.P50Ms, x.P99Ms, base.P50Ms, base.P99Ms, 2)
		holds := "no"
		if ok {
			holds = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", base.Mode.Name,
			figure.Commas(base.Test.SendMsgPerS), figure.Commas(x.Test.SendMsgPerS), cells, holds)
	}
	return b.String()
}

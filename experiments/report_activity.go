package experiments

import (
	"strings"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
)

// writeMachineActivity writes REPORT.md's tables of what the machine did in
// each tenth of each producer test (machine.Tenths), beside the test's own
// rate in that tenth, so that a tenth whose rate falls can be read against
// the CPU time, steal and stalls of the same moments.
func writeMachineActivity(w func(string, ...any), s *Summary) {
	have := false
	for _, r := range s.Systems {
		for _, t := range r.Producer {
			have = have || len(t.Machine) > 0
		}
	}
	if !have {
		return
	}
	w("\n### The machine during each producer test, by tenth of its time\n\n")
	w("Sampled every 50 ms from `/proc/stat` (the share of both CPUs' time: user, system with interrupts, idle, waiting for I/O, and steal, time the hypervisor gave to other guests), `/proc/pressure` (milliseconds in the tenth in which some task stalled for want of CPU, memory or I/O) and `/proc/vmstat` (page-cache bytes dirty and under writeback at the tenth's end); on a guest whose kernel counts it, \"reported MB\" is the freed memory the guest handed back to its host in the tenth (`reported_kib` of free page reporting), which the page cache's next writes must wait for the host to map again. \"msg/s\" is the test's own rate in the tenth, from its series (`series.csv`). A tenth slower than the rest with the same CPU busy and no steal, stall or report is the system's own work; one with steal, I/O wait, a stall or memory reported is the machine's.\n\n")
	for _, r := range s.Systems {
		for _, t := range r.Producer {
			if len(t.Machine) == 0 {
				continue
			}
			reported := false
			for _, a := range t.Machine {
				reported = reported || a.ReportedMB != nil
			}
			w("**%s producer, batch %d** (%s msg/s over the test):\n\n", t.System, t.Batch, figure.Commas(t.MsgPerS))
			head, rule := "| tenth | ends s | msg/s | user % | system % | idle % | iowait % | steal % | CPU stall ms | memory stall ms | I/O stall ms | dirty MB | writeback MB |", "|"+strings.Repeat("---|", 13)
			if reported {
				head, rule = head+" reported MB |", rule+"---|"
			}
			w("%s\n%s\n", head, rule)
			start := 0.0
			for i, a := range t.Machine {
				w("| %d | %.2f | %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f |", i+1, a.End,
					tenthRate(t, s.MessageSize, start, a.End), a.User, a.System, a.Idle, a.IOWait, a.Steal,
					a.CPUStallMs, a.MemoryStallMs, a.IOStallMs, a.DirtyMB, a.WritebackMB)
				if reported {
					if a.ReportedMB != nil {
						w(" %.0f |", *a.ReportedMB)
					} else {
						w(" — |")
					}
				}
				w("\n")
				start = a.End
			}
			w("\n")
		}
	}
}

// tenthRate is the test's rate between from and to seconds, from its series
// (MB sent, interpolated between points); "—" without one.
func tenthRate(t measure.Result, size int, from, to float64) string {
	if len(t.Series) == 0 || size <= 0 || to <= from {
		return "—"
	}
	mb := (mbAt(t.Series, to) - mbAt(t.Series, from)) * 1e6
	return figure.Commas(mb / float64(size) / (to - from))
}

// mbAt is the payload MB a series had sent at s seconds, linear between
// its points, from 0 at 0 s, and its last value past its end.
func mbAt(series []measure.Point, s float64) float64 {
	prevS, prevMB := 0.0, 0.0
	for _, p := range series {
		if p.Seconds >= s {
			if p.Seconds == prevS {
				return p.MB
			}
			return prevMB + (p.MB-prevMB)*(s-prevS)/(p.Seconds-prevS)
		}
		prevS, prevMB = p.Seconds, p.MB
	}
	return prevMB
}

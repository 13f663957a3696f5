package experiments

import (
	"fmt"
	"strings"
)

// PlotReplication draws figure 6 in the manner of figure 4: one line per mode, messages leaving the
// producer per second against the payload sent so far, and each mode's average until the leader exposed
// the last message (dashed), in the palette's colours for the modes.
func PlotReplication(path string, r *Replication) error {
	if r == nil || len(r.Results) == 0 {
		return nil
	}
	var tests []TestResult
	for _, x := range r.Results {
		t := x.Test
		t.Error = x.Error
		tests = append(tests, t)
	}
	title := fmt.Sprintf("The price of replication (§6, figure 6): %s messages of %d bytes, batch %d", commas(float64(r.Messages)), r.MessageSize, r.Batch)
	return plotThroughput(path, title, replicationCaption(r), tests)
}

// replicationCaption says what figure 6's lines are and how the modes compare.
func replicationCaption(r *Replication) string {
	var b strings.Builder
	fmt.Fprintf(&b, "One producer (batches of %d; with acks 1 and -1, %d in flight unless the mode says one) against three broker processes and ZooKeeper on this %d-core machine. "+
		"Solid: messages leaving the producer per second, over a moving window. Dashed: each mode's average until the leader "+
		"exposes the last message (committed by every in-sync replica and flushed). ", r.Batch, ReplicationInFlight, r.Cores)
	var parts []string
	for _, x := range r.Results {
		if x.Error != "" {
			parts = append(parts, x.Mode.Name+" failed")
			continue
		}
		s := fmt.Sprintf("%s %.2f×", x.Mode.Name, x.Ratio)
		if x.Mode.Acks != 0 {
			s += fmt.Sprintf(" (p99 %.1f ms per batch)", x.P99Ms)
		}
		parts = append(parts, s)
	}
	fmt.Fprintf(&b, "The producer's rate against one replica: %s. Kreps (2014, three machines, a pipelining producer): acks=1 0.96×, acks=-1 0.51×.", strings.Join(parts, ", "))
	return b.String()
}

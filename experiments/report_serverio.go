package experiments

import (
	"fmt"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
)

// paperDiskSentence is §5's observation that the server-I/O table checks.
const paperDiskSentence = `"We observed that one of the ActiveMQ threads was busy writing KahaDB pages to disks during this test. In contrast, there were no disk write activities on the Kafka broker."`

// writeServerIO writes REPORT.md's table of what each server wrote during
// the consumer test, one column per system, beside the paper's sentence.
func writeServerIO(w func(string, ...any), s *Summary) {
	w("\n### Server disk writes during the consumer test\n\n")
	w("Measured from `/proc/<pid>/io` of each server process and its descendants, sampled just before and just after the consumer test. `write_bytes` counts bytes sent to storage, charged to the process when it dirties a page-cache page, so a write the kernel flushes later still counts, to the writer. `wchar` counts every byte passed to a write-like system call, sockets and sendfile included: in a consumer test it holds the messages sent to the consumer and is not disk I/O. A server in a container is not measured.\n\n")
	w("| | paper (§5)")
	for _, r := range s.Systems {
		w(" | %s", r.Name)
	}
	w(" |\n|---|---")
	for range s.Systems {
		w("|---")
	}
	w("|\n")
	first := true // the first row gives the reason a system was not measured
	row := func(label, paperText string, cell func(t *measure.Result, io *measure.ServerIO) string) {
		w("| %s | %s", label, paperText)
		for _, r := range s.Systems {
			switch {
			case r.Consumer == nil:
				w(" | consumer not run")
			case r.Consumer.ServerIO == nil || !r.Consumer.ServerIO.Measured:
				note := measure.NotMeasured
				if first && r.Consumer.ServerIO != nil && r.Consumer.ServerIO.Note != "" {
					note = r.Consumer.ServerIO.Note
				}
				w(" | %s", figure.OneLine(note))
			default:
				w(" | %s", cell(r.Consumer, r.Consumer.ServerIO))
			}
		}
		w(" |\n")
		first = false
	}
	row("server disk writes during the consumer test (`write_bytes`)", paperDiskSentence,
		func(_ *measure.Result, io *measure.ServerIO) string { return bytesText(io.WriteBytes) })
	row("disk bytes written per message consumed", "—", func(t *measure.Result, io *measure.ServerIO) string {
		if t.Msgs <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", float64(io.WriteBytes)/float64(t.Msgs))
	})
	row("all bytes passed to write calls, sockets included (`wchar`)", "—",
		func(_ *measure.Result, io *measure.ServerIO) string { return bytesText(io.WChar) })
	row("processes summed", "—", func(_ *measure.Result, io *measure.ServerIO) string { return fmt.Sprint(io.Processes) })
}

// bytesText is an exact byte count with its size in decimal units.
func bytesText(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%s B (%.1f kB)", figure.Commas(float64(n)), float64(n)/1e3)
	default:
		return fmt.Sprintf("%s B (%.1f MB)", figure.Commas(float64(n)), float64(n)/1e6)
	}
}

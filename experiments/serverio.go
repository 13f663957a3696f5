package experiments

import (
	"errors"
	"fmt"

	"github.com/kafkarepro/kafkarepro/compare"
)

// ServerIO is what the server's processes wrote during one test: the growth
// of their /proc/<pid>/io counters (compare.IOCounters) from just before to
// just after the test. §5 says of the consumer test: "We observed that one of
// the ActiveMQ threads was busy writing KahaDB pages to disks during this
// test. In contrast, there were no disk write activities on the Kafka broker."
type ServerIO struct {
	// Measured is false when the server's process could not be read: it
	// ran in a container, or /proc said no (Note says why).
	Measured bool `json:"measured"`
	// WriteBytes is the growth of write_bytes: bytes sent (or dirtied in
	// the page cache, to be sent) to storage.
	WriteBytes int64 `json:"write_bytes"`
	// CancelledWriteBytes is the growth of cancelled_write_bytes: dirtied
	// bytes whose file was truncated or deleted before they were written.
	CancelledWriteBytes int64 `json:"cancelled_write_bytes"`
	// WChar is the growth of wchar: every byte passed to a write-like
	// system call, sockets included, so for a consumer test it holds the
	// messages sent to the consumer; it is not disk I/O.
	WChar int64 `json:"wchar"`
	// Processes is how many processes were summed after the test (the
	// server and its descendants).
	Processes int    `json:"processes,omitempty"`
	Note      string `json:"note,omitempty"`
}

// notMeasured is the text of the CSV and REPORT.md cells of a ServerIO that
// was not measured.
const notMeasured = "not measured"

// ioProbe reads the server's counters through compare.ProcessIO if the
// system offers it. Start samples before the test, Finish after it.
type ioProbe struct {
	p      compare.ProcessIO
	before compare.IOCounters
	err    error
}

func startIOProbe(sys compare.System) *ioProbe {
	p, ok := sys.(compare.ProcessIO)
	if !ok {
		return &ioProbe{err: compare.ErrNoProcessIO}
	}
	pr := &ioProbe{p: p}
	pr.before, pr.err = p.IOCounters()
	return pr
}

// Finish samples the counters again and returns the difference.
func (pr *ioProbe) Finish() *ServerIO {
	err := pr.err
	var after compare.IOCounters
	if err == nil {
		after, err = pr.p.IOCounters()
	}
	switch {
	case errors.Is(err, compare.ErrNoProcessIO):
		return &ServerIO{Note: notMeasured + ": the server is not a process on this machine (e.g. it runs in a container)"}
	case err != nil:
		return &ServerIO{Note: fmt.Sprintf("%s: %v", notMeasured, err)}
	}
	return &ServerIO{Measured: true,
		WriteBytes:          after.WriteBytes - pr.before.WriteBytes,
		CancelledWriteBytes: after.CancelledWriteBytes - pr.before.CancelledWriteBytes,
		WChar:               after.WChar - pr.before.WChar,
		Processes:           after.Processes}
}

// cells are the CSV cells server_write_bytes and server_wchar.
func (s *ServerIO) cells() [2]string {
	if s == nil || !s.Measured {
		return [2]string{notMeasured, notMeasured}
	}
	return [2]string{fmt.Sprint(s.WriteBytes), fmt.Sprint(s.WChar)}
}

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
	row := func(label, paperText string, cell func(t *TestResult, io *ServerIO) string) {
		w("| %s | %s", label, paperText)
		for _, r := range s.Systems {
			switch {
			case r.Consumer == nil:
				w(" | consumer not run")
			case r.Consumer.ServerIO == nil || !r.Consumer.ServerIO.Measured:
				note := notMeasured
				if first && r.Consumer.ServerIO != nil && r.Consumer.ServerIO.Note != "" {
					note = r.Consumer.ServerIO.Note
				}
				w(" | %s", oneLine(note))
			default:
				w(" | %s", cell(r.Consumer, r.Consumer.ServerIO))
			}
		}
		w(" |\n")
		first = false
	}
	row("server disk writes during the consumer test (`write_bytes`)", paperDiskSentence,
		func(_ *TestResult, io *ServerIO) string { return bytesText(io.WriteBytes) })
	row("disk bytes written per message consumed", "—", func(t *TestResult, io *ServerIO) string {
		if t.Msgs <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.2f", float64(io.WriteBytes)/float64(t.Msgs))
	})
	row("all bytes passed to write calls, sockets included (`wchar`)", "—",
		func(_ *TestResult, io *ServerIO) string { return bytesText(io.WChar) })
	row("processes summed", "—", func(_ *TestResult, io *ServerIO) string { return fmt.Sprint(io.Processes) })
}

// bytesText is an exact byte count with its size in decimal units.
func bytesText(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1_000_000:
		return fmt.Sprintf("%s B (%.1f kB)", commas(float64(n)), float64(n)/1e3)
	default:
		return fmt.Sprintf("%s B (%.1f MB)", commas(float64(n)), float64(n)/1e6)
	}
}

package measure

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

// NotMeasured is the text of the CSV and REPORT.md cells of a ServerIO that
// was not measured.
const NotMeasured = "not measured"

// IOProbe reads the server's counters through compare.ProcessIO if the
// system offers it: StartIOProbe samples them before the test, Finish after.
type IOProbe struct {
	p      compare.ProcessIO
	before compare.IOCounters
	err    error
}

// StartIOProbe samples sys's counters; a system that is not a process on
// this machine gives a probe whose Finish says so.
func StartIOProbe(sys compare.System) *IOProbe {
	p, ok := sys.(compare.ProcessIO)
	if !ok {
		return &IOProbe{err: compare.ErrNoProcessIO}
	}
	pr := &IOProbe{p: p}
	pr.before, pr.err = p.IOCounters()
	return pr
}

// Finish samples the counters again and returns the difference.
func (pr *IOProbe) Finish() *ServerIO {
	err := pr.err
	var after compare.IOCounters
	if err == nil {
		after, err = pr.p.IOCounters()
	}
	switch {
	case errors.Is(err, compare.ErrNoProcessIO):
		return &ServerIO{Note: NotMeasured + ": the server is not a process on this machine (e.g. it runs in a container)"}
	case err != nil:
		return &ServerIO{Note: fmt.Sprintf("%s: %v", NotMeasured, err)}
	}
	return &ServerIO{Measured: true,
		WriteBytes:          after.WriteBytes - pr.before.WriteBytes,
		CancelledWriteBytes: after.CancelledWriteBytes - pr.before.CancelledWriteBytes,
		WChar:               after.WChar - pr.before.WChar,
		Processes:           after.Processes}
}

// Cells are the CSV cells server_write_bytes and server_wchar.
func (s *ServerIO) Cells() [2]string {
	if s == nil || !s.Measured {
		return [2]string{NotMeasured, NotMeasured}
	}
	return [2]string{fmt.Sprint(s.WriteBytes), fmt.Sprint(s.WChar)}
}

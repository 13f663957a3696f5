package machine

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// This file is what the whole machine did during a test, tenth by tenth of
// its time: how its CPUs' time was spent (/proc/stat: user, system, idle,
// waiting for I/O, and stolen by the hypervisor for other guests), how long
// some task stalled for want of CPU, memory or I/O (/proc/pressure, "some"),
// how many page-cache bytes were dirty or being written back
// (/proc/vmstat), and, on a guest whose kernel counts it, how much freed
// memory it reported to its host (freepages.go: the page cache's next
// writes into those pages wait for the host to map them again). A test's
// rate that falls in one tenth can then be told apart: a tenth with as
// much CPU busy as the others and no stall is our work; one with steal,
// an I/O stall or memory reported is the machine's.

// cpuFields are the columns of /proc/stat's "cpu" line kept, in its order:
// user, nice, system, idle, iowait, irq, softirq, steal (USER_HZ ticks).
const cpuFields = 8

// ActivitySample is the machine's counters at one moment.
type ActivitySample struct {
	At  time.Time
	CPU [cpuFields]int64 // cumulative ticks: user nice system idle iowait irq softirq steal
	// Pressure is each resource's cumulative "some" stall in µs: CPU,
	// memory, I/O (zero where the kernel has no /proc/pressure).
	Pressure         [3]int64
	Dirty, Writeback int64 // bytes now (nr_dirty, nr_writeback pages)
	// Reported is the freed memory reported to the host so far, in bytes
	// (ReportedBytes); -1 where the kernel does not count it.
	Reported int64
}

// ReadActivity reads the counters; ok is false where /proc/stat cannot be
// read or parsed (another system).
func ReadActivity() (s ActivitySample, ok bool) {
	s.At = time.Now()
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return s, false
	}
	if s.CPU, ok = parseStatCPU(b); !ok {
		return s, false
	}
	for i, r := range [3]string{"cpu", "memory", "io"} {
		if b, err := os.ReadFile("/proc/pressure/" + r); err == nil {
			s.Pressure[i], _ = parsePressureSome(b)
		}
	}
	if b, err := os.ReadFile("/proc/vmstat"); err == nil {
		page := int64(os.Getpagesize())
		d, w := parseVMStat(b)
		s.Dirty, s.Writeback = d*page, w*page
	}
	s.Reported = ReportedBytes()
	return s, true
}

// parseStatCPU reads the first line of /proc/stat, "cpu  u n s i w x y z ...".
func parseStatCPU(b []byte) (cpu [cpuFields]int64, ok bool) {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := bytes.Fields(line)
	if len(f) < 1+cpuFields || string(f[0]) != "cpu" {
		return cpu, false
	}
	for i := range cpuFields {
		v, err := strconv.ParseInt(string(f[1+i]), 10, 64)
		if err != nil {
			return cpu, false
		}
		cpu[i] = v
	}
	return cpu, true
}

// parsePressureSome reads total= of the "some" line of a /proc/pressure file.
func parsePressureSome(b []byte) (int64, bool) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte("some ")) {
			continue
		}
		_, v, found := bytes.Cut(line, []byte("total="))
		if !found {
			return 0, false
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// parseVMStat reads nr_dirty and nr_writeback (pages) from /proc/vmstat.
func parseVMStat(b []byte) (dirty, writeback int64) {
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		k, v, _ := bytes.Cut(line, []byte(" "))
		var dst *int64
		switch string(k) {
		case "nr_dirty":
			dst = &dirty
		case "nr_writeback":
			dst = &writeback
		default:
			continue
		}
		*dst, _ = strconv.ParseInt(string(v), 10, 64)
	}
	return dirty, writeback
}

// ActivityTenth is one tenth of a test's time.
type ActivityTenth struct {
	End float64 `json:"end_s"` // seconds from the first sample to the tenth's end
	// Percent of all CPUs' time in the tenth.
	User   float64 `json:"user_pct"`   // user and nice
	System float64 `json:"system_pct"` // system, irq and softirq
	Idle   float64 `json:"idle_pct"`
	IOWait float64 `json:"iowait_pct"`
	Steal  float64 `json:"steal_pct"`
	// Milliseconds in the tenth in which some task stalled for CPU, memory, I/O.
	CPUStallMs    float64 `json:"cpu_stall_ms"`
	MemoryStallMs float64 `json:"memory_stall_ms"`
	IOStallMs     float64 `json:"io_stall_ms"`
	DirtyMB       float64 `json:"dirty_mb"` // at the tenth's end (10^6 bytes)
	WritebackMB   float64 `json:"writeback_mb"`
	// ReportedMB is the freed memory reported to the host in the tenth;
	// nil where the kernel does not count it.
	ReportedMB *float64 `json:"reported_mb,omitempty"`
}

// Tenths cuts the span from the first sample to the last into ten equal
// parts and gives each the counters' change over it (from the sample at or
// after its start to the one at or after its end). Fewer than 11 samples
// give nil: a tenth would not have one of its own.
func Tenths(s []ActivitySample) []ActivityTenth {
	ends := TenthEnds(len(s), func(i int) time.Time { return s[i].At })
	if ends == nil {
		return nil
	}
	first := s[0]
	out := make([]ActivityTenth, 0, 10)
	prev := first
	for _, j := range ends {
		cur := s[j]
		var d [cpuFields]int64
		var total int64
		for k := range cpuFields {
			d[k] = cur.CPU[k] - prev.CPU[k]
			total += d[k]
		}
		pct := func(ticks int64) float64 {
			if total <= 0 {
				return 0
			}
			return 100 * float64(ticks) / float64(total)
		}
		out = append(out, ActivityTenth{
			End:           cur.At.Sub(first.At).Seconds(),
			User:          pct(d[0] + d[1]),
			System:        pct(d[2] + d[5] + d[6]),
			Idle:          pct(d[3]),
			IOWait:        pct(d[4]),
			Steal:         pct(d[7]),
			CPUStallMs:    float64(cur.Pressure[0]-prev.Pressure[0]) / 1e3,
			MemoryStallMs: float64(cur.Pressure[1]-prev.Pressure[1]) / 1e3,
			IOStallMs:     float64(cur.Pressure[2]-prev.Pressure[2]) / 1e3,
			DirtyMB:       float64(cur.Dirty) / 1e6,
			WritebackMB:   float64(cur.Writeback) / 1e6,
		})
		if cur.Reported >= 0 && prev.Reported >= 0 {
			mb := float64(cur.Reported-prev.Reported) / 1e6
			out[len(out)-1].ReportedMB = &mb
		}
		prev = cur
	}
	return out
}

// StartActivity samples the machine now and then every interval until the
// sampler's Stop.
func StartActivity(every time.Duration) *Periodic[ActivitySample] {
	return StartPeriodic(every, ReadActivity)
}

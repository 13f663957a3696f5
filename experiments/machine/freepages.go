package machine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Free page reporting: what a freed page costs on a virtual machine.
//
// A guest kernel with free page reporting (virtio-balloon) hands pages it
// has freed back to its host, which unmaps them; the next write to such a
// page faults on the host, which maps it again, at several times the cost
// of the copy itself. With the guest's default parameters pages are
// reported as soon as they are free, so a test that writes into the page
// cache after memory was freed runs slower than one that writes into pages
// freed a moment before, and the figures that write (the producers, the
// producer probes, figure 6's replicas) move with the time since memory
// was last freed (docs/PERFORMANCE.md, "The machine"). The paper's
// machines had no such host.
//
// HoldFreedMemory asks the guest kernel to keep freed pages for a while
// before it reports them, for the length of a run, through the two
// parameters of this VM's kernel (not upstream Linux, which has only the
// reporting order): min_free_ms, how long a page must stay free before it
// is reported, and max_waiting_mib, how much may wait. Pages freed and
// written again within that time cost what they cost on a machine without
// a host. The host gets the memory back after the run, as before. Every
// report says whether the run held them.

// PageReportingDir is where the guest kernel's free page reporting
// parameters are (a variable for the tests).
var PageReportingDir = "/sys/module/page_reporting/parameters"

// The values HoldFreedMemory asks for: the longest wait this VM's kernel
// takes (300,000 ms; it refuses more), and up to 16 GiB waiting, less than
// the machine's 24 GiB.
const (
	HoldMinFreeMs     = 300000
	HoldMaxWaitingMiB = 16384
)

// FreePageReporting is the state of the guest's free page reporting.
type FreePageReporting struct {
	Present       bool  `json:"present"`         // the kernel reports free pages to a host
	Holdable      bool  `json:"holdable"`        // it has min_free_ms and max_waiting_mib
	MinFreeMs     int64 `json:"min_free_ms"`     // -1 where missing
	MaxWaitingMiB int64 `json:"max_waiting_mib"` // -1 where missing
	ReportedKiB   int64 `json:"reported_kib"`    // reported so far; -1 where missing
	// Held is true while HoldFreedMemory's values are in force; Before is
	// what they were (for the report), set by HoldFreedMemory.
	Held   bool   `json:"held"`
	Before string `json:"before,omitempty"`
	// WarmedMB is what the run wrote and deleted first (WarmFreedMemory),
	// in MB of 10^6 bytes.
	WarmedMB int64 `json:"warmed_mb,omitempty"`
}

// ReadFreePageReporting reads the parameters; a machine without free page
// reporting gives Present false.
func ReadFreePageReporting() FreePageReporting {
	var s FreePageReporting
	if _, err := os.Stat(filepath.Join(PageReportingDir, "page_reporting_order")); err != nil {
		return s
	}
	s.Present = true
	s.MinFreeMs = readParam("min_free_ms")
	s.MaxWaitingMiB = readParam("max_waiting_mib")
	s.ReportedKiB = readParam("reported_kib")
	s.Holdable = s.MinFreeMs >= 0 && s.MaxWaitingMiB >= 0
	s.Held = s.MinFreeMs >= HoldMinFreeMs && s.MaxWaitingMiB >= HoldMaxWaitingMiB
	return s
}

// ReportedBytes is the freed memory the guest has reported to its host
// since it booted (reported_kib, in bytes), -1 where the kernel does not
// count it. Its growth over a test is memory the page cache's next writes
// wait for the host to map again.
func ReportedBytes() int64 {
	if kib := readParam("reported_kib"); kib >= 0 {
		return kib << 10
	}
	return -1
}

func readParam(name string) int64 {
	b, err := os.ReadFile(filepath.Join(PageReportingDir, name))
	if err != nil {
		return -1
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// String is one line for a report: "held: freed pages are reported to the
// host after 300000 ms, at most 16384 MiB waiting (before the run: 0 ms,
// 1024 MiB)", or what the machine does instead.
func (s FreePageReporting) String() string {
	switch {
	case !s.Present:
		return "none: this kernel does not report freed pages to a host"
	case !s.Holdable:
		return "on, not controlled: freed pages go back to the host at once (this kernel has no min_free_ms/max_waiting_mib)"
	}
	line := fmt.Sprintf("freed pages are reported to the host after %d ms, at most %d MiB waiting", s.MinFreeMs, s.MaxWaitingMiB)
	if s.Held {
		line = "held: " + line
	} else {
		line = "not held: " + line
	}
	if s.Before != "" {
		line += " (before the run: " + s.Before + ")"
	}
	if s.WarmedMB > 0 {
		line += fmt.Sprintf("; %d MB written and deleted first, so the run writes into pages the host has mapped", s.WarmedMB)
	}
	return line
}

// HoldFreedMemory sets min_free_ms and max_waiting_mib to HoldMinFreeMs
// and HoldMaxWaitingMiB (root only) and returns the state it set and a
// function that puts the old values back. Where the kernel has no such
// parameters, or they are held already, it changes nothing and returns the
// state as it is, with a restore that does nothing; an error says which
// parameter could not be written, and nothing stays changed.
func HoldFreedMemory() (FreePageReporting, func() error, error) {
	s := ReadFreePageReporting()
	noop := func() error { return nil }
	if !s.Holdable || s.Held {
		// Already held (by the command that started this one, as make
		// ceiling starts make perf's): that one puts the values back.
		return s, noop, nil
	}
	old := []struct {
		name string
		val  int64
	}{{"min_free_ms", s.MinFreeMs}, {"max_waiting_mib", s.MaxWaitingMiB}}
	restore := func() error {
		var errs []error
		for _, p := range old {
			errs = append(errs, writeParam(p.name, p.val))
		}
		return errors.Join(errs...)
	}
	for _, p := range []struct {
		name string
		val  int64
	}{{"min_free_ms", HoldMinFreeMs}, {"max_waiting_mib", HoldMaxWaitingMiB}} {
		if err := writeParam(p.name, p.val); err != nil {
			return s, noop, errors.Join(err, restore())
		}
	}
	held := ReadFreePageReporting()
	held.Before = fmt.Sprintf("%d ms, %d MiB", s.MinFreeMs, s.MaxWaitingMiB)
	return held, restore, nil
}

func writeParam(name string, val int64) error {
	path := filepath.Join(PageReportingDir, name)
	if err := os.WriteFile(path, []byte(strconv.FormatInt(val, 10)), 0o644); err != nil {
		return fmt.Errorf("experiments: set free page reporting's %s to %d (needs root): %w", path, val, err)
	}
	return nil
}

// MaxWarm bounds what a run writes and deletes first (HoldForRun): 8 GiB,
// half of what HoldFreedMemory lets wait.
const MaxWarm = 8 << 30

// WarmFreedMemory writes a file of n bytes in dir and deletes it, so that
// n bytes of the page cache the run is about to fill are pages the host
// has mapped already: freed by the deletion, they stay in the guest while
// the parameters are held (HoldFreedMemory). Without it the first run after
// a pause, or after another command put the parameters back, writes into
// memory the host must fault in again. It returns the bytes it wrote and
// how long it took.
func WarmFreedMemory(dir string, n int64) (int64, time.Duration, error) {
	start := time.Now()
	f, err := os.CreateTemp(dir, "kafkarepro-warm-")
	if err != nil {
		return 0, 0, fmt.Errorf("experiments: warm freed memory in %s: %w", dir, err)
	}
	defer os.Remove(f.Name())
	buf := make([]byte, 1<<20)
	var written int64
	for written < n {
		m, err := f.Write(buf[:min(n-written, int64(len(buf)))])
		written += int64(m)
		if err != nil {
			f.Close()
			return written, 0, fmt.Errorf("experiments: warm freed memory: write %s: %w", f.Name(), err)
		}
	}
	if err := f.Close(); err != nil {
		return written, 0, fmt.Errorf("experiments: warm freed memory: %w", err)
	}
	if err := os.Remove(f.Name()); err != nil {
		return written, 0, fmt.Errorf("experiments: warm freed memory: %w", err)
	}
	return written, time.Since(start), nil
}

// HoldForRun is what make perf, make ceiling and reproduce do before they
// measure: with hold, HoldFreedMemory (a failure, as without root, is
// printed and the run goes on without it) and, if it took the hold,
// WarmFreedMemory of warm bytes (about what the run will write into the
// page cache; at most MaxWarm) in dir. It prints the state to w and returns it, with the
// function that puts the old values back (a restore that fails is printed
// too).
func HoldForRun(w io.Writer, hold bool, dir string, warm int64) (FreePageReporting, func()) {
	if !hold {
		s := ReadFreePageReporting()
		fmt.Fprintf(w, "free page reporting (not asked to hold): %s\n", s)
		return s, func() {}
	}
	s, restore, err := HoldFreedMemory()
	if err != nil {
		fmt.Fprintf(w, "free page reporting: could not hold it, measuring without: %v\n", err)
		s = ReadFreePageReporting()
	}
	fmt.Fprintf(w, "free page reporting: %s\n", s)
	// Only the command that took the hold warms: one it started (make
	// ceiling's make perf) finds the memory warmed already.
	if warm = min(warm, MaxWarm); s.Held && s.Before != "" && warm > 0 {
		written, took, err := WarmFreedMemory(dir, warm)
		if err != nil {
			fmt.Fprintf(w, "free page reporting: %v\n", err)
		} else {
			s.WarmedMB = written / 1e6
			fmt.Fprintf(w, "free page reporting: wrote and deleted %d MB in %s, so the run's page cache starts in pages the host has mapped\n", s.WarmedMB, took.Round(time.Millisecond))
		}
	}
	return s, func() {
		if err := restore(); err != nil {
			fmt.Fprintf(w, "free page reporting: %v\n", err)
		}
	}
}

package machine

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeReporting makes a parameters folder with the given files and points
// PageReportingDir at it for the test.
func fakeReporting(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, val := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(val+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := PageReportingDir
	PageReportingDir = dir
	t.Cleanup(func() { PageReportingDir = old })
	return dir
}

func param(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// This VM's kernel as it boots: pages reported at once, at most 1 GiB
// waiting. HoldFreedMemory raises both, says so, and the restore puts the
// old values back.
func TestHoldFreedMemorySetsAndRestores(t *testing.T) {
	dir := fakeReporting(t, map[string]string{"page_reporting_order": "9", "min_free_ms": "0",
		"max_waiting_mib": "1024", "reported_kib": "13327740"})
	before := ReadFreePageReporting()
	if !before.Present || !before.Holdable || before.Held || before.MinFreeMs != 0 || before.MaxWaitingMiB != 1024 || before.ReportedKiB != 13327740 {
		t.Fatalf("before: %+v", before)
	}
	held, restore, err := HoldFreedMemory()
	if err != nil {
		t.Fatal(err)
	}
	if got := param(t, dir, "min_free_ms"); got != "300000" {
		t.Errorf("min_free_ms = %s, want 300000", got)
	}
	if got := param(t, dir, "max_waiting_mib"); got != "16384" {
		t.Errorf("max_waiting_mib = %s, want 16384", got)
	}
	want := "held: freed pages are reported to the host after 300000 ms, at most 16384 MiB waiting (before the run: 0 ms, 1024 MiB)"
	if !held.Held || held.String() != want {
		t.Errorf("held: %+v\n%q\nwant %q", held, held.String(), want)
	}
	// A command started by this one (make ceiling runs make perf) finds
	// them held, changes nothing, and its restore leaves them held.
	inner, innerRestore, err := HoldFreedMemory()
	if err != nil || !inner.Held || inner.Before != "" {
		t.Fatalf("nested hold: %+v %v", inner, err)
	}
	if err := innerRestore(); err != nil {
		t.Fatal(err)
	}
	if got := param(t, dir, "min_free_ms"); got != "300000" {
		t.Fatalf("after the nested restore: min_free_ms %s, want 300000 (still held)", got)
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if a, b := param(t, dir, "min_free_ms"), param(t, dir, "max_waiting_mib"); a != "0" || b != "1024" {
		t.Errorf("after restore: min_free_ms %s, max_waiting_mib %s; want 0 and 1024", a, b)
	}
	if s := ReadFreePageReporting(); s.Held || !strings.HasPrefix(s.String(), "not held: ") {
		t.Errorf("after restore: %+v %q", s, s.String())
	}
}

// A kernel without free page reporting, and an upstream kernel that has
// only the reporting order: nothing is changed, and the report says which.
func TestHoldFreedMemoryWhereItCannot(t *testing.T) {
	fakeReporting(t, map[string]string{})
	s, restore, err := HoldFreedMemory()
	if err != nil || s.Present || restore() != nil || !strings.HasPrefix(s.String(), "none: ") {
		t.Errorf("no reporting: %+v %q %v", s, s.String(), err)
	}
	dir := fakeReporting(t, map[string]string{"page_reporting_order": "9"})
	s, _, err = HoldFreedMemory()
	if err != nil || !s.Present || s.Holdable || !strings.HasPrefix(s.String(), "on, not controlled") {
		t.Errorf("upstream: %+v %q %v", s, s.String(), err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("upstream: %d files in the parameters folder, want the 1 that was there", len(entries))
	}
}

// A parameter that cannot be written: the error names it, and the one
// already written is put back. The stand-in is a symbolic link to
// /proc/sys/kernel/ngroups_max, a number anyone may read and no one, root
// included, may write.
func TestHoldFreedMemoryRefusedLeavesNothingChanged(t *testing.T) {
	dir := fakeReporting(t, map[string]string{"page_reporting_order": "9", "min_free_ms": "0"})
	if _, err := os.Stat("/proc/sys/kernel/ngroups_max"); err != nil {
		t.Skip("no /proc/sys/kernel/ngroups_max here:", err)
	}
	if err := os.Symlink("/proc/sys/kernel/ngroups_max", filepath.Join(dir, "max_waiting_mib")); err != nil {
		t.Fatal(err)
	}
	if s := ReadFreePageReporting(); !s.Holdable {
		t.Fatalf("the stand-in is not read as a parameter: %+v", s)
	}
	_, _, err := HoldFreedMemory()
	if err == nil || !strings.Contains(err.Error(), "max_waiting_mib") {
		t.Fatalf("err = %v, want one naming max_waiting_mib", err)
	}
	if got := param(t, dir, "min_free_ms"); got != "0" {
		t.Errorf("min_free_ms = %s after the refused hold, want 0 (put back)", got)
	}
}

// WarmFreedMemory writes the bytes asked for and leaves nothing behind; a
// folder it cannot write in is an error that names it.
func TestWarmFreedMemory(t *testing.T) {
	dir := t.TempDir()
	written, _, err := WarmFreedMemory(dir, 3<<20+5)
	if err != nil {
		t.Fatal(err)
	}
	if written != 3<<20+5 {
		t.Errorf("wrote %d bytes, want %d (three 1 MiB writes and 5 bytes)", written, 3<<20+5)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("%d files left in %s", len(entries), dir)
	}
	missing := filepath.Join(dir, "no-such-folder")
	if _, _, err := WarmFreedMemory(missing, 1<<20); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("err = %v, want one naming %s", err, missing)
	}
}

// HoldForRun holds, warms and says so in one line each; its restore puts
// the old values back. Nested in a command that holds already, it neither
// warms nor restores. Not asked to hold, it only reports.
func TestHoldForRunPrintsWhatItDid(t *testing.T) {
	dir := fakeReporting(t, map[string]string{"page_reporting_order": "9", "min_free_ms": "0", "max_waiting_mib": "1024"})
	var out strings.Builder
	s, restore := HoldForRun(&out, true, t.TempDir(), 2_500_000)
	if !s.Held || s.WarmedMB != 2 {
		t.Errorf("state %+v, want held and 2 MB warmed", s)
	}
	for _, want := range []string{"free page reporting: held: freed pages are reported to the host after 300000 ms",
		"free page reporting: wrote and deleted 2 MB in "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
	if !strings.HasSuffix(s.String(), "; 2 MB written and deleted first, so the run writes into pages the host has mapped") {
		t.Errorf("report line %q", s.String())
	}
	// A command it starts (make ceiling's make perf) finds the hold taken
	// and the memory warmed: it writes nothing more.
	var inner strings.Builder
	warmDir := t.TempDir()
	if s, innerRestore := HoldForRun(&inner, true, warmDir+"/no-such-folder", 2_500_000); !s.Held || s.WarmedMB != 0 ||
		strings.Contains(inner.String(), "wrote and deleted") || strings.Contains(inner.String(), "no-such-folder") {
		t.Errorf("nested: %+v %q; want held, nothing written", s, inner.String())
	} else {
		innerRestore()
	}
	if got := param(t, dir, "min_free_ms"); got != "300000" {
		t.Errorf("min_free_ms = %s after the nested restore, want 300000", got)
	}
	restore()
	if got := param(t, dir, "min_free_ms"); got != "0" {
		t.Errorf("min_free_ms = %s after restore, want 0", got)
	}
	out.Reset()
	if s, _ := HoldForRun(&out, false, t.TempDir(), 2<<20); s.Held || s.WarmedMB != 0 || !strings.HasPrefix(out.String(), "free page reporting (not asked to hold): not held: ") {
		t.Errorf("not asked to hold: %+v %q", s, out.String())
	}
}

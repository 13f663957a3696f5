package machine

import (
	"testing"
	"time"
)

func TestParseActivityFiles(t *testing.T) {
	stat := []byte("cpu  100 5 200 1000 40 3 7 50 0 0\ncpu0 50 2 100 500 20 1 3 25 0 0\nintr 12345\n")
	cpu, ok := parseStatCPU(stat)
	if !ok || cpu != [cpuFields]int64{100, 5, 200, 1000, 40, 3, 7, 50} {
		t.Errorf("parseStatCPU = %v, %v", cpu, ok)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu 1 2 3\n", "cpu 1 2 3 4 5 6 7 x\n"} {
		if _, ok := parseStatCPU([]byte(bad)); ok {
			t.Errorf("parseStatCPU(%q) accepted", bad)
		}
	}
	psi := []byte("some avg10=0.48 avg60=1.38 avg300=1.83 total=82402913\nfull avg10=0.29 avg60=0.87 avg300=1.06 total=53413923\n")
	if v, ok := parsePressureSome(psi); !ok || v != 82402913 {
		t.Errorf("parsePressureSome = %d, %v; want 82402913", v, ok)
	}
	if _, ok := parsePressureSome([]byte("full avg10=0 total=5\n")); ok {
		t.Error("parsePressureSome accepted a file without a some line")
	}
	vm := []byte("nr_free_pages 3000\nnr_dirty 256\nnr_writeback 16\nnr_dirtied 99\n")
	if d, w := parseVMStat(vm); d != 256 || w != 16 {
		t.Errorf("parseVMStat = %d, %d; want 256, 16", d, w)
	}
}

// Tenths against samples built by hand: 11 samples 100 ms apart, each
// adding to the counters what its tenth should show.
func TestActivityTenths(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var s []ActivitySample
	cur := ActivitySample{At: t0}
	s = append(s, cur)
	for i := 1; i <= 10; i++ {
		cur.At = t0.Add(time.Duration(i) * 100 * time.Millisecond)
		// 20 ticks a tenth (2 CPUs, 100 ms, USER_HZ 100): user 6 + nice 2,
		// system 4, idle 4, iowait 1, irq 0, softirq 1, steal 2.
		d := [cpuFields]int64{6, 2, 4, 4, 1, 0, 1, 2}
		if i == 5 { // the fifth: all stolen or idle
			d = [cpuFields]int64{0, 0, 0, 10, 0, 0, 0, 10}
		}
		for k := range cpuFields {
			cur.CPU[k] += d[k]
		}
		cur.Pressure[2] += int64(i) * 1000 // i ms of I/O stall in tenth i
		cur.Dirty = int64(i) * 1e6
		if i == 7 {
			cur.Reported += 1088 << 20 // 1,088 MiB handed to the host in the seventh
		}
		s = append(s, cur)
	}
	got := Tenths(s)
	if len(got) != 10 {
		t.Fatalf("%d tenths, want 10", len(got))
	}
	if g := got[0]; g.User != 40 || g.System != 25 || g.Idle != 20 || g.IOWait != 5 || g.Steal != 10 || g.IOStallMs != 1 || g.DirtyMB != 1 {
		t.Errorf("first tenth %+v: want user 40 (8/20), system 25 (5/20), idle 20, iowait 5, steal 10, 1 ms of I/O stall, 1 MB dirty", g)
	}
	if g := got[4]; g.Steal != 50 || g.Idle != 50 || g.User != 0 || g.IOStallMs != 5 {
		t.Errorf("fifth tenth %+v: want steal 50, idle 50, user 0, 5 ms of I/O stall", g)
	}
	if g := got[9]; g.End != 1.0 || g.DirtyMB != 10 {
		t.Errorf("last tenth %+v: want its end at 1.0 s and 10 MB dirty", g)
	}
	if g := got[6].ReportedMB; g == nil || *g != 1088*1.048576 {
		t.Errorf("seventh tenth's memory reported: %v, want 1,088 MiB = 1140.85 MB", g)
	}
	if g := got[7].ReportedMB; g == nil || *g != 0 {
		t.Errorf("eighth tenth's memory reported: %v, want 0", g)
	}
	s[5].Reported = -1 // the counter unreadable at the fifth tenth's end
	if g := Tenths(s); g[4].ReportedMB != nil || g[5].ReportedMB != nil || g[6].ReportedMB == nil {
		t.Errorf("with no reading at the fifth tenth's end, the fifth and sixth must have none and the seventh one: %v %v %v", g[4].ReportedMB, g[5].ReportedMB, g[6].ReportedMB)
	}
	if Tenths(s[:10]) != nil {
		t.Error("10 samples gave tenths; a tenth needs a sample of its own")
	}
}

func TestStartActivity(t *testing.T) {
	if _, ok := ReadActivity(); !ok {
		t.Skip("no /proc/stat here")
	}
	a := StartActivity(5 * time.Millisecond)
	time.Sleep(80 * time.Millisecond)
	s := a.Stop()
	if len(s) < 11 {
		t.Fatalf("%d samples in 80 ms at 5 ms", len(s))
	}
	if tt := Tenths(s); len(tt) != 10 || tt[9].End <= 0 {
		t.Errorf("tenths of a live run: %+v", tt)
	}
}

// A sample carries the kernel's count of memory reported to the host, in
// bytes, and -1 where there is none to read.
func TestReadActivityReported(t *testing.T) {
	if _, ok := ReadActivity(); !ok {
		t.Skip("no /proc/stat here")
	}
	fakeReporting(t, map[string]string{"page_reporting_order": "9", "reported_kib": "13327740"})
	if s, _ := ReadActivity(); s.Reported != 13327740*1024 {
		t.Errorf("Reported = %d, want 13327740 KiB = 13647605760 bytes", s.Reported)
	}
	fakeReporting(t, map[string]string{"page_reporting_order": "9"})
	if s, _ := ReadActivity(); s.Reported != -1 {
		t.Errorf("Reported = %d without reported_kib, want -1", s.Reported)
	}
}

package perfcheck

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/stats"
)

// TestJudge: 5% more instructions fails, 4.9% passes; a new allocation
// per operation fails; on the wall clock only a slowdown that is both
// large and significant fails.
func TestJudge(t *testing.T) {
	base := Figures{InstrPerMsg: 1000, AllocsPerOp: 0.01}
	for _, tc := range []struct {
		name string
		head Figures
		wall *WallComparison
		fail string
	}{
		{"same", Figures{InstrPerMsg: 1000}, nil, ""},
		{"+4.9%", Figures{InstrPerMsg: 1049}, nil, ""},
		{"+5%", Figures{InstrPerMsg: 1050}, nil, "instructions per message"},
		{"one allocation per operation", Figures{InstrPerMsg: 1000, AllocsPerOp: 1.01}, nil, "new allocation"},
		{"one-off allocations", Figures{InstrPerMsg: 1000, AllocsPerOp: 0.2}, nil, ""},
		{"wall +30%, p=0.002", Figures{InstrPerMsg: 1000}, &WallComparison{Delta: 0.30, P: 0.002, N: 6}, "wall clock +30.0%"},
		{"wall +30%, p=0.04", Figures{InstrPerMsg: 1000}, &WallComparison{Delta: 0.30, P: 0.04, N: 6}, ""},
		{"wall +10%, p=0.002", Figures{InstrPerMsg: 1000}, &WallComparison{Delta: 0.10, P: 0.002, N: 6}, ""},
	} {
		paths := []PathResult{{Path: "x/y", Base: base, Head: tc.head, Wall: tc.wall}}
		judge(Config{}.withDefaults(), paths)
		got := strings.Join(paths[0].Failures, "; ")
		if (tc.fail == "") != (got == "") || !strings.Contains(got, tc.fail) {
			t.Errorf("%s: failures %q, want %q", tc.name, got, tc.fail)
		}
	}
}

// A path over the limit is judged on the medians of its counts
// (confirmOverLimit), and its failure lists them: base 1000, 1020, 990 has
// the median 1000; head 1100, 1060, 1090 the median 1090, +9.0 %.
func TestJudgeNamesTheCounts(t *testing.T) {
	p := PathResult{Path: "x/y", BaseCounts: []float64{1000, 1020, 990}, HeadCounts: []float64{1100, 1060, 1090}}
	p.Base.InstrPerMsg, p.Head.InstrPerMsg = stats.Median(p.BaseCounts), stats.Median(p.HeadCounts)
	paths := []PathResult{p}
	judge(Config{}.withDefaults(), paths)
	want := "1090.0 instructions per message against 1000.0 (+9.0%, the limit is +5%); medians of 3 counts a side, head 1100.0, 1060.0, 1090.0, base 1000.0, 1020.0, 990.0"
	if got := strings.Join(paths[0].Failures, "; "); got != want {
		t.Errorf("failure %q\nwant %q", got, want)
	}
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	csv, png := filepath.Join(dir, "history.csv"), filepath.Join(dir, "history.png")
	for i, instr := range []float64{430, 431, 1300} {
		r := &Report{Base: "b", Head: "h" + string(rune('0'+i)), Started: time.Date(2026, 12, 1, 10, i, 0, 0, time.UTC), Paths: []PathResult{
			{Path: "message/iterate", Ops: 10, Messages: 15000, Base: Figures{InstrPerMsg: 430}, Head: Figures{InstrPerMsg: instr, NsPerMsg: 35}},
			{Path: "log/append-batch1", Ops: 100, Messages: 100, Base: Figures{InstrPerMsg: 780}, Head: Figures{InstrPerMsg: 781, AllocsPerOp: 1}},
		}}
		if i == 2 {
			r.Paths[0].Failures = []string{"slower"}
		}
		if err := AppendHistory(csv, r); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 7 || lines[0] != strings.Join(HistoryHeader, ",") ||
		lines[5] != "h2,2026-12-01T10:02:00Z,message/iterate,1300.0,35.00,0,b,430.0,fail" ||
		lines[6] != "h2,2026-12-01T10:02:00Z,log/append-batch1,781.0,,1,b,780.0,ok" {
		t.Fatalf("history.csv:\n%s", b)
	}
	if err := PlotHistory(csv, png); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() < 1000 {
		t.Fatalf("history.png: %v, %v", st, err)
	}
}

func TestBenchPattern(t *testing.T) {
	if got, want := benchPattern([]string{"message/iterate", "log/append-batch1"}),
		`^BenchmarkHotPath$/^(message|log)$/^(iterate|append-batch1)$`; got != want {
		t.Errorf("benchPattern = %q, want %q", got, want)
	}
}

// TestIntegration_PlantedSlowdown is the check of the check: a tree in which
// the message package computes every CRC three times (a temporary git
// worktree of HEAD, edited) fails perf-check against HEAD, naming
// message/iterate, which checks a CRC per message, on the medians of three
// counts a side, and not broker/fetch, which only walks the messages'
// lengths.
func TestIntegration_PlantedSlowdown(t *testing.T) {
	if testing.Short() {
		t.Skip("runs valgrind on two builds of the hot paths")
	}
	for _, tool := range []string{"valgrind", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (scripts/install-deps.sh installs it): %v", tool, err)
		}
	}
	ctx := context.Background()
	repo, err := git(ctx, ".", "rev-parse", "--show-toplevel")
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	planted, _, cleanup, err := addWorktree(ctx, repo, "HEAD", filepath.Join(work, "planted"))
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	plantSlowCRC(t, filepath.Join(planted, "kafka", "message", "message.go"))

	var log bytes.Buffer
	rep, err := Run(ctx, Config{Head: planted, Base: "HEAD", Work: filepath.Join(work, "check"),
		Paths: []string{"message/iterate", "broker/fetch"}, Log: &log})
	var out bytes.Buffer
	if rep != nil {
		rep.Print(&out)
	}
	t.Logf("perf-check of the planted tree:\n%s", out.String())
	if !errors.Is(err, ErrRegression) || rep == nil {
		t.Fatalf("perf-check: %v, want ErrRegression\n%s", err, log.String())
	}
	for _, p := range rep.Paths {
		failed := len(p.Failures) > 0
		switch p.Path {
		case "message/iterate":
			if !failed || !strings.Contains(p.Failures[0], "instructions per message") || p.Head.InstrPerMsg < 1.5*p.Base.InstrPerMsg {
				t.Errorf("message/iterate: %.1f → %.1f instructions per message, failures %q; want a failure of at least +50%%",
					p.Base.InstrPerMsg, p.Head.InstrPerMsg, p.Failures)
			}
			if len(p.HeadCounts) != ConfirmCounts || len(p.BaseCounts) != ConfirmCounts || !strings.Contains(p.Failures[0], "medians of 3 counts a side") {
				t.Errorf("message/iterate: counts base %v, head %v, failures %q; want %d of each, confirmed", p.BaseCounts, p.HeadCounts, p.Failures, ConfirmCounts)
			}
			if !strings.Contains(p.Profile, "hash/crc32.") {
				t.Errorf("message/iterate: the top of the differential profile does not show hash/crc32:\n%s", p.Profile)
			}
		case "broker/fetch":
			if failed {
				t.Errorf("broker/fetch computes no CRC, yet fails: %q", p.Failures)
			}
		}
	}
	if !strings.Contains(out.String(), "perf-check: FAIL message/iterate: ") {
		t.Errorf("the report does not name message/iterate on a FAIL line")
	}
}

// plantSlowCRC makes every CRC of the message package be computed three
// times.
func plantSlowCRC(t *testing.T, file string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	src := string(b)
	if strings.Count(src, "crc32.ChecksumIEEE(") < 2 {
		t.Fatalf("%s no longer computes CRCs with crc32.ChecksumIEEE: update the planted slowdown", file)
	}
	src = strings.ReplaceAll(src, "crc32.ChecksumIEEE(", "plantedChecksum(") + `
// plantedChecksum is a slowdown planted by perfcheck's test.
func plantedChecksum(b []byte) uint32 {
	crc32.ChecksumIEEE(b)
	crc32.ChecksumIEEE(b)
	return crc32.ChecksumIEEE(b)
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

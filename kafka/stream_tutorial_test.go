package kafka_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestIntegration_StreamTutorial runs the README's section "Stream processing (§6)" as written, as
// TestIntegration_Tutorial runs the tutorial: the ```sh blocks between <!-- stream:start --> and
// <!-- stream:end -->, in order, in one bash, from the repository root, with a freshly built `kafka` first on
// PATH, ZK_PORT, KAFKA_PORT and KAFKA_TUTORIAL pointed at free ports and a temporary directory. Every line of
// the section's ```text blocks must appear in its output: the generator's exact rates, the pipeline's rates
// (the section diffs them against the generator's and prints "the rates are exact" only if they are equal)
// and the window counts.
func TestIntegration_StreamTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper, a broker and the stream commands (skipped with -short)")
	}
	root := moduleRoot(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	start, end := strings.Index(s, "<!-- stream:start -->"), strings.Index(s, "<!-- stream:end -->")
	if start < 0 || end < start {
		t.Fatal("README.md has no section between <!-- stream:start --> and <!-- stream:end -->")
	}
	blocks, text := fences(s[start:end])
	if len(blocks) == 0 || len(text) == 0 {
		t.Fatalf("README.md's stream section has %d sh blocks and %d text lines", len(blocks), len(text))
	}
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "kafka"), "./kafka/cmd/kafka")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./kafka/cmd/kafka: %v\n%s", err, out)
	}
	dir := filepath.Join(t.TempDir(), "tutorial")
	script := "set -euo pipefail\nset -x\n" + strings.Join(blocks, "\n")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KAFKA_TUTORIAL="+dir,
		"ZK_PORT="+strconv.Itoa(freePorts(t, 1)),
		"KAFKA_PORT="+strconv.Itoa(freePorts(t, 1)),
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.Cleanup(func() { cleanupTutorial(t, root, dir, cmd) })
	err = cmd.Run()
	out := stdout.String()
	if err != nil {
		logs, _ := os.ReadFile(filepath.Join(dir, "stream-ctr.log"))
		t.Fatalf("stream section failed: %v\n--- stdout\n%s\n--- stderr\n%s\n--- stream-ctr.log\n%s\n%s", err, out, stderr.String(), logs, serverLogs(dir))
	}
	t.Logf("stdout:\n%s", out)
	for _, line := range text {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("output lacks %q (from a text block)", line)
		}
	}
	// The rates appear twice: printed by the generator and read back from the pipeline's output.
	if n := strings.Count(out, "item-b 120 280 0.428571\n"); n != 2 {
		t.Errorf("item-b's rate printed %d times, want twice (generator, pipeline)", n)
	}
	if logs, err := os.ReadFile(filepath.Join(dir, "stream-ctr.log")); err != nil || !strings.Contains(string(logs), "stopped: ") {
		t.Errorf("stream-ctr.log has no final report (%v):\n%s", err, logs)
	}
}

package kafka_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIntegration_StreamTutorial runs docs/STREAMS.md, "Stream processing (§6)", as written, as
// TestIntegration_Tutorial runs the tutorial (runReadmeSection: the section between <!-- stream:start -->
// and <!-- stream:end -->, one broker's port). Every line of
// the section's ```text blocks must appear in its output: the generator's exact rates, the pipeline's rates
// (the section diffs them against the generator's and prints "the rates are exact" only if they are equal)
// and the window counts.
func TestIntegration_StreamTutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper, a broker and the stream commands (skipped with -short)")
	}
	out, dir := runReadmeSection(t, "stream", 1, 3*time.Minute, func(dir string) string {
		logs, _ := os.ReadFile(filepath.Join(dir, "stream-ctr.log"))
		return "--- stream-ctr.log\n" + string(logs) + "\n"
	})
	// The rates appear twice: printed by the generator and read back from the pipeline's output.
	if n := strings.Count(out, "item-b 120 280 0.428571\n"); n != 2 {
		t.Errorf("item-b's rate printed %d times, want twice (generator, pipeline)", n)
	}
	if logs, err := os.ReadFile(filepath.Join(dir, "stream-ctr.log")); err != nil || !strings.Contains(string(logs), "stopped: ") {
		t.Errorf("stream-ctr.log has no final report (%v):\n%s", err, logs)
	}
}

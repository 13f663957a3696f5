package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
	"github.com/kafkarepro/kafkarepro/kafka/stream"
)

// ctrProc is one `kafka stream-ctr` process of the test, its stderr in a file.
type ctrProc struct {
	cmd *exec.Cmd
	log string
}

func startCTRProc(t *testing.T, bin, connect, log string) *ctrProc {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cmd := exec.Command(bin, "stream-ctr", "--zookeeper", connect, "--impressions", "impressions", "--clicks", "clicks",
		"--window", "10s", "--output", "ctr", "--group", "ctr", "--report-every", "1s")
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &ctrProc{cmd: cmd, log: log}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return p
}

func (p *ctrProc) logText() string { b, _ := os.ReadFile(p.log); return string(b) }

// The click-through pipeline survives kill -9: two stream-ctr processes share the 16 tasks of the four
// stages; one is killed with SIGKILL while the workload is being published and processed, and started again.
// The state of each task is exactly-once (checkpointed with its offsets), the intermediate topics and the
// output at-least-once, and the rates stage counts each decision once: the final rates equal the
// generator's exactly. The test prints how many decided impressions were published more than once.
func TestIntegration_StreamCTRKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper, two brokers and three stream-ctr processes")
	}
	bin := kafkabin.Build(t)
	connect := streamCluster(t, "impressions", "clicks")
	const rounds = 100
	total := int64(0)
	for _, r := range stream.DefaultCTRWorkload(rounds).Expected() {
		total += r.Impressions
	}
	dir := t.TempDir()
	a := startCTRProc(t, bin, connect, filepath.Join(dir, "a.log"))
	b := startCTRProc(t, bin, connect, filepath.Join(dir, "b.log"))
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(a.logText(), "tasks ") || !strings.Contains(b.logText(), "tasks "); {
		if time.Now().After(deadline) {
			t.Fatalf("the processors did not start:\n%s\n%s", a.logText(), b.logText())
		}
		time.Sleep(100 * time.Millisecond)
	}
	want, errs, code := runKafka(t, "stream-ctr-gen", "--zookeeper", connect, "--impressions", "impressions",
		"--clicks", "clicks", "--rounds", "100")
	if code != 0 {
		t.Fatalf("stream-ctr-gen: %d\n%s", code, errs)
	}
	decided := func() int64 {
		out, _, code := runKafka(t, "stream-table", "--zookeeper", connect, "--topic", "ctr")
		n := int64(0)
		if code != 0 {
			return 0
		}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if _, r, err := stream.ParseRateLine([]byte(l)); err == nil {
				n += r.Impressions
			}
		}
		return n
	}
	// Kill once the output has begun: mid-stream, some impressions decided and published, most not.
	atKill := int64(0)
	for deadline := time.Now().Add(60 * time.Second); atKill == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no output after 60 s\n--- a\n%s\n--- b\n%s", a.logText(), b.logText())
		}
		atKill = decided()
	}
	if atKill == total {
		t.Fatalf("every impression was decided before the kill: not a kill mid-stream")
	}
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = b.cmd.Wait()
	t.Logf("killed one of two processors (kill -9) with %d of %d impressions decided", atKill, total)
	time.Sleep(time.Second)
	c := startCTRProc(t, bin, connect, filepath.Join(dir, "c.log"))

	var got string
	for deadline := time.Now().Add(120 * time.Second); ; time.Sleep(500 * time.Millisecond) {
		if n := decided(); n == total {
			got, _, _ = runKafka(t, "stream-table", "--zookeeper", connect, "--topic", "ctr")
			break
		} else if time.Now().After(deadline) {
			t.Fatalf("after 120 s %d of %d impressions decided\n--- a\n%s\n--- c\n%s", n, total, a.logText(), c.logText())
		}
	}
	if got != want {
		t.Errorf("rates after kill -9\n%s\nwant (the generator's)\n%s", got, want)
	}
	// How many decisions were published more than once (at-least-once), read from the by-item topic.
	out, _, _ := runKafka(t, "console-consumer", "--zookeeper", connect, "--topic", "ctr-by-item", "--from-beginning",
		"--consumer-timeout-ms", "2000")
	seen := map[string]int{}
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if d, err := stream.ParseDecision([]byte(l)); err == nil {
			seen[d.ID]++
			lines++
		}
	}
	again := 0
	for _, n := range seen {
		if n > 1 {
			again++
		}
	}
	if int64(len(seen)) != total {
		t.Errorf("%d impressions decided in ctr-by-item, want %d", len(seen), total)
	}
	t.Logf("acknowledged %d impressions / decided %d / lost %d / decisions published again %d (of %d lines); rates exact: %v",
		total, len(seen), total-int64(len(seen)), again, lines, got == want)
}

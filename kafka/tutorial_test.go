package kafka_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/kafkabin"
)

// TestIntegration_Tutorial runs the README's tutorial as written (runReadmeSection: the section between
// <!-- tutorial:start --> and <!-- tutorial:end -->, three brokers' ports) and checks that the consumers
// printed what the producers sent (every line of the tutorial's ```text blocks) and that the offset checker
// shows nothing left unconsumed.
func TestIntegration_Tutorial(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper, three brokers and the console tools (skipped with -short)")
	}
	out, _ := runReadmeSection(t, "tutorial", 3, 4*time.Minute, nil)
	for _, want := range []string{"my message 1\n", "my message 2\n", `Created topic "test"`,
		`Created topic "my-topic": 3 partitions on 3 brokers`,
		`Created topic "my-replicated-topic": 1 partition with replication factor 3`,
		"Topic:my-replicated-topic\tPartitionCount:1\tReplicationFactor:3\tConfigs:\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The offset checker: every partition with data has been consumed to its end.
	row := regexp.MustCompile(`(?m)^tutorial\s+my-topic\s+(\d+-\d+)\s+(\S+)\s+(\S+)\s+(\S+)`)
	rows := row.FindAllStringSubmatch(out, -1)
	if len(rows) != 3 {
		t.Errorf("offset checker shows %d partitions of my-topic, want 3", len(rows))
	}
	checkReplicatedStep(t, out)
	for _, r := range rows {
		if r[3] != "0" && r[2] != r[3] {
			t.Errorf("partition %s: committed %s, log end %s, lag %s: not consumed to the end", r[1], r[2], r[3], r[4])
		}
	}
}

// runReadmeSection runs a section of the README as written and returns its standard output and directory: the ```sh
// blocks between the markers <!-- name:start --> and <!-- name:end -->, in order, in one bash, from the
// repository root, with a freshly built `kafka` first on PATH. ```bash blocks are the one-time setup a reader
// does by hand (building the command) and are not run. A section reads its ports and directory from ZK_PORT,
// KAFKA_PORT (the first of brokers consecutive free ports) and KAFKA_TUTORIAL, which point at free ports and
// a temporary directory. Every line of the section's ```text blocks must appear in the output. On failure,
// more(dir) may add what the section's own log files say; whatever the section left running is killed at the
// end (cleanupTutorial).
func runReadmeSection(t *testing.T, name string, brokers int, timeout time.Duration, more func(dir string) string) (out, dir string) {
	t.Helper()
	root := moduleRoot(t)
	blocks, text := readmeSection(t, root, name)
	t.Logf("running %d sh blocks of README.md's %s section", len(blocks), name)

	bin := t.TempDir() // on the shell's PATH, as the tutorial's `go build -o bin/kafka` puts it
	if err := os.Symlink(kafkabin.Build(t), filepath.Join(bin, "kafka")); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "tutorial")
	zkPort, kafkaPort := freePorts(t, 1), freePorts(t, brokers)

	script := "set -euo pipefail\nset -x\n" + strings.Join(blocks, "\n")
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = root
	cmd.Env = append(os.Environ(),
		"PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"),
		"KAFKA_TUTORIAL="+dir,
		"ZK_PORT="+strconv.Itoa(zkPort),
		"KAFKA_PORT="+strconv.Itoa(kafkaPort),
	)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.Cleanup(func() { cleanupTutorial(t, root, dir, cmd) })
	err := cmd.Run()
	out = stdout.String()
	if err != nil {
		extra := ""
		if more != nil {
			extra = more(dir)
		}
		t.Fatalf("README.md's %s section failed: %v\n--- stdout\n%s\n--- stderr\n%s\n%s%s", name, err, out, stderr.String(), extra, serverLogs(dir))
	}
	t.Logf("%s stdout:\n%s", name, out)
	for _, line := range text {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("output lacks %q (from a text block)", line)
		}
	}
	return out, dir
}

// readmeSection returns the ```sh blocks (to run) and the lines of the ```text blocks (expected output)
// between the markers <!-- name:start --> and <!-- name:end --> of the README or of the document that holds
// them (docs/STREAMS.md holds the stream section).
func readmeSection(t *testing.T, root, name string) (sh []string, text []string) {
	t.Helper()
	var s, doc string
	start, end := -1, -1
	for _, doc = range []string{"README.md", "docs/STREAMS.md"} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatalf("read %s: %v", doc, err)
		}
		s = string(data)
		start, end = strings.Index(s, "<!-- "+name+":start -->"), strings.Index(s, "<!-- "+name+":end -->")
		if start >= 0 {
			break
		}
	}
	if start < 0 || end < start {
		t.Fatalf("no document has a section between <!-- %s:start --> and <!-- %s:end -->", name, name)
	}
	sh, text = fences(s[start:end])
	if len(sh) == 0 || len(text) == 0 {
		t.Fatalf("%s's %s section has %d ```sh blocks and %d ```text lines", doc, name, len(sh), len(text))
	}
	return sh, text
}

// fences extracts the bodies of ```sh blocks and the non-empty lines of ```text blocks.
func fences(md string) (sh []string, text []string) {
	var cur *strings.Builder
	lang := ""
	for line := range strings.Lines(md) {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			lang = strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
			cur = &strings.Builder{}
		case cur != nil && trimmed == "```":
			switch lang {
			case "sh":
				sh = append(sh, cur.String())
			case "text":
				for l := range strings.Lines(cur.String()) {
					if l = strings.TrimRight(l, "\r\n"); strings.TrimSpace(l) != "" {
						text = append(text, l)
					}
				}
			}
			cur = nil
		case cur != nil:
			cur.WriteString(line)
		}
	}
	return sh, text
}

// cleanupTutorial kills whatever the tutorial left running: its process group (brokers started with &), the
// brokers by their pid files, and ZooKeeper through the script.
func cleanupTutorial(t *testing.T, root, dir string, cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	pids, _ := filepath.Glob(filepath.Join(dir, "server-*.pid"))
	for _, f := range pids {
		if b, err := os.ReadFile(f); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "zookeeper", "zookeeper.pid")); err == nil {
		stop := exec.Command("bash", filepath.Join(root, "scripts", "zookeeper.sh"), "stop", filepath.Join(dir, "zookeeper"))
		if out, err := stop.CombinedOutput(); err != nil {
			t.Logf("stopping ZooKeeper: %v\n%s", err, out)
		}
	}
}

func serverLogs(dir string) string {
	var b strings.Builder
	logs, _ := filepath.Glob(filepath.Join(dir, "server-*.log"))
	for _, f := range logs {
		data, _ := os.ReadFile(f)
		if len(data) > 4000 {
			data = data[len(data)-4000:]
		}
		b.WriteString("--- " + f + "\n" + string(data))
	}
	return b.String()
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above the working directory")
		}
		dir = up
	}
}

// freePorts finds n consecutive free local ports and returns the first.
func freePorts(t *testing.T, n int) int {
	t.Helper()
next:
	for base := 20000 + int(time.Now().UnixNano()%20000); base < 60000; base += 97 {
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				continue next
			}
			l.Close()
		}
		return base
	}
	t.Fatal("no free ports")
	return 0
}

func TestTutorialFences(t *testing.T) {
	md := "intro\n```bash\ngo build\n```\n```sh\necho a\necho b\n```\ntext\n```text\nout 1\n\nout 2\n```\n```sh\necho c\n```\n"
	sh, text := fences(md)
	if len(sh) != 2 || sh[0] != "echo a\necho b\n" || sh[1] != "echo c\n" {
		t.Errorf("sh blocks = %q", sh)
	}
	if len(text) != 2 || text[0] != "out 1" || text[1] != "out 2" {
		t.Errorf("text lines = %q", text)
	}
}

// checkReplicatedStep checks the replicated topic's part of the tutorial (step 7, docs/PROTOCOL.md §10): three
// describes in the textbook's format — all three in the ISR, then a new leader with the killed one gone from
// the ISR but not from the replicas, then all three again — and both messages read before and after the kill.
func checkReplicatedStep(t *testing.T, out string) {
	t.Helper()
	line := regexp.MustCompile(`(?m)^\tTopic: my-replicated-topic\tPartition: 0\tLeader: (\d+)\tReplicas: (\d,\d,\d)\tIsr: ([\d,]+)$`)
	ds := line.FindAllStringSubmatch(out, -1)
	if len(ds) != 3 {
		t.Fatalf("%d partition lines of my-replicated-topic in the textbook's format, want 3 (describe, after the kill, after the restart):\n%s", len(ds), out)
	}
	before, after, back := ds[0], ds[1], ds[2]
	if len(strings.Split(before[3], ",")) != 3 || len(strings.Split(back[3], ",")) != 3 {
		t.Errorf("Isr before the kill %q and after the restart %q: want all three", before[3], back[3])
	}
	if after[1] == before[1] || strings.Contains(after[3], before[1]) || len(strings.Split(after[3], ",")) != 2 {
		t.Errorf("after killing leader %s: leader %s, Isr %s; want another leader and %s gone from the Isr", before[1], after[1], after[3], before[1])
	}
	if after[2] != before[2] {
		t.Errorf("Replicas changed from %s to %s", before[2], after[2])
	}
	for _, m := range []string{"my test message 1\n", "my test message 2\n"} {
		if n := strings.Count(out, m); n < 2 {
			t.Errorf("%q printed %d times, want twice (before and after the leader was killed)", m, n)
		}
	}
}

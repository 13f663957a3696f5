package kafka_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// textbookDirs are the fixed paths the book's files name (config/zookeeper.properties' dataDir, the three
// brokers' log directories).
var textbookDirs = []string{"/tmp/zookeeper", "/tmp/kafka-logs", "/tmp/kafka-logs-1", "/tmp/kafka-logs-2"}

// textbookScript types the textbook's chapter 3 (textbook/README.md) into bash, every command as printed,
// from a fresh make dist: the book's tarball unpacked in an empty directory.
// What the book leaves to the reader is done around the commands, never inside them: a server the book
// runs in the foreground goes to the background, as a second terminal would let it; a producer gets on
// standard input the lines the book types; a consumer, which the book stops with Ctrl-C, is stopped once
// it printed the book's lines (untilLines).
const textbookScript = `set -euo pipefail
ip link set lo up
out=$(mktemp -d)
make -s -C "$ROOT" dist DIST="$out/dist" >/dev/null
mkdir "$out/home"
cp "$out/dist/kafka_2.9.2-0.8.1.1.tgz" "$out/home/"
cd "$out/home"
cleanup() {
	bin/kafka-server-stop.sh || true
	sleep 2
	bin/zookeeper-server-stop.sh >/dev/null || true
	cd /
	rm -rf "$out"
}
tar -xzf kafka_2.9.2-0.8.1.1.tgz
cd kafka_2.9.2-0.8.1.1
trap cleanup EXIT
wait_port() {
	for _ in $(seq 240); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.25; done
	echo "nothing listens on port $1" >&2
	return 1
}
# untilLines N COMMAND...: runs COMMAND until it has printed N lines (at most 60 seconds), then prints them.
untilLines() {
	local n=$1 f
	shift
	f=$(mktemp -p "$out")
	"$@" >"$f" 2>"$f.err" &
	local pid=$!
	for _ in $(seq 240); do [[ $(wc -l <"$f") -ge $n ]] && break; sleep 0.25; done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	cat "$f"
	[[ $(wc -l <"$f") -ge $n ]] || { echo "the consumer printed fewer than $n lines:"; cat "$f.err"; } >&2
}

bin/zookeeper-server-start.sh config/zookeeper.properties >"$out/zookeeper.log" 2>&1 &
wait_port 2181
bin/kafka-server-start.sh config/server.properties >"$out/server-0.log" 2>&1 &
wait_port 9092
bin/kafka-topics.sh --create --zookeeper localhost:2181 --replication-factor 1 --partitions 1 --topic test
bin/kafka-topics.sh --list --zookeeper localhost:2181
printf 'This is a message\nThis is another message\n' | bin/kafka-console-producer.sh --broker-list localhost:9092 --topic test
untilLines 2 bin/kafka-console-consumer.sh --zookeeper localhost:2181 --topic test --from-beginning
cp config/server.properties config/server-1.properties
cp config/server.properties config/server-2.properties
printf 'broker.id=1\nport=9093\nlog.dir=/tmp/kafka-logs-1\n' >>config/server-1.properties
printf 'broker.id=2\nport=9094\nlog.dir=/tmp/kafka-logs-2\n' >>config/server-2.properties
bin/kafka-server-start.sh config/server-1.properties >"$out/server-1.log" 2>&1 &
bin/kafka-server-start.sh config/server-2.properties >"$out/server-2.log" 2>&1 &
wait_port 9093
wait_port 9094
bin/kafka-topics.sh --create --zookeeper localhost:2181 --replication-factor 3 --partitions 1 --topic my-replicated-topic
for _ in $(seq 40); do
	d=$(bin/kafka-topics.sh --describe --zookeeper localhost:2181 --topic my-replicated-topic)
	[[ $d =~ Isr:\ [0-9],[0-9],[0-9] ]] && break
	sleep 0.25
done
bin/kafka-topics.sh --describe --zookeeper localhost:2181 --topic my-replicated-topic
printf 'my test message 1\nmy test message 2\n' | bin/kafka-console-producer.sh --broker-list localhost:9092 --topic my-replicated-topic
untilLines 2 bin/kafka-console-consumer.sh --zookeeper localhost:2181 --from-beginning --topic my-replicated-topic
echo "== log directories"
ls /tmp/kafka-logs /tmp/kafka-logs-1 /tmp/kafka-logs-2
`

// TestIntegration_TextbookChapter3 types the textbook's chapter 3 as printed (textbook/README.md): ZooKeeper
// and a broker from 0.8.1.1's files, a topic created, listed, written and read, then two more brokers from
// the book's copies of server.properties and a topic of three replicas, described, written and read. It runs
// in a network namespace of its own, so the book's fixed ports (2181, 9092-9094) are free whatever else runs.
func TestIntegration_TextbookChapter3(t *testing.T) {
	if testing.Short() {
		t.Skip("runs ZooKeeper, three brokers and the console tools (skipped with -short)")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root, for a network namespace of its own (unshare --net)")
	}
	for _, d := range textbookDirs {
		if _, err := os.Stat(d); err == nil {
			t.Fatalf("%s exists: the book's files name it, and this test would write into it; move it away first", d)
		}
	}
	t.Cleanup(func() {
		for _, d := range textbookDirs {
			os.RemoveAll(d)
		}
	})
	root := moduleRoot(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--net", "bash", "-s")
	cmd.Env = append(os.Environ(), "ROOT="+root)
	cmd.Stdin = strings.NewReader(textbookScript)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stderr strings.Builder
	cmd.Stderr = &stderr
	outBytes, err := cmd.Output()
	out := string(outBytes)
	if err != nil {
		t.Fatalf("the chapter failed: %v\n--- stdout\n%s\n--- stderr\n%s", err, out, stderr.String())
	}
	for _, want := range []string{
		"\ntest\n", // --list
		"This is a message\nThis is another message\n",
		"Topic:my-replicated-topic\tPartitionCount:1\tReplicationFactor:3\tConfigs:\n",
		"my test message 1\nmy test message 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the chapter's output lacks %q\n--- stdout\n%s\n--- stderr\n%s", want, out, stderr.String())
		}
	}
	if !regexp.MustCompile(`Leader: \d\tReplicas: \d,\d,\d\tIsr: \d,\d,\d`).MatchString(out) {
		t.Errorf("--describe does not show three replicas, all in sync:\n%s", out)
	}
	// Each broker has a directory of its own (the copies' log.dir lines win over the file's log.dirs), and
	// each holds its replica of the replicated topic.
	_, dirs, _ := strings.Cut(out, "== log directories\n")
	for _, d := range []string{"/tmp/kafka-logs", "/tmp/kafka-logs-1", "/tmp/kafka-logs-2"} {
		listing := regexp.MustCompile(`(?s)` + regexp.QuoteMeta(d) + `:\n(.*?)(\n\n|$)`).FindStringSubmatch(dirs)
		if listing == nil || !strings.Contains(listing[1], "my-replicated-topic") {
			t.Errorf("%s holds no replica of my-replicated-topic:\n%s", d, dirs)
		}
	}
}

// Every command of the book's chapter in textbook/README.md is typed, as printed, by textbookScript.
func TestTextbookScriptTypesTheREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(moduleRoot(t), "textbook", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "<!-- textbook:start -->")
	section, _, ok2 := strings.Cut(section, "<!-- textbook:end -->")
	if !ok || !ok2 {
		t.Fatal("textbook/README.md has no <!-- textbook:start --> ... <!-- textbook:end --> section")
	}
	n := 0
	for _, line := range strings.Split(section, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "```") {
			continue
		}
		n++
		line = strings.TrimSuffix(line, " &") // the script runs every server in the background
		if !strings.Contains(textbookScript, line) {
			t.Errorf("textbookScript does not type %q as printed", line)
		}
	}
	if n < 16 {
		t.Errorf("found %d commands in the section, want the chapter's 16", n)
	}
}

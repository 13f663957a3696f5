package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/experiments"
	"github.com/kafkarepro/kafkarepro/experiments/link"
)

func TestParseFlagsNetwork(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parseFlags([]string{"--network", "1gbit", "--services", "auto"}, &stderr)
	if err != nil || o.network.BitsPerSec != 1e9 || o.services != "local" {
		t.Errorf("--network 1gbit --services auto = %+v, %v; want a 1 Gb/s link and the local provider", o, err)
	}
	if o, err := parseFlags(nil, &stderr); err != nil || !o.network.IsLoopback() {
		t.Errorf("default network = %+v, %v; want loopback", o.network, err)
	}
	for _, bad := range [][]string{{"--network", "fast"}, {"--network", "1gbps"}, {"--network", "1gbit", "--services", "containers"}} {
		if _, err := parseFlags(bad, &stderr); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

// reproduceBinary builds this command into a folder everyone may read (the
// not-root case runs it as nobody).
func reproduceBinary(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kafkarepro-reproduce-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "reproduce")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// needLink skips unless this machine can make a link.
func needLink(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("makes network namespaces and starts real servers")
	}
	if err := link.Check(); err != nil {
		t.Skipf("no link here: %v", err)
	}
}

// leftBehind lists what of the run of parent pid is still on the machine:
// its namespaces (ip netns list), veth ends in this namespace (ip link),
// its lock, and a leftover servers' folder is checked by the caller.
func leftBehind(t *testing.T, pid int) []string {
	t.Helper()
	s, c := link.Names(strconv.Itoa(pid))
	netns, _ := exec.Command("ip", "netns", "list").Output()
	links, _ := exec.Command("ip", "link").Output()
	var left []string
	for _, n := range []string{s.Netns, c.Netns} {
		if strings.Contains(string(netns), n) {
			left = append(left, "netns "+n)
		}
	}
	for _, n := range []string{s.Iface, c.Iface} {
		if strings.Contains(string(links), n) {
			left = append(left, "link "+n)
		}
	}
	if _, err := os.Stat("/run/krnet/" + strconv.Itoa(pid) + ".lock"); err == nil {
		left = append(left, "lock")
	}
	return left
}

// runOverLink runs the command over a 1 Gb/s link and returns its exit
// code, pid and output.
func runOverLink(t *testing.T, bin string, args ...string) (code, pid int, out string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--network", "1gbit"}, args...)...)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	err := cmd.Run()
	code = cmd.ProcessState.ExitCode()
	if err != nil && code < 0 {
		t.Fatalf("%v: %v", args, err)
	}
	return code, cmd.Process.Pid, buf.String()
}

// The same quick run twice in a row, a run stopped with SIGINT in the
// middle, and one more run: each leaves no namespace, veth pair, qdisc
// (it lives on the veth) or lock behind, and the next starts cleanly.
func TestIntegration_LinkRunsLeaveNothing(t *testing.T) {
	needLink(t)
	bin := reproduceBinary(t)
	quick := func(name string, more ...string) {
		out := filepath.Join(t.TempDir(), name)
		code, pid, text := runOverLink(t, bin, append([]string{"--quick", "--systems", "kafka", "--out", out}, more...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", name, code, text)
		}
		if left := leftBehind(t, pid); len(left) > 0 {
			t.Errorf("%s left %q", name, left)
		}
		var sum experiments.Summary
		data, err := os.ReadFile(filepath.Join(out, "summary.json"))
		if err == nil {
			err = json.Unmarshal(data, &sum)
		}
		if err != nil {
			t.Fatal(err)
		}
		n := sum.Network
		if n == nil || n.Setup != "1 Gb/s link" || len(n.Ceilings) != 3 || !strings.Contains(sum.Machine.Network, "10.201.12.1") {
			t.Fatalf("%s: network %+v, machine %q", name, n, sum.Machine.Network)
		}
		k := sum.Systems[0]
		for _, c := range n.Ceilings {
			got := k.ConsumerRate()
			if c.Test == "producer" {
				got = k.ProducerRate(c.Batch)
			}
			t.Logf("%s: kafka %s batch %d: %.0f msg/s, %.1f%% of the link's %.0f", name, c.Test, c.Batch, got, 100*got/c.MsgPerS, c.MsgPerS)
			// A test cannot beat the link by more than what tbf's bucket and
			// the socket buffers hold: 2 MB of 40.
			if got > c.MsgPerS*1.06 {
				t.Errorf("%s: kafka %s batch %d at %.0f msg/s, above the link's %.0f: not shaped", name, c.Test, c.Batch, got, c.MsgPerS)
			}
		}
		report, _ := os.ReadFile(filepath.Join(out, "REPORT.md"))
		for _, want := range []string{"two network namespaces on one", "1 Gb/s shaped link", "## The link", "| measured over |", "## Which claims hold over loopback and which over the link"} {
			if !strings.Contains(string(report), want) {
				t.Errorf("%s: REPORT.md lacks %q", name, want)
			}
		}
	}
	// The first with every other experiment, short (their brokers and
	// figure 6's ZooKeeper start on the server host too), the others
	// with the §5 tests alone.
	quick("first", "--replication-messages", "100000", "--latency-seconds", "1s")
	none := []string{"--compression-messages", "0", "--replication-messages", "0", "--latency-seconds", "0", "--ceiling=false"}
	quick("second", none...)

	// SIGINT in the middle of a long producer test.
	cmd := exec.Command(bin, append([]string{"--network", "1gbit", "--systems", "kafka", "--messages", "50000000", "-v", "--out", filepath.Join(t.TempDir(), "interrupted")}, none...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	sc := bufio.NewScanner(stderr)
	started := false
	for sc.Scan() {
		log.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "kafka producer (batch 1): started") {
			started = true
			break
		}
	}
	if !started {
		_ = cmd.Process.Kill()
		t.Fatalf("the run did not start its producer:\n%s", log.String())
	}
	time.Sleep(2 * time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	log.Write(rest)
	_ = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("interrupted run: exit %d, want 1\n%s", code, log.String())
	}
	if left := leftBehind(t, cmd.Process.Pid); len(left) > 0 {
		t.Errorf("interrupted run left %q\n%s", left, log.String())
	}
	if !strings.Contains(log.String(), "stopping the run") {
		t.Errorf("the parent did not pass the signal on:\n%s", log.String())
	}
	quick("after the interrupted one", none...)
}

// Bad input stops before any server starts, with an error that says what
// is wrong: an unknown NETWORK value, a rate tc refuses, a machine without
// ip or tc, a user who is not root.
func TestIntegration_LinkBadInput(t *testing.T) {
	needLink(t)
	bin := reproduceBinary(t)
	for _, c := range []struct {
		name string
		args []string
		env  []string
		uid  uint32
		code int
		want []string
	}{
		{"unknown value", []string{"--network", "fast"}, nil, 0, 2, []string{"unknown NETWORK value", `"fast"`}},
		{"rate tc refuses", []string{"--network", "1bit"}, nil, 0, 1, []string{"tc could not shape the link", "NETWORK=1bit", "tbf"}},
		{"rate tc cannot represent", []string{"--network", "10000tbit"}, nil, 0, 1, []string{"tc could not shape the link", "burst 0"}},
		{"no ip, no tc", []string{"--network", "1gbit"}, []string{"PATH=" + t.TempDir()}, 0, 1, []string{"ip and tc not found", "iproute2"}},
		{"not root", []string{"--network", "1gbit"}, nil, 65534, 1, []string{"needs root", "uid 65534"}},
	} {
		cmd := exec.Command(bin, append(c.args, "--systems", "kafka", "--quick", "-v", "--out", filepath.Join(t.TempDir(), "bad"))...)
		cmd.Env = append(os.Environ(), c.env...)
		if c.uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: c.uid, Gid: c.uid}}
			cmd.Dir = "/"
		}
		out, _ := cmd.CombinedOutput()
		text := string(out)
		if code := cmd.ProcessState.ExitCode(); code != c.code {
			t.Errorf("%s: exit %d, want %d\n%s", c.name, code, c.code, text)
		}
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: output lacks %q:\n%s", c.name, w, text)
			}
		}
		if strings.Contains(text, "server started") || strings.Contains(text, "starting system") {
			t.Errorf("%s: a server started:\n%s", c.name, text)
		}
		if left := leftBehind(t, cmd.Process.Pid); len(left) > 0 {
			t.Errorf("%s: left %q", c.name, left)
		}
		t.Logf("%s: %s", c.name, strings.TrimSpace(text))
	}
}

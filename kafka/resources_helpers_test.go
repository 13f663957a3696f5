// Helpers of the resource tests (diskfull_test.go, memory_test.go,
// descriptors_test.go): root-only set-up that cleans up after itself, even
// after an earlier run died half way, and what they measure of a broker
// process.
package kafka_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// needRoot skips a test that mounts filesystems or changes another
// process's limits, and skips it under -short.
func needRoot(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts broker processes; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root (mount, prlimit)")
	}
}

// tmpfsPrefix names the directories the disk-full test mounts, so a later
// run can find and unmount what a killed run left behind.
const tmpfsPrefix = "kafka-diskfull-"

// mountTmpfs mounts a tmpfs of size bytes on a new directory and unmounts
// it when the test ends (lazily: a broker killed late may still hold a
// file). Mounts left by an earlier run that died are unmounted first.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if mounts, err := os.ReadFile("/proc/self/mounts"); err == nil {
		for _, line := range strings.Split(string(mounts), "\n") {
			f := strings.Fields(line)
			if len(f) > 1 && strings.HasPrefix(filepath.Base(f[1]), tmpfsPrefix) && filepath.Dir(f[1]) == filepath.Clean(os.TempDir()) {
				exec.Command("umount", "-l", f[1]).Run()
				os.RemoveAll(f[1])
			}
		}
	}
	dir, err := os.MkdirTemp("", tmpfsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Fatalf("mount a tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "-l", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
		os.Remove(dir)
	})
	return dir
}

// writeProps writes a server.properties for a broker process without
// ZooKeeper on a free port, with the given extra lines.
func writeProps(t *testing.T, logDir string, lines ...string) string {
	t.Helper()
	props := filepath.Join(t.TempDir(), "server.properties")
	text := "brokerid=0\nhostname=127.0.0.1\nport=0\nlog.dir=" + logDir + "\n" + strings.Join(lines, "\n") + "\n"
	if err := os.WriteFile(props, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return props
}

// stopServer stops a broker process with sig and waits for it to exit.
func stopServer(t *testing.T, sp *serverProcess, sig os.Signal) {
	t.Helper()
	if err := sp.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-sp.exited:
		if err != nil && sig != os.Kill {
			t.Fatalf("broker exited with %v after %v:\n%s", err, sig, sp.log())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("broker still running 30s after %v", sig)
	}
}

// rssBytes is the resident set size of process pid.
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	return statusField(t, pid, "VmRSS:")
}

// statusField reads a "kB" line of /proc/<pid>/status, in bytes.
func statusField(t *testing.T, pid int, name string) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s in /proc/%d/status: %q", name, pid, sc.Text())
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}

// openDescriptors counts the descriptors process pid has open.
func openDescriptors(t *testing.T, pid int) int {
	t.Helper()
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// loadAverage is the first field of /proc/loadavg, for the figures' context.
func loadAverage() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

// produceRaw writes one PRODUCE on rc's connection (no answer comes).
func (rc *rawClient) produceRaw(topic string, p int32, set []byte) error {
	rc.c.SetDeadline(time.Now().Add(20 * time.Second))
	_, err := rc.c.Write(protocol.ProduceRequest{Topic: topic, Partition: p, Messages: set}.AppendTo(nil))
	return err
}

// sync makes a round trip on rc's connection: the broker serves a
// connection's requests in order, so every PRODUCE written before has been
// appended (or refused) when it returns.
func (rc *rawClient) sync() {
	rc.t.Helper()
	if _, _, err := rc.call(protocol.OffsetsRequest{Topic: "sync", Time: protocol.OffsetsLatest, MaxNumOffsets: 1}); err != nil {
		rc.t.Fatalf("sync: %v", err)
	}
}

package localsvc

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

const sampleIO = `rchar: 6976
wchar: 5000
syscr: 10
syscw: 3
read_bytes: 4096
write_bytes: 12288
cancelled_write_bytes: 4096
`

func TestParseProcIO(t *testing.T) {
	c, err := ParseProcIO([]byte(sampleIO))
	if err != nil {
		t.Fatal(err)
	}
	if c.WriteBytes != 12288 || c.WChar != 5000 || c.CancelledWriteBytes != 4096 || c.Processes != 1 {
		t.Errorf("ParseProcIO = %+v, want write_bytes 12288, wchar 5000, cancelled 4096, 1 process", c)
	}
	for _, bad := range []string{"", "rchar: 1\n", "wchar: x\nwrite_bytes: 1\n", "wchar: 1\nwrite_bytes: -\n"} {
		if _, err := ParseProcIO([]byte(bad)); !errors.Is(err, ErrProcIO) {
			t.Errorf("ParseProcIO(%q) err = %v, want ErrProcIO", bad, err)
		}
	}
}

// fakeProc writes a /proc with the given processes: pid -> ppid, and an io
// file with write_bytes = wchar = pid*10 unless the pid is in noIO (a
// process that exited between the listing and the read).
func fakeProc(t *testing.T, ppid map[int]int, noIO ...int) {
	t.Helper()
	root := t.TempDir()
	skip := map[int]bool{}
	for _, p := range noIO {
		skip[p] = true
	}
	for pid, pp := range ppid {
		dir := filepath.Join(root, strconv.Itoa(pid))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		// comm with a space and a ')' as a process may name itself.
		stat := strconv.Itoa(pid) + " (x) y) S " + strconv.Itoa(pp) + " 1 1 0 -1\n"
		if err := os.WriteFile(filepath.Join(dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
		if skip[pid] {
			continue
		}
		n := strconv.Itoa(pid * 10)
		io := "rchar: 1\nwchar: " + n + "\nwrite_bytes: " + n + "\ncancelled_write_bytes: 1\n"
		if err := os.WriteFile(filepath.Join(dir, "io"), []byte(io), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "sys"), 0o755); err != nil { // not a process
		t.Fatal(err)
	}
	old := procRoot
	procRoot = root
	t.Cleanup(func() { procRoot = old })
}

// The server's tree is summed (RabbitMQ: script -> beam.smp -> its helpers),
// other processes are not, and a child that has just exited is skipped.
func TestProcessTreeIOSumsDescendants(t *testing.T) {
	fakeProc(t, map[int]int{1: 0, 100: 1, 101: 100, 102: 101, 103: 100, 200: 1, 201: 200}, 103)
	c, err := ProcessTreeIO(100)
	if err != nil {
		t.Fatal(err)
	}
	want := int64(1000 + 1010 + 1020)
	if c.WriteBytes != want || c.WChar != want || c.CancelledWriteBytes != 3 || c.Processes != 3 {
		t.Errorf("ProcessTreeIO(100) = %+v, want write_bytes = wchar = %d over 3 processes", c, want)
	}
	if _, err := ProcessTreeIO(999); !errors.Is(err, ErrProcIO) {
		t.Errorf("ProcessTreeIO of a missing process: err = %v, want ErrProcIO", err)
	}
}

// Server.IOCounters follows the pid file the scripts write.
func TestServerIOCountersReadsPidFile(t *testing.T) {
	fakeProc(t, map[int]int{1: 0, 300: 1, 301: 300})
	dir := t.TempDir()
	s := &Server{Service: "rabbitmq", Dir: dir}
	if _, err := s.IOCounters(); err == nil {
		t.Error("IOCounters without a pid file succeeded")
	}
	if err := os.WriteFile(filepath.Join(dir, "rabbitmq.pid"), []byte("300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := s.IOCounters()
	if err != nil {
		t.Fatal(err)
	}
	if c.WriteBytes != 6010 || c.Processes != 2 {
		t.Errorf("IOCounters = %+v, want 6010 bytes over 2 processes", c)
	}
	if err := os.WriteFile(filepath.Join(dir, "rabbitmq.pid"), []byte("nonsense"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IOCounters(); err == nil {
		t.Error("IOCounters with a bad pid file succeeded")
	}
}

// On the real /proc: the test process writes 1 MiB to a file and sees its
// wchar grow by at least that, and write_bytes too when the file is on a
// disk-backed file system (tmpfs pages are never sent to storage).
func TestProcessIOOfThisProcess(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skipf("no /proc/self/io here: %v", err)
	}
	dir := t.TempDir()
	before, err := ProcessTreeIO(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 20
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, n), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := ProcessTreeIO(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if d := after.WChar - before.WChar; d < n {
		t.Errorf("wchar grew by %d after writing %d bytes", d, n)
	}
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if fs.Type == unix.TMPFS_MAGIC || fs.Type == unix.RAMFS_MAGIC {
		t.Logf("%s is in memory; write_bytes not checked", dir)
		return
	}
	if d := after.WriteBytes - before.WriteBytes; d < n {
		t.Errorf("write_bytes grew by %d after writing %d bytes to %s", d, n, dir)
	}
}

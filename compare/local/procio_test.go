package local

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// Both kinds of local server expose their process I/O counters, which the
// harness samples around the consumer test (§5: disk writes on the broker).
var (
	_ compare.ProcessIO = (*scriptServer)(nil)
	_ compare.ProcessIO = (*kafkaServer)(nil)
)

// A script-started server's counters are those of the process in its pid
// file: here the test process itself.
func TestScriptServerIOCountersFollowsPidFile(t *testing.T) {
	if _, err := os.Stat("/proc/self/io"); err != nil {
		t.Skipf("no /proc/self/io here: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "activemq.pid"), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &scriptServer{srv: &localsvc.Server{Service: "activemq", Dir: dir}}
	before, err := s.IOCounters()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "f"), make([]byte, 64<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	after, err := s.IOCounters()
	if err != nil {
		t.Fatal(err)
	}
	if before.Processes < 1 || after.WChar-before.WChar < 64<<10 {
		t.Errorf("counters before %+v, after %+v: want wchar to grow by the 64 KiB written", before, after)
	}
}

package schedstat

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// This process has run for some CPU time, and its run time only grows.
func TestReadSelf(t *testing.T) {
	if _, err := os.Stat("/proc/self/task"); err != nil {
		t.Skip("no /proc/self/task here")
	}
	run1, _, ok := Read("self")
	if !ok || run1 <= 0 {
		t.Fatalf("Read(self) = %v, ok %v; want some CPU time", run1, ok)
	}
	for end := time.Now().Add(20 * time.Millisecond); time.Now().Before(end); {
	}
	run2, _, ok := Read(strconv.Itoa(os.Getpid()))
	if !ok || run2 <= run1 {
		t.Errorf("after 20 ms of spinning, run time %v then %v (ok %v), want it to grow", run1, run2, ok)
	}
	if _, _, ok := Read("0"); ok {
		t.Error("Read of pid 0 succeeded")
	}
}

// Package schedstat reads how long a process's threads ran on a CPU and how
// long they were runnable but waited for one, from Linux's
// /proc/<pid>/task/*/schedstat ("run_ns wait_ns slices" per thread). The
// perf tools print both per tenth of a run for themselves, and `make perf`
// for the broker, so that a slow stretch caused by other work on the machine
// (long wait, same CPU) can be told from one that did more work (more CPU).
package schedstat

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Read sums the schedstat of every thread of process pid ("self" for this
// one). ok is false where the files are missing or malformed (another
// kernel, another system). It allocates; threads that exited since an
// earlier read drop out of the sum.
func Read(pid string) (run, wait time.Duration, ok bool) {
	dir := filepath.Join("/proc", pid, "task")
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, false
	}
	for _, task := range tasks {
		b, err := os.ReadFile(filepath.Join(dir, task.Name(), "schedstat"))
		if err != nil {
			continue // the thread has exited meanwhile
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			return 0, 0, false
		}
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		w, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, 0, false
		}
		run += time.Duration(r)
		wait += time.Duration(w)
	}
	return run, wait, true
}

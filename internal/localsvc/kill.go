package localsvc

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Kill sends SIGKILL to the server process named in DIR/<service>.pid and to all its descendants, as a
// crash would; Stop afterwards still cleans up (e.g. RabbitMQ's epmd).
func (s *Server) Kill() error {
	pid, err := s.Pid()
	if err != nil {
		return fmt.Errorf("localsvc: kill: %w", err)
	}
	pids := append(descendants(pid), pid)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return nil
}

// descendants lists the children, grandchildren, ... of pid from the ppid
// field of /proc/*/stat.
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir(procRoot)
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join(procRoot, e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces, so parse after the last ')'.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(stat[i+1:]))
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			parent[p] = pp
		}
	}
	var out []int
	var walk func(int)
	walk = func(q int) {
		for c, pp := range parent {
			if pp == q {
				out = append(out, c)
				walk(c)
			}
		}
	}
	walk(pid)
	return out
}

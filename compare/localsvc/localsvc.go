// Package localsvc runs the real servers of the paper's §5 comparison (ActiveMQ, RabbitMQ, ...) on this
// machine through the repository's scripts/<service>.sh, for the adapters' integration tests and
// measurements, and measures the disk space of their stores.
//
// Every script has the same interface: `start DIR PORT` starts the server with all its files under DIR,
// listening on 127.0.0.1:PORT, waits until it answers and prints log=<path> and data=<path>; `stop DIR`
// stops it; `version` prints the server version. Start finds scripts/ by walking up from the working
// directory to go.mod, so tests work from any package directory.
package localsvc

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"kafkarepro/compare"
)

// ErrNoScripts means no scripts/ directory was found next to a go.mod above the working directory.
var ErrNoScripts = errors.New("localsvc: scripts/ not found")

// Server is one server started by scripts/<Service>.sh.
type Server struct {
	Service string
	Dir     string
	Port    int
	Log     string        // log=<path> printed by the script
	Data    string        // data=<path> printed by the script
	Version string        // printed by `scripts/<Service>.sh version`
	Startup time.Duration // from running the script until it returned (the server answered)
	script  string
}

// ScriptsDir walks up from the working directory to the directory holding go.mod and returns its
// scripts/ directory.
func ScriptsDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("localsvc: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			s := filepath.Join(dir, "scripts")
			if st, err := os.Stat(s); err == nil && st.IsDir() {
				return s, nil
			}
			return "", fmt.Errorf("%w: %s has go.mod but no scripts/", ErrNoScripts, dir)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w: no go.mod above the working directory", ErrNoScripts)
		}
		dir = parent
	}
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1. Ports in the upper half of the range are
// preferred (below 45536) so that RabbitMQ's derived ports (PORT+10000, PORT+20000) do not wrap into
// low ports.
func FreePort() (int, error) {
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("localsvc: free port: %w", err)
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if p < 45536 {
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("localsvc: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start runs `scripts/<service>.sh start dir port` and returns the started server. On failure the error
// carries the script's output, which names the server's log.
func Start(ctx context.Context, service, dir string, port int) (*Server, error) {
	scripts, err := ScriptsDir()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(scripts, service+".sh")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("localsvc: no script for %q: %w", service, err)
	}
	s := &Server{Service: service, Dir: dir, Port: port, script: script}
	if out, err := exec.CommandContext(ctx, script, "version").Output(); err == nil {
		s.Version = strings.TrimSpace(string(out))
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, script, "start", dir, strconv.Itoa(port))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	s.Startup = time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("localsvc: %s start %s %d: %w: %s", script, dir, port, err, strings.TrimSpace(stderr.String()))
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			switch k {
			case "log":
				s.Log = v
			case "data":
				s.Data = v
			}
		}
	}
	return s, nil
}

// Endpoint describes the server for an adapter.
func (s *Server) Endpoint() compare.Endpoint {
	return compare.Endpoint{Host: "127.0.0.1", Port: s.Port, DataDir: s.Data, LogPath: s.Log, Version: s.Version}
}

// Stop runs `scripts/<service>.sh stop dir`, which waits for the server to exit.
func (s *Server) Stop() error {
	out, err := exec.Command(s.script, "stop", s.Dir).CombinedOutput()
	if err != nil {
		return fmt.Errorf("localsvc: %s stop %s: %w: %s", s.script, s.Dir, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Kill sends SIGKILL to the server process named in DIR/<service>.pid and to all its descendants, as a
// crash would; Stop afterwards still cleans up (e.g. RabbitMQ's epmd).
func (s *Server) Kill() error {
	b, err := os.ReadFile(filepath.Join(s.Dir, s.Service+".pid"))
	if err != nil {
		return fmt.Errorf("localsvc: kill %s: %w", s.Service, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return fmt.Errorf("localsvc: kill %s: bad pid file: %w", s.Service, err)
	}
	pids := append(descendants(pid), pid)
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
	return nil
}

// descendants lists the children, grandchildren, ... of pid from /proc.
func descendants(pid int) []int {
	parent := map[int]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
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

// StartT starts service in a fresh t.TempDir on a free port and stops it in t.Cleanup. It skips the
// test under -short, since it needs the real server.
func StartT(t testing.TB, service string) *Server {
	t.Helper()
	if testing.Short() {
		t.Skipf("needs a real %s server (skipped with -short)", service)
	}
	dir := t.TempDir()
	var lastErr error
	for range 3 { // a free port may be taken between FreePort and the server's bind
		port, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		s, err := Start(ctx, service, dir, port)
		cancel()
		if err == nil {
			t.Cleanup(func() {
				if err := s.Stop(); err != nil {
					t.Errorf("stopping %s: %v", service, err)
				}
			})
			t.Logf("%s %s started on port %d in %v; log %s", service, s.Version, port, s.Startup.Round(time.Millisecond), s.Log)
			return s
		}
		lastErr = err
		if !strings.Contains(err.Error(), "in use") {
			break
		}
	}
	t.Fatalf("starting %s: %v", service, lastErr)
	return nil
}

// DiskUsage is the space allocated on disk for the files under dir (like du: blocks, not apparent
// sizes, so preallocated but unwritten journal space is not counted).
func DiskUsage(dir string) (int64, error) {
	if _, err := os.Stat(dir); err != nil {
		return 0, fmt.Errorf("localsvc: disk usage: %w", err)
	}
	var total int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) { // a file removed while we walk (e.g. a rolled journal)
				return nil
			}
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			total += st.Blocks * 512
		} else {
			total += info.Size()
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("localsvc: disk usage of %s: %w", dir, err)
	}
	return total, nil
}

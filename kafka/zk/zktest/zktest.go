// Package zktest starts real ZooKeeper servers for integration tests, through scripts/zookeeper.sh (the
// Debian package zookeeperd run with java directly), each on free local ports with its data in t.TempDir(),
// and stops them in t.Cleanup. Under `go test -short` every helper skips the test: Kafka's coordination
// (paper §3.2) is only tested against the real thing.
package zktest

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Script is the path of scripts/zookeeper.sh, found by walking up from the working directory to the
// repository's go.mod (a test module inside the repository, such as kafka/clientstest, has a go.mod of its
// own on the way up, which has no scripts/).
func Script() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			if _, err := os.Stat(filepath.Join(dir, "scripts", "zookeeper.sh")); err == nil {
				return filepath.Join(dir, "scripts", "zookeeper.sh"), nil
			}
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", ErrNoModuleRoot
		}
		dir = up
	}
}

// Server is one ZooKeeper server started for a test.
type Server struct {
	t       testing.TB
	script  string
	dir     string
	port    int
	id      int    // ensemble member id, 0 standalone
	servers string // ensemble SERVERS argument
	mu      sync.Mutex
	running bool
}

// Start runs a standalone ZooKeeper and returns its connect string ("127.0.0.1:port").
func Start(t testing.TB) string { return StartServer(t).Connect() }

// StartServer runs a standalone ZooKeeper whose life the test can control (Stop, Restart).
func StartServer(t testing.TB) *Server {
	t.Helper()
	skipShort(t)
	s := newServer(t, t.TempDir(), FreePort(t), 0, "")
	s.Restart()
	return s
}

func skipShort(t testing.TB) {
	if testing.Short() {
		t.Skip("needs a real ZooKeeper (skipped with -short)")
	}
}

func newServer(t testing.TB, dir string, port, id int, servers string) *Server {
	t.Helper()
	script, err := Script()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, script: script, dir: dir, port: port, id: id, servers: servers}
	t.Cleanup(s.Stop)
	return s
}

// Connect is the server's connect string.
func (s *Server) Connect() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Dir is the directory holding the server's zoo.cfg, data and zookeeper.log.
func (s *Server) Dir() string { return s.dir }

// Restart starts the server (again) with the same port and data; it fails the test if it does not answer.
func (s *Server) Restart() {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return
	}
	args := []string{s.script, "start", s.dir, strconv.Itoa(s.port)}
	if s.id > 0 {
		args = append(args, strconv.Itoa(s.id), s.servers)
	}
	out, err := exec.Command("bash", args...).CombinedOutput()
	if err != nil {
		s.t.Fatalf("zktest: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	s.running = true
}

// Stop stops the server; it is safe to call twice and is registered with t.Cleanup.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return
	}
	if out, err := exec.Command("bash", s.script, "stop", s.dir).CombinedOutput(); err != nil {
		s.t.Errorf("zktest: stop %s: %v\n%s", s.dir, err, out)
	}
	s.running = false
}

// StartEnsemble runs a three-member ensemble on local ports. connects[i] is member i's own connect string;
// strings.Join(connects, ",") names the ensemble. stop(i) and start(i) stop and restart member i (0-based).
func StartEnsemble(t testing.TB) (connects []string, stop func(i int), start func(i int)) {
	t.Helper()
	skipShort(t)
	base := freeRange(t, 9)
	servers := fmt.Sprintf("127.0.0.1:%d:%d,127.0.0.1:%d:%d,127.0.0.1:%d:%d",
		base+3, base+6, base+4, base+7, base+5, base+8)
	dir := t.TempDir()
	members := make([]*Server, 3)
	for i := range members {
		members[i] = newServer(t, filepath.Join(dir, strconv.Itoa(i+1)), base+i, i+1, servers)
		connects = append(connects, members[i].Connect())
	}
	for _, m := range members { // start returns once a member is up; serving needs a quorum
		m.Restart()
	}
	for i := range members {
		WaitServing(t, connects[i], time.Minute)
	}
	return connects, func(i int) { members[i].Stop() }, func(i int) { members[i].Restart() }
}

// WaitServing waits until the server at addr answers `srvr` with a serving mode.
func WaitServing(t testing.TB, addr string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		out, err := FourLetter(addr, "srvr")
		if err == nil && strings.Contains(out, "Mode: ") {
			return
		}
		last = out
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("zktest: %s not serving after %v: %q", addr, timeout, last)
}

// FourLetter sends a four-letter word (ruok, srvr, stat, cons, ...) and returns the answer.
func FourLetter(addr, word string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(c, word); err != nil {
		return "", err
	}
	b, err := io.ReadAll(c)
	return string(b), err
}

// FreePort returns a local TCP port nobody listens on right now.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// freeRange finds n consecutive free ports.
func freeRange(t testing.TB, n int) int {
	t.Helper()
next:
	for range 100 {
		base := 20000 + rand.IntN(30000)
		for p := base; p < base+n; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				continue next
			}
			l.Close()
		}
		return base
	}
	t.Fatalf("zktest: no %d consecutive free ports", n)
	return 0
}

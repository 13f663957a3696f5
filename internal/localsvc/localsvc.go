// Package localsvc runs the real servers of the paper's §5 comparison (ZooKeeper, ActiveMQ, RabbitMQ)
// on this machine through the repository's scripts/<service>.sh. It is the one place that runs those
// scripts: the adapters' integration tests use it directly (StartT), and the "local" provider of the
// experiments (package compare/local) starts its servers with it. It also measures the disk space of
// their stores (DiskUsage).
//
// Every script has the same interface: `start DIR PORT` starts the server with all its files under DIR,
// listening on LISTEN_ADDR:PORT (127.0.0.1 unless the environment says otherwise), waits until it answers
// and prints log=<path> and data=<path>; `stop DIR` stops it; `version` prints the server version. A
// Host says where the scripts run and which address they are given (StartOn). Start finds scripts/ by walking up from the working
// directory to the go.mod of this module (ModulePath), so tests work from any package directory.
package localsvc

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
)

// ModulePath is this repository's module path, as go.mod declares it.
const ModulePath = "github.com/kafkarepro/kafkarepro"

// Server is one server started by scripts/<Service>.sh.
type Server struct {
	Service string
	Dir     string
	Port    int
	Log     string        // log=<path> printed by the script
	Data    string        // data=<path> printed by the script (Dir if it printed none)
	Version string        // printed by `scripts/<Service>.sh version`, or the Debian package's version
	Startup time.Duration // from running the script until it returned (the server answered)
	Host    Host          // where it runs (the zero Host: this machine's loopback)
	script  string
}

// RepoDir walks up from the working directory to the directory holding the go.mod of module ModulePath.
func RepoDir() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoRepo, err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module "+ModulePath+"\n")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w above the working directory", ErrNoRepo)
		}
		dir = parent
	}
}

// ScriptsDir returns the scripts/ directory of the module root (see RepoDir).
func ScriptsDir() (string, error) {
	dir, err := RepoDir()
	if err != nil {
		return "", err
	}
	s := filepath.Join(dir, "scripts")
	if st, err := os.Stat(s); err != nil || !st.IsDir() {
		return "", fmt.Errorf("%w: %s has go.mod but no scripts/", ErrNoScripts, dir)
	}
	return s, nil
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1. Ports in the lower part of the range are
// preferred (below 45536) so that RabbitMQ's derived ports (PORT+10000, PORT+20000) stay valid.
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

// PortTaken reports whether a failed start says its port was taken: FreePort's port is free when
// FreePort returns, but the kernel may hand it out as the source port of a connection before the server
// binds it (the ephemeral range, 32768-60999 on Linux, covers FreePort's ports). The scripts say "in use"
// when they see it first, RabbitMQ "eaddrinuse" when its listener does. A caller starts again on another
// port.
func PortTaken(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "in use") || strings.Contains(msg, "eaddrinuse")
}

// StartOnFreePort starts service on host on a free port (Host.Port), in the folder newDir makes for each
// attempt, each bounded by timeout; when the port was taken before the server bound it (PortTaken) it
// starts again on another, up to three ports. The one retry of StartT and of the local provider.
func StartOnFreePort(ctx context.Context, host Host, scripts, service string, timeout time.Duration, newDir func() (string, error)) (*Server, error) {
	var err error
	for range 3 {
		var dir string
		var port int
		if dir, err = newDir(); err != nil {
			return nil, err
		}
		if port, err = host.Port(); err != nil {
			return nil, err
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		var s *Server
		s, err = StartOn(actx, host, scripts, service, dir, port)
		cancel()
		if err == nil || !PortTaken(err) || ctx.Err() != nil {
			return s, err
		}
	}
	return nil, err
}

// Start runs `scripts/<service>.sh start dir port` from the module's scripts/ directory and returns the
// started server.
func Start(ctx context.Context, service, dir string, port int) (*Server, error) {
	scripts, err := ScriptsDir()
	if err != nil {
		return nil, err
	}
	return StartFrom(ctx, scripts, service, dir, port)
}

// StartFrom runs `<scripts>/<service>.sh start dir port` on this machine's loopback (StartOn with the
// zero Host).
func StartFrom(ctx context.Context, scripts, service, dir string, port int) (*Server, error) {
	return StartOn(ctx, Host{}, scripts, service, dir, port)
}

// StartOn runs `<scripts>/<service>.sh start dir port` on host and returns the started server. On
// failure it runs the script's stop (the script should have cleaned up, but make sure), and the error
// wraps ErrStart, carries the tail of the script's stderr and names the server's log.
func StartOn(ctx context.Context, host Host, scripts, service, dir string, port int) (*Server, error) {
	script := filepath.Join(scripts, service+".sh")
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("localsvc: no script for %q: %w", service, err)
	}
	s := &Server{Service: service, Dir: dir, Port: port, Host: host, script: script}
	s.Version = version(ctx, script, service)
	start := time.Now()
	out, err := runScript(ctx, host, script, "start", dir, strconv.Itoa(port))
	s.Startup = time.Since(start)
	kv := parseKV(out)
	s.Log, s.Data = kv["log"], kv["data"]
	if err != nil {
		_, _ = runScript(context.Background(), host, script, "stop", dir)
		return nil, fmt.Errorf("%w: %s on %s port %d: %v (log=%s)", ErrStart, service, host.Address(), port, err, s.Log)
	}
	if s.Data == "" {
		s.Data = dir
	}
	return s, nil
}

// Endpoint describes the server for an adapter.
func (s *Server) Endpoint() compare.Endpoint {
	return compare.Endpoint{Host: s.Host.Address(), Port: s.Port, DataDir: s.Data, LogPath: s.Log, Version: s.Version}
}

// Stop runs `scripts/<service>.sh stop dir`, which waits for the server to exit (at most 2 minutes).
func (s *Server) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := runScript(ctx, s.Host, s.script, "stop", s.Dir)
	return err
}

// runScript runs a script with bash on host from the module root and returns its stdout; a failure
// carries the tail of its stderr.
func runScript(ctx context.Context, host Host, script string, args ...string) (string, error) {
	cmd := host.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Dir = filepath.Dir(filepath.Dir(script))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		return stdout.String(), fmt.Errorf("localsvc: %s %s: %w: %s", script, strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

// version asks the script for the server version, or dpkg for the version of its Debian package.
func version(ctx context.Context, script, service string) string {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if out, err := runScript(ctx, Host{}, script, "version"); err == nil && strings.TrimSpace(out) != "" {
		return strings.TrimSpace(out)
	}
	pkg := map[string]string{"zookeeper": "zookeeper", "activemq": "activemq", "rabbitmq": "rabbitmq-server"}[service]
	if pkg == "" {
		return "unknown"
	}
	out, err := exec.CommandContext(ctx, "dpkg-query", "-W", "-f=${Version}", pkg).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// parseKV reads the key=value lines a script prints (log=, data=, connect=).
func parseKV(out string) map[string]string {
	kv := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), "="); ok {
			kv[k] = v
		}
	}
	return kv
}

// WorkDir is the folder a provider keeps its servers' files under: root if
// given (created if missing), else a new temporary folder named after prefix,
// which the provider then owns and removes when it is done (own is true).
func WorkDir(root, prefix string) (dir string, own bool, err error) {
	if root != "" {
		if err := os.MkdirAll(root, 0o755); err != nil {
			return "", false, fmt.Errorf("create %s: %w", root, err)
		}
		return root, false, nil
	}
	dir, err = os.MkdirTemp("", prefix)
	if err != nil {
		return "", false, fmt.Errorf("create temporary folder: %w", err)
	}
	return dir, true, nil
}

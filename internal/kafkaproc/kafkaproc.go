// Package kafkaproc runs our broker as a separate process, the way a user
// runs it: the kafka command built from this tree, `kafka server-start` with
// a server.properties file written from a map, stopped with SIGTERM. It is
// the one launcher of the repository's measurements: the §5 experiments
// (compare/local) and `make perf` (experiments/cmd/perf) both start their
// brokers through it, with the same settings, broker.Shipped (named
// broker.ShippedName), unless a caller overrides some of them; Describe says
// which were used, and every result prints it.
//
// A broker's folder holds server.properties, kafka.log (its standard output
// and error) and logs/ (its log.dir). Stop checks that the shutdown was
// clean: exit status 0 and the clean-shutdown marker the log manager writes
// (§3.3: the next start then skips recovery).
package kafkaproc

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/localsvc"
	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/log"
)

// Errors of the launcher, wrapped with the command, the folder and the tail
// of the broker's log.
var (
	ErrBuild   = errors.New("kafkaproc: go build of the kafka command failed")
	ErrStart   = errors.New("kafkaproc: broker did not start")
	ErrUnclean = errors.New("kafkaproc: broker did not shut down cleanly")
)

// StopTimeout is how long Stop waits after SIGTERM before it kills.
const StopTimeout = 30 * time.Second

// BuildTemp builds this repository's kafka command (localsvc.RepoDir) into
// a new temporary folder named with prefix, which the caller removes.
func BuildTemp(ctx context.Context, prefix string) (tmp, bin string, err error) {
	repo, err := localsvc.RepoDir()
	if err != nil {
		return "", "", err
	}
	if tmp, err = os.MkdirTemp("", prefix); err != nil {
		return "", "", err
	}
	bin = filepath.Join(tmp, "kafka")
	if err := Build(ctx, repo, bin); err != nil {
		os.RemoveAll(tmp)
		return "", "", err
	}
	return tmp, bin, nil
}

// Build compiles ./kafka/cmd/kafka of the module in repoDir into out, with
// the go command named by $GO (default "go").
func Build(ctx context.Context, repoDir, out string) error {
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "build", "-o", out, "./kafka/cmd/kafka")
	cmd.Dir = repoDir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s build -o %s ./kafka/cmd/kafka in %s: %v: %s", ErrBuild, goCmd, out, repoDir, err, strings.TrimSpace(string(b)))
	}
	return nil
}

// Properties is broker.Shipped on 127.0.0.1, port and logDir.
func Properties(port int, logDir string) map[string]string {
	props := broker.Shipped()
	props["hostname"], props["port"], props["log.dir"] = "127.0.0.1", strconv.Itoa(port), logDir
	return props
}

// perLaunch are the keys every launch sets for itself; they are not part of
// a named set of settings.
var perLaunch = []string{"hostname", "port", "log.dir"}

// Describe names the settings of props: broker.ShippedName when they are
// broker.Shipped, else that name and the keys that differ, such as
// "kafka-0.7-shipped with log.flush.interval=1". The per-launch keys
// (hostname, port, log.dir) are left out.
func Describe(props map[string]string) string {
	shipped := broker.Shipped()
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(props)) {
		if !slices.Contains(perLaunch, k) && shipped[k] != props[k] {
			diff = append(diff, k+"="+props[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(shipped)) {
		if _, ok := props[k]; !ok {
			diff = append(diff, k+" unset")
		}
	}
	if len(diff) == 0 {
		return broker.ShippedName
	}
	return broker.ShippedName + " with " + strings.Join(diff, ", ")
}

// Format writes props as a server.properties file, keys sorted.
func Format(props map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# written by internal/kafkaproc: %s\n", Describe(props))
	for _, k := range slices.Sorted(maps.Keys(props)) {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return b.String()
}

// Options describe one broker process.
type Options struct {
	// Bin is the kafka command (see Build).
	Bin string
	// Dir is the broker's folder (created if missing).
	Dir string
	// Port is the broker's TCP port; 0 picks a free one on Host.
	Port int
	// Host is where the broker runs and the address it listens on (its
	// hostname property); the zero Host is this machine's 127.0.0.1.
	Host localsvc.Host
	// Override changes keys of Properties(Port, Dir/logs); hostname, port
	// and log.dir stay the launcher's.
	Override map[string]string
	// Args are more flags of server-start (such as --cpuprofile FILE).
	Args []string
	// StartTimeout bounds the wait for the broker's port (default 1 minute).
	StartTimeout time.Duration
}

// Process is a running broker.
type Process struct {
	props   map[string]string
	dir     string
	logPath string
	host    string
	port    int
	cmd     *exec.Cmd
	logFile *os.File
	exited  chan struct{}
	waitErr error
	once    sync.Once
	stopErr error
}

// Launcher starts one broker after another with bin on host, each in a
// folder of its own under root (broker1, broker2, ...), with props over the
// shipped settings and extra over props: what figure 7's experiment asks of
// its Start (experiments/latency.Config), one broker per flush setting.
func Launcher(bin, root string, host localsvc.Host, extra map[string]string) func(ctx context.Context, props map[string]string) (addr, settings string, stop func() error, err error) {
	n := 0
	return func(ctx context.Context, props map[string]string) (string, string, func() error, error) {
		n++
		override := maps.Clone(props)
		if override == nil {
			override = map[string]string{}
		}
		maps.Copy(override, extra)
		b, err := Start(ctx, Options{Bin: bin, Dir: filepath.Join(root, fmt.Sprintf("broker%d", n)), Override: override, Host: host})
		if err != nil {
			return "", "", nil, err
		}
		return b.Addr(), b.Settings(), b.Stop, nil
	}
}

// Start writes Dir/server.properties, starts `Bin server-start` on it with
// its output in Dir/kafka.log, and returns once the broker accepts a TCP
// connection. A broker that exits or does not answer in time is an error
// wrapping ErrStart that names the log and quotes its end.
func Start(ctx context.Context, o Options) (*Process, error) {
	if o.StartTimeout <= 0 {
		o.StartTimeout = time.Minute
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	port := o.Port
	if port == 0 {
		var err error
		if port, err = o.Host.Port(); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrStart, err)
		}
	}
	props := Properties(port, filepath.Join(o.Dir, "logs"))
	props["hostname"] = o.Host.Address()
	for k, v := range o.Override {
		if !slices.Contains(perLaunch, k) {
			props[k] = v
		}
	}
	propsPath := filepath.Join(o.Dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(Format(props)), 0o644); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	p := &Process{props: props, dir: o.Dir, host: o.Host.Address(), port: port, logPath: filepath.Join(o.Dir, "kafka.log"), exited: make(chan struct{})}
	var err error
	if p.logFile, err = os.Create(p.logPath); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrStart, err)
	}
	p.cmd = o.Host.Command(o.Bin, append([]string{"server-start", propsPath}, o.Args...)...)
	p.cmd.Stdout, p.cmd.Stderr, p.cmd.Dir = p.logFile, p.logFile, o.Dir
	if err := p.cmd.Start(); err != nil {
		p.logFile.Close()
		return nil, fmt.Errorf("%w: %s: %v (log=%s)", ErrStart, o.Bin, err, p.logPath)
	}
	go func() { p.waitErr = p.cmd.Wait(); close(p.exited) }()
	if err := p.waitReady(ctx, o.StartTimeout); err != nil {
		return nil, errors.Join(err, p.Kill())
	}
	return p, nil
}

// waitReady waits until the broker accepts a TCP connection.
func (p *Process) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("%w: kafka exited during start-up (%v); log=%s: %s", ErrStart, p.waitErr, p.logPath, Tail(p.logPath))
		case <-ctx.Done():
			return fmt.Errorf("%w: kafka: %v (log=%s)", ErrStart, ctx.Err(), p.logPath)
		default:
		}
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: kafka: no answer on %s within %v; log=%s: %s", ErrStart, p.Addr(), timeout, p.logPath, Tail(p.logPath))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Addr is the broker's host:port.
func (p *Process) Addr() string { return net.JoinHostPort(p.host, strconv.Itoa(p.port)) }

// Host is the address the broker listens on.
func (p *Process) Host() string { return p.host }

// Port is the broker's TCP port.
func (p *Process) Port() int { return p.port }

// Pid is the broker's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Dir is the broker's folder; LogDir its log.dir; LogPath its output.
func (p *Process) Dir() string     { return p.dir }
func (p *Process) LogDir() string  { return p.props["log.dir"] }
func (p *Process) LogPath() string { return p.logPath }

// Properties is the server.properties the broker runs with.
func (p *Process) Properties() map[string]string { return p.props }

// Settings is Describe of the broker's properties.
func (p *Process) Settings() string { return Describe(p.props) }

// Stop sends SIGTERM, waits up to StopTimeout (then kills), and checks the
// shutdown was clean: exit status 0 and log.dir's clean-shutdown marker.
// Otherwise the error wraps ErrUnclean and quotes the end of the log.
func (p *Process) Stop() error {
	p.once.Do(func() {
		select {
		case <-p.exited:
			p.stopErr = fmt.Errorf("%w: kafka (pid %d) had already exited (%v); log=%s: %s", ErrUnclean, p.Pid(), p.waitErr, p.logPath, Tail(p.logPath))
			p.logFile.Close()
			return
		default:
		}
		_ = p.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(StopTimeout):
			_ = p.cmd.Process.Kill()
			<-p.exited
			p.stopErr = fmt.Errorf("%w: kafka (pid %d) did not stop within %v after SIGTERM, killed; log=%s", ErrUnclean, p.Pid(), StopTimeout, p.logPath)
		}
		p.logFile.Close()
		if p.stopErr != nil {
			return
		}
		marker := filepath.Join(p.LogDir(), log.CleanShutdownFile)
		if p.waitErr != nil {
			p.stopErr = fmt.Errorf("%w: kafka (pid %d) exited with %v after SIGTERM; log=%s: %s", ErrUnclean, p.Pid(), p.waitErr, p.logPath, Tail(p.logPath))
		} else if _, err := os.Stat(marker); err != nil {
			p.stopErr = fmt.Errorf("%w: no marker %s after exit 0: %v; log=%s: %s", ErrUnclean, marker, err, p.logPath, Tail(p.logPath))
		}
	})
	return p.stopErr
}

// Kill ends the broker with SIGKILL, as `kill -9` or a crash would (no
// flush, no clean-shutdown marker: the next start recovers its logs, §3.3),
// and waits for it to exit. The fault tests of replication kill leaders
// with it (kafka/internal/faults). Kill after Stop, or twice, does nothing.
func (p *Process) Kill() error {
	p.once.Do(func() {
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		p.logFile.Close()
	})
	return nil
}

// Exited is closed when the broker's process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Tail returns the last lines of a log for an error message.
func Tail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "; ")
}

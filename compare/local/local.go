// Package local is the "local" compare.Provider: it runs the servers of the
// §5 experiments as plain processes on this machine. ZooKeeper, ActiveMQ and
// RabbitMQ come from their Debian packages through scripts/<svc>.sh (start
// DIR PORT, stop DIR, version); our own broker is built once from
// kafka/cmd/kafka with `go build -o` and started with `kafka server-start`
// and a generated server.properties. Every server gets a free port on
// 127.0.0.1 and a directory in the provider's temporary folder for its data
// and logs; Stop stops it and removes that directory unless Keep is set.
package local

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"kafkarepro/compare"
)

// Errors of the local provider.
var (
	ErrUnknownService = errors.New("local: unknown service")
	ErrStart          = errors.New("local: server did not start")
	ErrNoRepo         = errors.New("local: cannot find the kafkarepro module root")
)

// Options configures a Provider.
type Options struct {
	// Root is the folder for every server's files; "" makes a temporary one.
	Root string
	// RepoDir is the module root holding scripts/ and kafka/cmd/kafka; ""
	// looks upwards from the working directory for go.mod.
	RepoDir string
	// Keep leaves data and logs in place on Stop and Close.
	Keep bool
	// KafkaProperties override the generated server.properties of our broker.
	KafkaProperties map[string]string
	// StartTimeout bounds one server start (default 3 minutes).
	StartTimeout time.Duration
	Log          *slog.Logger
}

// Provider starts servers as local processes.
type Provider struct {
	opts    Options
	root    string
	ownRoot bool

	buildOnce sync.Once
	kafkaBin  string
	buildErr  error

	mu sync.Mutex
	n  int
}

// New returns a local provider.
func New(opts Options) (*Provider, error) {
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if opts.RepoDir == "" {
		dir, err := FindRepo()
		if err != nil {
			return nil, err
		}
		opts.RepoDir = dir
	}
	p := &Provider{opts: opts, root: opts.Root}
	if p.root == "" {
		dir, err := os.MkdirTemp("", "kafkarepro-local-")
		if err != nil {
			return nil, fmt.Errorf("local: create temporary folder: %w", err)
		}
		p.root, p.ownRoot = dir, true
	} else if err := os.MkdirAll(p.root, 0o755); err != nil {
		return nil, fmt.Errorf("local: create %s: %w", p.root, err)
	}
	return p, nil
}

// FindRepo looks upwards from the working directory for the go.mod of
// module kafkarepro.
func FindRepo() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoRepo, err)
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && bytes.HasPrefix(bytes.TrimSpace(data), []byte("module kafkarepro")) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("%w above the working directory", ErrNoRepo)
		}
		dir = parent
	}
}

// Name implements compare.Provider.
func (p *Provider) Name() string { return "local" }

// Root is the folder holding every server's files.
func (p *Provider) Root() string { return p.root }

// Close removes the provider's temporary folder (unless Keep). Stop every
// server first.
func (p *Provider) Close() error {
	if p.ownRoot && !p.opts.Keep {
		return os.RemoveAll(p.root)
	}
	return nil
}

// Start implements compare.Provider for "zookeeper", "activemq",
// "rabbitmq" and "kafka" (our broker).
func (p *Provider) Start(ctx context.Context, service string) (compare.Server, error) {
	switch service {
	case "zookeeper", "activemq", "rabbitmq":
	case "kafka":
		return p.startKafka(ctx)
	default:
		return nil, fmt.Errorf("%w %q (want zookeeper, kafka, activemq or rabbitmq)", ErrUnknownService, service)
	}
	dir, port, err := p.prepare(service)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	script := filepath.Join(p.opts.RepoDir, "scripts", service+".sh")
	out, err := p.run(ctx, script, "start", dir, strconv.Itoa(port))
	kv := parseKV(out)
	if err != nil {
		// The script stops what it started when it fails, but make sure.
		_, _ = p.run(context.Background(), script, "stop", dir)
		return nil, fmt.Errorf("%w: %s on port %d: %v (log=%s)", ErrStart, service, port, err, kv["log"])
	}
	ep := compare.Endpoint{Host: "127.0.0.1", Port: port, DataDir: kv["data"], LogPath: kv["log"]}
	if ep.DataDir == "" {
		ep.DataDir = dir
	}
	ep.Version = p.version(script, service)
	p.opts.Log.Info("server started", "service", service, "port", port, "dir", dir, "version", ep.Version)
	return &scriptServer{p: p, script: script, dir: dir, ep: ep}, nil
}

// prepare makes the service's own directory and picks a free port.
func (p *Provider) prepare(service string) (dir string, port int, err error) {
	p.mu.Lock()
	p.n++
	dir = filepath.Join(p.root, fmt.Sprintf("%s-%d", service, p.n))
	p.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", 0, fmt.Errorf("local: create %s: %w", dir, err)
	}
	port, err = FreePort()
	return dir, port, err
}

// FreePort returns a TCP port on 127.0.0.1 that nobody listens on now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("local: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// run runs a script and returns its stdout; a failure carries the tail of
// its stderr.
func (p *Provider) run(ctx context.Context, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "bash", append([]string{script}, args...)...)
	cmd.Dir = p.opts.RepoDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if len(msg) > 2000 {
			msg = "..." + msg[len(msg)-2000:]
		}
		return stdout.String(), fmt.Errorf("%s %s: %w: %s", filepath.Base(script), strings.Join(args, " "), err, msg)
	}
	return stdout.String(), nil
}

func (p *Provider) version(script, service string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := p.run(ctx, script, "version"); err == nil && strings.TrimSpace(out) != "" {
		return strings.TrimSpace(out)
	}
	pkg := map[string]string{"zookeeper": "zookeeper", "activemq": "activemq", "rabbitmq": "rabbitmq-server"}[service]
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

// scriptServer is a server started by scripts/<svc>.sh.
type scriptServer struct {
	p      *Provider
	script string
	dir    string
	ep     compare.Endpoint
	once   sync.Once
	err    error
}

func (s *scriptServer) Endpoint() compare.Endpoint { return s.ep }

// Dir is the folder holding the server's data and logs.
func (s *scriptServer) Dir() string { return s.dir }

// Stop stops the server and removes its folder unless the provider keeps it.
func (s *scriptServer) Stop() error {
	s.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		_, s.err = s.p.run(ctx, s.script, "stop", s.dir)
		if s.err == nil && !s.p.opts.Keep {
			s.err = os.RemoveAll(s.dir)
		}
	})
	return s.err
}

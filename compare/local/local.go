// Package local is the "local" compare.Provider: it runs the servers of the
// §5 experiments as plain processes on this machine. ZooKeeper, ActiveMQ and
// RabbitMQ come from their Debian packages through scripts/<svc>.sh (start
// DIR PORT, stop DIR, version), which package internal/localsvc runs for both
// this provider and the adapters' tests; our own broker is built once from
// kafka/cmd/kafka with `go build -o` and started with `kafka server-start`
// and a generated server.properties. Every server gets a free port on its
// host (Options.Host: 127.0.0.1 of this machine, or the server host of the
// experiments' two-host set-up, package experiments/link) and a directory
// in the provider's temporary folder for its data and logs; Stop stops it
// and removes that directory unless Keep is set.
package local

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
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
	// Host is where every server runs and listens; the zero Host is this
	// machine's loopback.
	Host localsvc.Host
	Log  *slog.Logger // gets component=compare/local; nil: slog.Default()
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
	opts.Log = opts.Log.With("component", "compare/local")
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
	root, own, err := localsvc.WorkDir(opts.Root, "kafkarepro-local-")
	if err != nil {
		return nil, fmt.Errorf("local: %w", err)
	}
	return &Provider{opts: opts, root: root, ownRoot: own}, nil
}

// FindRepo looks upwards from the working directory for the go.mod of
// module kafkarepro (see localsvc.RepoDir).
func FindRepo() (string, error) { return localsvc.RepoDir() }

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
	srv, err := localsvc.StartOnFreePort(ctx, p.opts.Host, filepath.Join(p.opts.RepoDir, "scripts"), service, p.opts.StartTimeout,
		func() (string, error) { return p.newDir(service) })
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	p.opts.Log.Info("server started", "service", service, "addr", p.opts.Host.Address(), "port", srv.Port, "dir", srv.Dir, "version", srv.Version)
	return &scriptServer{p: p, srv: srv}, nil
}

// prepare makes the service's own directory and picks a free port on the
// servers' host.
func (p *Provider) prepare(service string) (dir string, port int, err error) {
	if dir, err = p.newDir(service); err != nil {
		return "", 0, err
	}
	port, err = p.opts.Host.Port()
	return dir, port, err
}

// newDir makes a new folder of the service's under the provider's root.
func (p *Provider) newDir(service string) (string, error) {
	p.mu.Lock()
	p.n++
	dir := filepath.Join(p.root, fmt.Sprintf("%s-%d", service, p.n))
	p.mu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("local: create %s: %w", dir, err)
	}
	return dir, nil
}

// FreePort returns a TCP port on 127.0.0.1 that nobody listens on now
// (see localsvc.FreePort).
func FreePort() (int, error) { return localsvc.FreePort() }

// scriptServer is a server started by scripts/<svc>.sh through localsvc.
type scriptServer struct {
	p    *Provider
	srv  *localsvc.Server
	once sync.Once
	err  error
}

func (s *scriptServer) Endpoint() compare.Endpoint { return s.srv.Endpoint() }

// Dir is the folder holding the server's data and logs.
func (s *scriptServer) Dir() string { return s.srv.Dir }

// IOCounters implements compare.ProcessIO: the I/O counters of the process
// in the script's pid file and of its descendants (see localsvc.ProcessTreeIO).
func (s *scriptServer) IOCounters() (compare.IOCounters, error) { return s.srv.IOCounters() }

// Stop stops the server and removes its folder unless the provider keeps it.
func (s *scriptServer) Stop() error {
	s.once.Do(func() {
		s.err = s.srv.Stop()
		if s.err == nil && !s.p.opts.Keep {
			s.err = os.RemoveAll(s.srv.Dir)
		}
	})
	return s.err
}

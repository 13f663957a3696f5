// Package containers is the "containers" compare.Provider: it starts the
// servers of the paper's §5 experiments (ZooKeeper, our broker, ActiveMQ,
// RabbitMQ) as Docker containers through testcontainers-go generic
// containers, with the same server settings as the local path
// (compare/local and scripts/): compare/config/ is mounted into the
// ActiveMQ and RabbitMQ containers, and our broker gets the properties of
// kafkaproc.Properties (broker.Shipped, the settings of every measurement).
//
// §5 measured one broker machine and one client machine; here the server runs
// in a container and the client on the host. By default the client talks to
// the container's own address on the Docker bridge (reachable from the host
// on Linux), not through a published port, so that no user-space port proxy
// sits between the two and skews the throughput (Options.PublishedPorts
// switches to published ports, needed on Docker Desktop).
//
// Each server keeps its data in a host directory bind-mounted into the
// container, so Endpoint.DataDir is a host path and the adapters' DiskBytes
// (the paper's bytes-per-message overhead) works as on the local path. The
// container's console output is copied to Endpoint.LogPath.
//
// Image names come from images.env (embedded; see DefaultImages).
// scripts/build-images.sh makes sure the images exist, building local
// stand-ins under the official names where nothing can be pulled. The
// testcontainers reaper (Ryuk) is disabled because its image is usually
// absent on such machines; instead every container is removed by Stop, and
// carries the label kafka-repro.provider=containers so leftovers are easy to
// find (`docker ps -a --filter label=kafka-repro.provider=containers`).
package containers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/local"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// Label keys set on every container this package starts.
const (
	LabelProvider = "kafka-repro.provider" // value "containers"
	LabelService  = "kafka-repro.service"  // zookeeper, kafka, activemq, rabbitmq
)

// Options configures a Provider.
type Options struct {
	// Images overrides image names; zero fields take DefaultImages().
	Images Images
	// Root is the host folder for every server's data and log; "" makes a
	// temporary one, removed by Close.
	Root string
	// RepoDir is the module root holding compare/config and docker/; ""
	// looks upwards from the working directory for go.mod.
	RepoDir string
	// Keep leaves data and logs on the host after Stop and Close.
	Keep bool
	// KafkaProperties override the broker's server.properties (as in
	// local.Options); port, log.dir and hostname belong to the container.
	KafkaProperties map[string]string
	// KafkaZooKeeper registers brokers in ZooKeeper (enable.zookeeper=true)
	// when this provider runs a ZooKeeper container. The local path runs the
	// §5 experiments without ZooKeeper, so the default is false.
	KafkaZooKeeper bool
	// PublishedPorts makes clients use the host's published ports instead of
	// the containers' own addresses.
	PublishedPorts bool
	// Labels are added to every container (tests use them to find theirs).
	Labels map[string]string
	// StartTimeout bounds one server start (default 3 minutes).
	StartTimeout time.Duration
	Log          *slog.Logger // gets component=compare/containers; nil: slog.Default()
}

// Provider starts servers as Docker containers. It satisfies compare.Provider.
type Provider struct {
	opts    Options
	root    string
	ownRoot bool
	// loopback binds published ports to 127.0.0.1 only (a local daemon).
	loopback bool

	mu     sync.Mutex
	n      int
	zkAddr string // "ip:2181" of the running ZooKeeper container, if any
	live   map[*server]struct{}
}

// NewProvider returns a containers provider. It disables the testcontainers
// reaper unless TESTCONTAINERS_RYUK_DISABLED is already set (see setup).
func NewProvider(opts Options) (*Provider, error) {
	loopback := setup()
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	opts.Log = opts.Log.With("component", "compare/containers")
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	opts.Images = opts.Images.withDefaults()
	if opts.RepoDir == "" {
		dir, err := local.FindRepo()
		if err != nil {
			return nil, fmt.Errorf("containers: %w", err)
		}
		opts.RepoDir = dir
	}
	root, own, err := localsvc.WorkDir(opts.Root, "kafka-repro-containers-")
	if err != nil {
		return nil, fmt.Errorf("containers: %w", err)
	}
	return &Provider{opts: opts, root: root, ownRoot: own, loopback: loopback, live: make(map[*server]struct{})}, nil
}

// Name implements compare.Provider.
func (p *Provider) Name() string { return "containers" }

// DataRoot is the host folder holding every server's data and log.
func (p *Provider) DataRoot() string { return p.root }

// Images are the image names this provider starts.
func (p *Provider) Images() Images { return p.opts.Images }

// Close stops every server still running and removes the provider's
// temporary folder (unless Keep).
func (p *Provider) Close() error {
	p.mu.Lock()
	live := make([]*server, 0, len(p.live))
	for s := range p.live {
		live = append(live, s)
	}
	p.mu.Unlock()
	var errs []error
	for _, s := range live {
		errs = append(errs, s.Stop())
	}
	if p.ownRoot && !p.opts.Keep {
		errs = append(errs, removeAll(p.root))
	}
	return errors.Join(errs...)
}

// Start implements compare.Provider: it starts service ("zookeeper",
// "kafka", "activemq" or "rabbitmq") in a new container and waits until it
// serves. A failed start removes the container and names the log file.
func (p *Provider) Start(ctx context.Context, service string) (compare.Server, error) {
	image := p.opts.Images.For(service)
	if image == "" {
		return nil, fmt.Errorf("%w %q (want zookeeper, kafka, activemq or rabbitmq)", ErrUnknownService, service)
	}
	p.mu.Lock()
	p.n++
	dir := filepath.Join(p.root, fmt.Sprintf("%s-%d", service, p.n))
	zkAddr := p.zkAddr
	p.mu.Unlock()
	sp, err := p.spec(service, dir, zkAddr)
	if err != nil {
		return nil, err
	}
	s, err := p.run(ctx, image, sp)
	if err != nil {
		if !p.opts.Keep {
			_ = removeAll(dir)
		}
		return nil, err
	}
	p.mu.Lock()
	p.live[s] = struct{}{}
	if service == "zookeeper" {
		p.zkAddr = s.internalAddr
	}
	p.mu.Unlock()
	p.opts.Log.Info("server started", "service", service, "image", image,
		"container", shortID(s.ctr.GetContainerID()), "addr", fmt.Sprintf("%s:%d", s.ep.Host, s.ep.Port), "dir", dir)
	return s, nil
}

// forget drops s from the live set when it stops.
func (p *Provider) forget(s *server) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.live, s)
	if s.service == "zookeeper" && p.zkAddr == s.internalAddr {
		p.zkAddr = ""
	}
}

// Available tells whether the containers provider can run here: Docker
// answers and every default image (DefaultImages) exists locally or can be
// pulled. experiments/cmd/reproduce --services=auto uses it to choose.
func Available(ctx context.Context) error {
	return CheckImages(ctx, DefaultImages())
}

// CheckImages is Available for the given images (zero fields take defaults).
func CheckImages(ctx context.Context, im Images) error {
	setup()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx, client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	defer cli.Close()
	return checkImages(ctx, cli, im.withDefaults())
}

// setup configures testcontainers through its environment variables, which
// it reads once, at its first use in the process; so this runs before every
// first use in this package. Variables already set are left alone.
// It also routes testcontainers' own log lines to slog (debug level).
//   - TESTCONTAINERS_RYUK_DISABLED=true: the reaper's image is usually absent
//     where nothing can be pulled, and Stop removes every container anyway.
//   - TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1 when the Docker daemon shares
//     this network namespace (its docker0 bridge is a local interface):
//     testcontainers takes a machine with /.dockerenv (a sandbox, a CI job)
//     for a container next to the daemon and would dial the default gateway,
//     where the loopback-only published ports do not answer.
//
// It returns whether published ports should be bound to 127.0.0.1 only.
func setup() (loopback bool) {
	setupOnce.Do(func() {
		if _, set := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !set {
			os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		}
		// testcontainers prints a banner and progress lines through its
		// default logger; send them to slog's debug level instead.
		tclog.SetDefault(tcLogger{})
		if _, err := net.InterfaceByName("docker0"); err == nil {
			if h, set := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !set {
				os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
				setupLoopback = true
			} else {
				setupLoopback = h == "127.0.0.1" || h == "localhost"
			}
		}
	})
	return setupLoopback
}

var (
	setupOnce     sync.Once
	setupLoopback bool
)

// tcLogger sends testcontainers' messages to slog at debug level, marked
// source=testcontainers (to slog.Default() when l is nil).
type tcLogger struct{ l *slog.Logger }

func (t tcLogger) Printf(format string, v ...any) {
	l := t.l
	if l == nil {
		l = slog.Default()
	}
	l.Debug(strings.TrimSpace(fmt.Sprintf(format, v...)), "source", "testcontainers")
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

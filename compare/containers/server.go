package containers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"

	"github.com/kafkarepro/kafkarepro/compare"
)

// server is one started container. It satisfies compare.Server.
type server struct {
	p            *Provider
	service      string
	ctr          *testcontainers.DockerContainer
	ep           compare.Endpoint
	dir          string
	props        map[string]string
	internalAddr string // "containerIP:port", reachable from other containers
	logFile      *os.File

	stopOnce sync.Once
	stopErr  error
}

// Endpoint implements compare.Server.
func (s *server) Endpoint() compare.Endpoint { return s.ep }

// Properties is the broker's server.properties in force (kafka only), for
// the adapter's Settings.
func (s *server) Properties() map[string]string { return maps.Clone(s.props) }

// ContainerID is the Docker id of the server's container.
func (s *server) ContainerID() string { return s.ctr.GetContainerID() }

// Stop implements compare.Server: it stops the server (SIGTERM, up to 30 s
// for a clean shutdown), removes its container and anonymous volumes, and
// removes its host folder unless the provider keeps files.
func (s *server) Stop() error {
	s.stopOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		var errs []error
		if err := s.ctr.Terminate(ctx, testcontainers.StopTimeout(30*time.Second)); err != nil {
			errs = append(errs, fmt.Errorf("containers: remove %s container %s: %w", s.service, shortID(s.ctr.GetContainerID()), err))
		}
		errs = append(errs, s.logFile.Close())
		s.p.forget(s)
		if !s.p.opts.Keep {
			errs = append(errs, removeAll(s.dir))
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

// run starts the container of sp from image and waits until it serves.
func (p *Provider) run(ctx context.Context, image string, sp spec) (*server, error) {
	for _, d := range append([]string{sp.dir}, sp.mkdirs...) {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("containers: make %s: %w", d, err)
		}
	}
	// The official images run their servers as their own users: let them
	// write (our stand-ins' entrypoints chown these anyway).
	for _, d := range sp.mkdirs {
		if err := os.Chmod(d, 0o777); err != nil {
			return nil, fmt.Errorf("containers: chmod %s: %w", d, err)
		}
	}
	logPath := filepath.Join(sp.dir, sp.service+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("containers: create %s: %w", logPath, err)
	}
	labels := map[string]string{LabelProvider: "containers", LabelService: sp.service}
	maps.Copy(labels, p.opts.Labels)
	port := network.MustParsePort(sp.portSpec())
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithLogger(tcLogger{p.opts.Log}),
		testcontainers.WithExposedPorts(sp.portSpec()),
		testcontainers.WithLabels(labels),
		testcontainers.WithLogConsumers(&fileConsumer{w: logFile}),
		testcontainers.WithWaitStrategyAndDeadline(p.opts.StartTimeout, sp.wait...),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.Binds = append(hc.Binds, sp.binds...)
			if p.loopback {
				// Published ports answer on the loopback interface only.
				hc.PortBindings = network.PortMap{port: {{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: "0"}}}
			}
		}),
	}
	if len(sp.env) > 0 {
		opts = append(opts, testcontainers.WithEnv(sp.env))
	}
	if sp.entrypoint != nil {
		opts = append(opts, testcontainers.WithEntrypoint(sp.entrypoint...))
	}
	if sp.cmd != nil {
		opts = append(opts, testcontainers.WithCmd(sp.cmd...))
	}
	if sp.hostname != "" {
		opts = append(opts, testcontainers.WithConfigModifier(func(c *container.Config) { c.Hostname = sp.hostname }))
	}
	ctr, err := testcontainers.Run(ctx, image, opts...)
	if err != nil {
		if ctr != nil {
			saveLogs(ctr, logFile)
			_ = ctr.Terminate(context.Background())
		}
		logFile.Close()
		kept := p.keepLog(logPath, sp.service)
		return nil, fmt.Errorf("%w: %s from image %s: %v (log=%s%s)", ErrStart, sp.service, image, err, kept, tail(kept))
	}
	s := &server{p: p, service: sp.service, ctr: ctr, dir: sp.dir, props: sp.props, logFile: logFile}
	fail := func(err error) (*server, error) {
		if st, _ := logFile.Stat(); st == nil || st.Size() == 0 {
			saveLogs(ctr, logFile)
		}
		kept := p.keepLog(logPath, sp.service)
		_ = s.Stop()
		return nil, fmt.Errorf("%w: %s from image %s: %v (log=%s%s)", ErrStart, sp.service, image, err, kept, tail(kept))
	}
	// A server that exits at once can pass the port check (testcontainers
	// skips its check inside a container it cannot exec in).
	if st, err := ctr.State(ctx); err != nil {
		return fail(err)
	} else if !st.Running {
		return fail(fmt.Errorf("container exited with status %d", st.ExitCode))
	}
	ip, err := ctr.ContainerIP(ctx)
	if err != nil || ip == "" {
		return fail(fmt.Errorf("container address: %v", err))
	}
	s.internalAddr = net.JoinHostPort(ip, strconv.Itoa(sp.port))
	host, hostPort := ip, sp.port
	if p.opts.PublishedPorts || !reachable(s.internalAddr) {
		if host, err = ctr.Host(ctx); err != nil {
			return fail(err)
		}
		mapped, err := ctr.MappedPort(ctx, sp.portSpec())
		if err != nil {
			return fail(err)
		}
		hostPort = int(mapped.Num())
	}
	if s.props != nil {
		s.props["hostname"] = ip
	}
	s.ep = compare.Endpoint{Host: host, Port: hostPort, DataDir: sp.dataDir, LogPath: logPath,
		Version: p.version(ctx, ctr, sp.service, image)}
	if sp.ready != nil {
		rctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
		defer cancel()
		if err := sp.ready(rctx, net.JoinHostPort(host, strconv.Itoa(hostPort))); err != nil {
			return fail(err)
		}
	}
	return s, nil
}

// keepLog moves the log of a server that failed to start out of the
// folders Stop and Close remove (unless Keep), so the error can name it.
func (p *Provider) keepLog(logPath, service string) string {
	if p.opts.Keep {
		return logPath
	}
	f, err := os.CreateTemp("", "kafka-repro-containers-"+service+"-failed-*.log")
	if err != nil {
		return logPath
	}
	defer f.Close()
	b, err := os.ReadFile(logPath)
	if err != nil {
		return logPath
	}
	if _, err := f.Write(b); err != nil {
		return logPath
	}
	return f.Name()
}

// reachable tells whether the host can open a connection to addr.
func reachable(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// version names the server version: the image, and for our stand-ins the
// Debian package version they were built from.
func (p *Provider) version(ctx context.Context, ctr *testcontainers.DockerContainer, service, image string) string {
	pkg := map[string]string{"zookeeper": "libzookeeper-java", "activemq": "activemq", "rabbitmq": "rabbitmq-server"}[service]
	if service == "kafka" {
		return image + " (kafkarepro, Go rebuild of Kafka 0.7)"
	}
	code, out, err := ctr.Exec(ctx, []string{"dpkg-query", "-W", "-f=${Version}", pkg}, tcexec.Multiplexed())
	if err != nil || code != 0 {
		return image // an official image: no Debian package inside
	}
	b, err := io.ReadAll(out)
	if v := strings.TrimSpace(string(b)); err == nil && v != "" {
		return fmt.Sprintf("%s (stand-in: Debian %s %s)", image, pkg, v)
	}
	return image
}

// fileConsumer copies a container's console output to a host file.
type fileConsumer struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *fileConsumer) Accept(l testcontainers.Log) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, _ = f.w.Write(l.Content)
}

// saveLogs writes what the container printed to w, for a failed start whose
// log consumer caught nothing. (testcontainers' own Logs closes its client
// before the stream is read, so this asks the Docker API itself.)
func saveLogs(ctr *testcontainers.DockerContainer, w io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx, client.WithAPIVersionNegotiation())
	if err != nil {
		return
	}
	defer cli.Close()
	// The daemon copies a container's output to its log a moment after the
	// process wrote it, even after the process exited: try a few times.
	for range 10 {
		rc, err := cli.ContainerLogs(ctx, ctr.GetContainerID(), client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			return
		}
		n, _ := stdcopy.StdCopy(w, w, rc)
		rc.Close()
		if n > 0 {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// tail returns the last lines of a log file for an error message.
func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(b) == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return "; last lines:\n" + strings.Join(lines, "\n")
}

// checkImages reports the first image that is neither local nor pullable.
func checkImages(ctx context.Context, cli *testcontainers.DockerClient, im Images) error {
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	for _, svc := range []string{"zookeeper", "kafka", "activemq", "rabbitmq"} {
		name := im.For(svc)
		if _, err := cli.ImageInspect(ctx, name); err == nil {
			continue
		}
		if svc != "kafka" {
			// Asks the registry for the manifest without pulling the image.
			if _, err := cli.DistributionInspect(ctx, name, client.DistributionInspectOptions{}); err == nil {
				continue
			}
		}
		return fmt.Errorf("%w: %s image %s is neither local nor pullable (run scripts/build-images.sh)", ErrNoImage, svc, name)
	}
	return nil
}

// removeAll removes a server's host folder. Files the container wrote belong
// to the container's users; only root (or the owner) can remove them.
func removeAll(dir string) error {
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("containers: remove %s (files written by the container's user; remove as root): %w", dir, err)
	}
	return nil
}

func statFile(path string) (os.FileInfo, error) { return os.Stat(path) }

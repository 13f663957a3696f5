package local

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/localsvc"
	"github.com/kafkarepro/kafkarepro/kafka/broker"
)

// KafkaProperties is the server.properties our broker runs with in the
// experiments: broker.Shipped (0.7's shipped configuration: flush every
// 10,000 messages or every second, 512 MiB segments, 1 MiB socket buffers,
// ZooKeeper off) on 127.0.0.1, port and logDir. §5: "we configured the
// brokers in all systems to asynchronously flush messages to its
// persistence store" — our broker's time-based flush runs on its own
// goroutine; the count-based one is 0.7's default behaviour.
func KafkaProperties(port int, logDir string) map[string]string {
	props := broker.Shipped()
	props["hostname"], props["port"], props["log.dir"] = "127.0.0.1", strconv.Itoa(port), logDir
	return props
}

// kafkaBinary builds the kafka command once per provider.
func (p *Provider) kafkaBinary(ctx context.Context) (string, error) {
	p.buildOnce.Do(func() {
		bin := filepath.Join(p.root, "bin", "kafka")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./kafka/cmd/kafka")
		cmd.Dir = p.opts.RepoDir
		out, err := cmd.CombinedOutput()
		if err != nil {
			p.buildErr = fmt.Errorf("local: go build ./kafka/cmd/kafka in %s: %w: %s", p.opts.RepoDir, err, strings.TrimSpace(string(out)))
			return
		}
		p.kafkaBin = bin
	})
	return p.kafkaBin, p.buildErr
}

func (p *Provider) startKafka(ctx context.Context) (compare.Server, error) {
	bin, err := p.kafkaBinary(ctx)
	if err != nil {
		return nil, err
	}
	dir, port, err := p.prepare("kafka")
	if err != nil {
		return nil, err
	}
	logDir := filepath.Join(dir, "logs")
	props := KafkaProperties(port, logDir)
	for k, v := range p.opts.KafkaProperties {
		if k != "port" && k != "log.dir" {
			props[k] = v
		}
	}
	propsPath := filepath.Join(dir, "server.properties")
	if err := os.WriteFile(propsPath, []byte(formatProperties(props)), 0o644); err != nil {
		return nil, fmt.Errorf("local: write %s: %w", propsPath, err)
	}
	logPath := filepath.Join(dir, "kafka.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("local: create %s: %w", logPath, err)
	}
	cmd := exec.Command(bin, "server-start", propsPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%w: kafka: %v (log=%s)", ErrStart, err, logPath)
	}
	s := &kafkaServer{p: p, dir: dir, cmd: cmd, logFile: logFile, props: props, exited: make(chan struct{})}
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	s.ep = compare.Endpoint{Host: "127.0.0.1", Port: port, DataDir: logDir, LogPath: logPath,
		Version: "kafkarepro (Go rebuild of Kafka 0.7, " + runtime.Version() + ")"}
	if err := s.waitReady(ctx, p.opts.StartTimeout); err != nil {
		_ = s.Stop()
		return nil, err
	}
	p.opts.Log.Info("server started", "service", "kafka", "port", port, "dir", dir)
	return s, nil
}

func formatProperties(props map[string]string) string {
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	b.WriteString("# written by compare/local for the §5 experiments\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, props[k])
	}
	return b.String()
}

// kafkaServer is our broker running as its own process.
type kafkaServer struct {
	p       *Provider
	dir     string
	cmd     *exec.Cmd
	logFile *os.File
	props   map[string]string
	ep      compare.Endpoint
	exited  chan struct{}
	waitErr error
	once    sync.Once
	stopErr error
}

func (s *kafkaServer) Endpoint() compare.Endpoint { return s.ep }

// Properties is the server.properties the broker runs with.
func (s *kafkaServer) Properties() map[string]string { return s.props }

// Pid is the broker's process id.
func (s *kafkaServer) Pid() int { return s.cmd.Process.Pid }

// Dir is the folder holding the broker's data and log.
func (s *kafkaServer) Dir() string { return s.dir }

// IOCounters implements compare.ProcessIO: the broker process's I/O
// counters from /proc (see localsvc.ProcessTreeIO).
func (s *kafkaServer) IOCounters() (compare.IOCounters, error) {
	return localsvc.ProcessTreeIO(s.cmd.Process.Pid)
}

// waitReady waits until the broker accepts a TCP connection.
func (s *kafkaServer) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	addr := net.JoinHostPort(s.ep.Host, strconv.Itoa(s.ep.Port))
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("%w: kafka exited during start-up (%v); log=%s: %s", ErrStart, s.waitErr, s.ep.LogPath, tail(s.ep.LogPath))
		case <-ctx.Done():
			return fmt.Errorf("%w: kafka: %v (log=%s)", ErrStart, ctx.Err(), s.ep.LogPath)
		default:
		}
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: kafka: no answer on %s within %v; log=%s", ErrStart, addr, timeout, s.ep.LogPath)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop sends SIGTERM (the broker flushes and writes its clean-shutdown
// marker), waits up to 30 s, kills it if needed, and removes its folder
// unless the provider keeps it.
func (s *kafkaServer) Stop() error {
	s.once.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(30 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.exited
			s.stopErr = fmt.Errorf("local: kafka (pid %d) did not stop within 30s after SIGTERM, killed; log=%s", s.cmd.Process.Pid, s.ep.LogPath)
		}
		s.logFile.Close()
		if !s.p.opts.Keep {
			s.stopErr = errors.Join(s.stopErr, os.RemoveAll(s.dir))
		}
	})
	return s.stopErr
}

// tail returns the last lines of a log for an error message.
func tail(path string) string {
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

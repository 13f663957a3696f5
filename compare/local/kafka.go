package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// Our broker runs as its own process through internal/kafkaproc, with the
// settings of every measurement of the repository (broker.Shipped: 0.7's
// shipped configuration, flush every 10,000 messages or every second, 512
// MiB segments, 1 MiB socket buffers, ZooKeeper off). §5: "We configured the
// broker in all systems to asynchronously flush messages to its persistence
// store" — our broker's time-based flush runs on its own
// goroutine; the count-based one is 0.7's default behaviour.

// kafkaBinary builds the kafka command once per provider.
func (p *Provider) kafkaBinary(ctx context.Context) (string, error) {
	p.buildOnce.Do(func() {
		bin := filepath.Join(p.root, "bin", "kafka")
		if p.buildErr = kafkaproc.Build(ctx, p.opts.RepoDir, bin); p.buildErr == nil {
			p.kafkaBin = bin
		}
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
	proc, err := kafkaproc.Start(ctx, kafkaproc.Options{Bin: bin, Dir: dir, Port: port, Host: p.opts.Host,
		Override: p.opts.KafkaProperties, StartTimeout: p.opts.StartTimeout})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrStart, err)
	}
	s := &kafkaServer{p: p, proc: proc}
	s.ep = compare.Endpoint{Host: proc.Host(), Port: port, DataDir: proc.LogDir(), LogPath: proc.LogPath(),
		Version: "kafkarepro (Go rebuild of Kafka 0.7, " + runtime.Version() + ")"}
	p.opts.Log.Info("server started", "service", "kafka", "addr", proc.Host(), "port", port, "dir", dir, "settings", proc.Settings())
	return s, nil
}

// kafkaServer is our broker running as its own process.
type kafkaServer struct {
	p    *Provider
	proc *kafkaproc.Process
	ep   compare.Endpoint
}

func (s *kafkaServer) Endpoint() compare.Endpoint { return s.ep }

// Properties is the server.properties the broker runs with.
func (s *kafkaServer) Properties() map[string]string { return s.proc.Properties() }

// Pid is the broker's process id.
func (s *kafkaServer) Pid() int { return s.proc.Pid() }

// Dir is the folder holding the broker's data and log.
func (s *kafkaServer) Dir() string { return s.proc.Dir() }

// IOCounters implements compare.ProcessIO: the broker process's I/O
// counters from /proc (see localsvc.ProcessTreeIO).
func (s *kafkaServer) IOCounters() (compare.IOCounters, error) {
	return localsvc.ProcessTreeIO(s.proc.Pid())
}

// Stop stops the broker (kafkaproc.Process.Stop: SIGTERM, and an error
// unless it shut down cleanly), and removes its folder unless the provider
// keeps it.
func (s *kafkaServer) Stop() error {
	err := s.proc.Stop()
	if !s.p.opts.Keep {
		err = errors.Join(err, os.RemoveAll(s.proc.Dir()))
	}
	return err
}

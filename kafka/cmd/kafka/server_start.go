package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/kafkarepro/kafkarepro/kafka/broker"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/mirror"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/properties"
)

func init() {
	register(&command{
		Name:       "server-start",
		Positional: true,
		Args:       "server.properties [consumer.properties] [--override key=value]...",
		Summary:    "run a broker until SIGINT/SIGTERM, then shut down cleanly (leaving the clean-shutdown marker); with consumer.properties, also mirror another cluster into it (0.7.0's embedded consumer)",
		Run:        serverStart,
	})
}

// overrides collects repeated --override key=value flags.
type overrides map[string]string

func (o overrides) String() string { return fmt.Sprint(map[string]string(o)) }

func (o overrides) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("override %q is not key=value", s)
	}
	o[strings.TrimSpace(k)] = v
	return nil
}

func serverStart(args []string, std stdio) error {
	fs := newFlags(commands["server-start"], std.Err)
	over := overrides{}
	fs.Var(over, "override", "set a server.properties key, e.g. --override port=9093 (repeatable)")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the broker to the file until shutdown")
	// Flags may come before or after the properties file.
	var files []string
	for {
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files = append(files, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(files) != 1 && len(files) != 2 {
		return usagef("want server.properties and at most one consumer.properties, got %d files", len(files))
	}
	// One logger for the whole process: the broker, its logs, replication
	// and ZooKeeper each add their component; this command's own lines say
	// component=server-start.
	logger := slog.New(slog.NewTextHandler(std.Err, nil))
	slog.SetDefault(logger)
	lg := logger.With("component", "server-start")
	cfg, err := broker.LoadConfig(files[0], over)
	if err != nil {
		return err
	}
	opts := broker.Options{Logger: logger}
	// Two brokers must never share a log.dir (the log package's lock): refuse before registering anywhere.
	if err := log.CheckDirUnlocked(cfg.LogDir); err != nil {
		return fmt.Errorf("log.dir %s: %w", cfg.LogDir, err)
	}
	if cfg.EnableZooKeeper {
		// §3.2: the broker registers itself and its topics in ZooKeeper.
		if newRegistrar == nil {
			return fmt.Errorf("enable.zookeeper=true but this build has no ZooKeeper registrar")
		}
		if opts.Registrar, err = newRegistrar(cfg); err != nil {
			return fmt.Errorf("register in ZooKeeper at %s: %w", cfg.ZKConnect, err)
		}
	}
	b, err := broker.New(cfg, opts)
	if err != nil {
		if opts.Registrar != nil {
			opts.Registrar.Close()
		}
		return err
	}
	stopProfile, err := startCPUProfile(*cpuprofile)
	if err != nil {
		b.Close()
		return err
	}
	defer stopProfile()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	lg.Info("broker serving", "config", files[0], "addr", b.Addr().String(), "log.dir", cfg.LogDir)
	// Serve returns after a signal has cancelled ctx and the broker has shut
	// down; §3.3: a clean shutdown flushes every log and leaves the marker
	// so the next start skips recovery.
	mirrored := make(chan error, 1)
	if len(files) == 2 {
		m, err := embeddedMirror(files[1], cfg, b.Addr().String(), logger)
		if err != nil {
			b.Close()
			return err
		}
		go func() { mirrored <- m.Run(ctx) }()
	} else {
		mirrored <- nil
	}
	serveErr := b.Serve(ctx)
	if err := <-mirrored; err != nil {
		lg.Error("embedded mirror stopped", "err", err)
	}
	if ctx.Err() == nil {
		lg.Error("broker stopped serving", "err", serveErr)
	}
	if err := b.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if serveErr != nil {
		return serveErr
	}
	lg.Info("broker stopped cleanly")
	return nil
}

// newRegistrar builds the ZooKeeper registrar for enable.zookeeper=true. It
// is nil until the ZooKeeper file of this command sets it in init.
var newRegistrar func(cfg broker.Config) (broker.Registrar, error)

// embeddedMirror is Kafka 0.7.0's form of the paper's §4 "embedded
// consumers": `server-start server.properties consumer.properties` runs,
// beside the broker, a mirror (kafka/mirror) of the cluster that
// consumer.properties names (zk.connect, groupid, ...) into this broker. Its
// topics are mirror.topics.whitelist or mirror.topics.blacklist (0.7.0's
// comma lists; regular expressions work too), with
// mirror.consumer.numthreads streams per topic (1).
func embeddedMirror(path string, cfg broker.Config, addr string, logger *slog.Logger) (*mirror.Maker, error) {
	props, err := properties.Load(path)
	if err != nil {
		return nil, err
	}
	gc, err := consumer.GroupConfigFromProperties(props)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	streams := 1
	if v := props["mirror.consumer.numthreads"]; v != "" {
		if streams, err = strconv.Atoi(strings.TrimSpace(v)); err != nil || streams < 1 {
			return nil, fmt.Errorf("%s: mirror.consumer.numthreads=%q is not a positive number", path, v)
		}
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	pc := producer.DefaultConfig()
	pc.BrokerList = fmt.Sprintf("%d:127.0.0.1:%s", cfg.BrokerID, port)
	return mirror.New(mirror.Config{Sources: []consumer.GroupConfig{gc}, Target: pc,
		Whitelist: props["mirror.topics.whitelist"], Blacklist: props["mirror.topics.blacklist"],
		NumStreams: streams, NumProducers: 1, Logger: logger})
}

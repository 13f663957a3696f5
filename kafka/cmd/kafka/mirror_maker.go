package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/mirror"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/properties"
)

func init() {
	register(&command{
		Name: "mirror-maker",
		Args: "--consumer.config F [--consumer.config F2 ...] --producer.config F --whitelist R | --blacklist R " +
			"[--num.streams N] [--num.producers N]",
		Summary: "copy the matching topics of one or more source clusters to a target cluster (paper §4, 0.7.1's MirrorMaker)",
		Run:     mirrorMaker,
	})
}

// fileList collects a repeated flag.
type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// mirrorMaker runs kafka/mirror until SIGINT or SIGTERM, then commits what
// it has sent and exits.
func mirrorMaker(args []string, std stdio) error {
	fs := newFlags(commands["mirror-maker"], std.Err)
	var consumers fileList
	fs.Var(&consumers, "consumer.config", "a source cluster's consumer properties (groupid, zk.connect, ...); repeatable")
	producerConfig := fs.String("producer.config", "", "the target cluster's producer properties (zk.connect or broker.list, ...)")
	whitelist := fs.String("whitelist", "", "mirror the topics whose whole name matches this regular expression")
	blacklist := fs.String("blacklist", "", "mirror every topic except those whose whole name matches this regular expression")
	streams := fs.Int("num.streams", 1, "consumer streams per topic")
	producers := fs.Int("num.producers", 1, "producers to the target")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if len(consumers) == 0 {
		return usagef("--consumer.config is required")
	}
	if err := required(fs, "producer.config"); err != nil {
		return err
	}
	if _, err := mirror.Filter(*whitelist, *blacklist); err != nil {
		return usagef("%v", err)
	}
	cfg := mirror.Config{Whitelist: *whitelist, Blacklist: *blacklist, NumStreams: *streams, NumProducers: *producers,
		Logger: slog.New(slog.NewTextHandler(std.Err, nil))}
	for _, f := range consumers {
		props, err := properties.Load(f)
		if err != nil {
			return err
		}
		gc, err := consumer.GroupConfigFromProperties(props)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		cfg.Sources = append(cfg.Sources, gc)
	}
	props, err := properties.Load(*producerConfig)
	if err != nil {
		return err
	}
	if cfg.Target, err = producer.ConfigFromProperties(props); err != nil {
		return fmt.Errorf("%s: %w", *producerConfig, err)
	}
	m, err := mirror.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		return err
	}
	for topic, n := range m.Sent() {
		fmt.Fprintf(std.Out, "mirrored %d messages of %s\n", n, topic)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kafkarepro/kafkarepro/experiments/replication"
	"github.com/kafkarepro/kafkarepro/internal/kafkaproc"
	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// runReplication runs figure 6's experiment (package replication): ZooKeeper on the servers' host
// (this machine, or the server host over a link; scripts/zookeeper.sh, as the tests run it) and, mode by
// mode, three broker processes started by the one launcher (internal/kafkaproc) with CPU profiles;
// baseline, when set, runs the acks=-1 modes a second time with it (replication.Config.Baseline).
func runReplication(ctx context.Context, host localsvc.Host, n, size int, baseline map[string]string, stderr io.Writer) (*replication.Result, error) {
	repo, err := localsvc.RepoDir()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "reproduce-replication.")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "kafka")
	if err := kafkaproc.Build(ctx, repo, bin); err != nil {
		return nil, err
	}
	port, err := host.Port()
	if err != nil {
		return nil, err
	}
	zkSrv, err := localsvc.StartOn(ctx, host, filepath.Join(repo, "scripts"), "zookeeper", filepath.Join(tmp, "zookeeper"), port)
	if err != nil {
		return nil, err
	}
	r, err := replication.Run(ctx, replication.Config{Bin: bin, ZooKeeper: net.JoinHostPort(host.Address(), strconv.Itoa(port)), Host: host,
		Dir: filepath.Join(tmp, "brokers"), Messages: n, MessageSize: size, Profile: true, Baseline: baseline,
		Progress: func(s string) { fmt.Fprintln(stderr, "reproduce:", s) }})
	return r, errors.Join(err, zkSrv.Stop())
}

// printReplication prints figure 6's modes, one line each.
func printReplication(w io.Writer, r *replication.Result) {
	for _, x := range r.Results {
		if x.Error != "" {
			fmt.Fprintf(w, "replication %-20s FAILED: %s\n", x.Mode.Name, x.Error)
			continue
		}
		fmt.Fprintf(w, "replication %-20s %10.0f msg/s  %.2f× of 1 replica", x.Mode.Name, x.Test.MsgPerS, x.Ratio)
		if x.Mode.Acks != 0 {
			fmt.Fprintf(w, "  p50 %.2f ms  p99 %.2f ms  p99.9 %.2f ms per batch", x.P50Ms, x.P99Ms, x.P999Ms)
		}
		fmt.Fprintln(w)
	}
}

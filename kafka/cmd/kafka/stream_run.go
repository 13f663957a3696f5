package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/stream"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

// What the stream commands share: checking topic names and window lengths before anything connects, making
// the intermediate and output topics, and running a stream.Runner until SIGINT or SIGTERM, with its report
// on stderr every --report-every and at the end.

// streamContext is what the stream commands run under besides SIGINT and SIGTERM (a test cancels it).
var streamContext = context.Background()

// checkTopics refuses a name the broker would refuse (a usage error: nothing has been produced).
func checkTopics(names map[string]string) error {
	for flagName, t := range names {
		if err := zk.ValidTopic(t); err != nil {
			return usagef("--%s: %v", flagName, err)
		}
	}
	return nil
}

// checkGroup refuses a group id that cannot be a ZooKeeper node name; the stream commands hold it to the
// topic names' rule (letters, digits, '.', '_', '-').
func checkGroup(g string) error {
	if err := zk.ValidTopic(g); err != nil {
		return usagef("--group %q: letters, digits, '.', '_' and '-' only (%v)", g, err)
	}
	return nil
}

// checkWindow refuses a window of zero or negative length, or one that is not whole milliseconds.
func checkWindow(flagName string, d time.Duration) error {
	if d <= 0 || d%time.Millisecond != 0 {
		return usagef("--%s must be a positive whole number of milliseconds (e.g. 60s), got %v", flagName, d)
	}
	return nil
}

// checkTimes checks the event-time flags of a windowed command: --window (checkWindow), --grace (zero or
// positive, whole milliseconds) and --report-every (positive).
func checkTimes(window, grace, every time.Duration) error {
	if err := checkWindow("window", window); err != nil {
		return err
	}
	if grace < 0 || grace%time.Millisecond != 0 {
		return usagef("--grace must be zero or a positive whole number of milliseconds, got %v", grace)
	}
	return checkReportEvery(every)
}

// checkReportEvery refuses a --report-every that is not positive.
func checkReportEvery(every time.Duration) error {
	if every <= 0 {
		return usagef("--report-every must be positive, got %v", every)
	}
	return nil
}

// fieldFunc parses a --key or --time field number.
func fieldNumber(flagName, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, usagef("--%s must be a field number (0 for the first field), got %q", flagName, s)
	}
	return n, nil
}

// ensureTopics creates the topics that are not registered yet with parts partitions per broker (as `kafka
// topics --create` does).
func ensureTopics(c *zk.Client, connect string, parts int, std stdio, names ...string) error {
	for _, t := range names {
		regs, _, err := topicRegistrations(c, t)
		if err != nil {
			return err
		}
		if len(regs) > 0 {
			continue
		}
		if err := createTopic(c, connect, t, parts, stdio{In: std.In, Out: std.Err, Err: std.Err}); err != nil {
			return err
		}
	}
	return nil
}

// partitionsPerBroker is the largest partition count a broker registered for topic; an unregistered topic is
// an error naming the command that creates it.
func partitionsPerBroker(c *zk.Client, topic string) (int, error) {
	regs, _, err := topicRegistrations(c, topic)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range regs {
		n = max(n, p)
	}
	if n == 0 {
		return 0, fmt.Errorf("topic %q is not registered in ZooKeeper: create it first (kafka topics --create --topic %s)", topic, topic)
	}
	return n, nil
}

// runStages runs one member of group over stages until SIGINT/SIGTERM (or ctx ends), printing the report.
func runStages(ctx context.Context, connect, group string, stages []stream.Stage, every time.Duration, std stdio) error {
	lg := slog.New(slog.NewTextHandler(std.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))
	r, err := stream.NewRunner(stream.RunnerConfig{Group: group, ZkConnect: connect, Stages: stages, Logger: lg})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	fmt.Fprintf(std.Err, "running as %s in group %q; SIGINT or SIGTERM stops (every task checkpoints first)\n", r.ID(), group)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			fmt.Fprintf(std.Err, "stopped: %s\n", r.Report())
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		case <-t.C:
			fmt.Fprintf(std.Err, "tasks %s: %s\n", strings.Join(r.Tasks(), " "), r.Report())
		}
	}
}

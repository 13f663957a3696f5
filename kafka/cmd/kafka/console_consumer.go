package main

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
)

func init() {
	register(&command{
		Name:    "console-consumer",
		Args:    "--zookeeper HOST:PORT[/chroot] --topic TOPIC [--group G] [--from-beginning] [--max-messages N] [--protocol 0.7|0.8] [flags]",
		Summary: "consume a topic as a member of a consumer group and print one payload per line",
		Run:     consoleConsumer,
	})
}

// propertyFlags collects repeated --property key=value flags.
type propertyFlags map[string]string

func (p propertyFlags) String() string { return "" }

func (p propertyFlags) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("want key=value, got %q", v)
	}
	p[strings.TrimSpace(k)] = val
	return nil
}

// consoleConsumer is 0.7's ConsoleConsumer: a group consumer (paper §3.2) with one stream on one topic.
// Without --group it joins a fresh group "console-consumer-<random>", so it receives the whole topic
// (§3.2: every group consumes the full set of messages); --from-beginning sets autooffset.reset=smallest,
// otherwise it starts at the end (largest). It commits on exit, including after --max-messages.
func consoleConsumer(args []string, std stdio) error {
	fs := newFlags(commands["console-consumer"], std.Err)
	zkConnect := fs.String("zookeeper", "", "ZooKeeper connect string host:port[,host:port][/chroot]")
	topic := fs.String("topic", "", "topic to consume")
	group := fs.String("group", "", "consumer group id (default console-consumer-<random>)")
	fromBeginning := fs.Bool("from-beginning", false,
		"start from the earliest offset when the group has none committed (autooffset.reset=smallest)")
	maxMsgs := fs.Int64("max-messages", -1, "exit after this many messages (-1: never)")
	fetchSize := fs.Int("fetch-size", consumer.DefaultFetchSize, "bytes fetched per partition per request (fetch.size)")
	timeoutMs := fs.Int("consumer-timeout-ms", -1, "exit after this long without a message (consumer.timeout.ms; -1: never)")
	printOffsets := fs.Bool("print-offsets", false, "print each message's partition, offset and next offset before it")
	printKey := fs.Bool("print-key", false, "print each message's key and a tab before it (a message without one: an empty key)")
	props := propertyFlags{}
	fs.Var(props, "property", "any consumer property key=value, e.g. zk.sessiontimeout.ms=6000 (repeatable)")
	proto := fs.String("protocol", "0.7", "the wire protocol: 0.7 (the paper's group consumer, docs/PROTOCOL.md §3.2) or 0.8 (the Kafka protocol as 0.8's console consumer fetched, §12: every partition from its leader at logical offsets, in no group, committing nothing)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := required(fs, "zookeeper", "topic"); err != nil {
		return err
	}
	if *fetchSize <= 0 {
		return usagef("--fetch-size must be positive, got %d", *fetchSize)
	}
	switch {
	case *proto == "0.8" && (*group != "" || len(props) > 0):
		return usagef("--protocol 0.8 reads in no group and takes no consumer properties: not --group or --property")
	case *proto == "0.8":
		return consoleConsumer08(std, *zkConnect, *topic, *fromBeginning, *maxMsgs, int32(*fetchSize),
			time.Duration(*timeoutMs)*time.Millisecond, *printOffsets, *printKey)
	case *proto != "0.7":
		return usagef("--protocol %q is not 0.7 or 0.8", *proto)
	}
	if *group == "" {
		*group = "console-consumer-" + strconv.Itoa(rand.IntN(100000)) // 0.7's naming
	}
	props["groupid"] = *group
	props["zk.connect"] = *zkConnect
	props["fetch.size"] = strconv.Itoa(*fetchSize)
	props["consumer.timeout.ms"] = strconv.Itoa(*timeoutMs)
	if *fromBeginning {
		props["autooffset.reset"] = consumer.OffsetResetSmallest
	} else if _, set := props["autooffset.reset"]; !set {
		props["autooffset.reset"] = consumer.OffsetResetLargest
	}
	cfg, err := consumer.GroupConfigFromProperties(props)
	if err != nil {
		return usagef("%v", err)
	}
	// The library's autocommit would record messages still sitting in our output buffer; a crash would then
	// lose them from the output although the group counts them as consumed. We commit ourselves, right after
	// a flush, every autocommit.interval.ms (and on exit), unless autocommit.enable is given explicitly.
	ownCommits := false
	if _, set := props["autocommit.enable"]; !set && cfg.AutoCommitEnable {
		cfg.AutoCommitEnable, ownCommits = false, true
	}

	g, err := consumer.NewGroupConsumer(cfg)
	if err != nil {
		return err
	}
	streams, err := g.CreateMessageStreams(map[string]int{*topic: 1})
	if err != nil {
		g.Close()
		return err
	}
	s := streams[*topic][0]

	// SIGINT/SIGTERM: leave the group cleanly (commit, release, deregister), which ends the stream.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sig)
	stopped := make(chan struct{})
	go func() {
		select {
		case <-sig:
			g.Close()
		case <-stopped:
		}
	}()
	defer close(stopped)

	out := bufio.NewWriterSize(std.Out, 64<<10)
	pr := printer{s: s, out: out, printOffsets: *printOffsets, printKey: *printKey}
	if ownCommits {
		pr.commit, pr.interval, pr.last = g.CommitOffsets, cfg.AutoCommitInterval, time.Now()
	}
	err = pr.run(*maxMsgs)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if cerr := g.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, consumer.ErrConsumerTimeout) {
		return nil // --consumer-timeout-ms: a normal end
	}
	return err
}

// printer writes one payload per line, flushing whenever it would have to wait for more. With commit set it
// commits every interval, always right after a flush, so what is committed has been written out.
type printer struct {
	s            *consumer.Stream
	out          *bufio.Writer
	printOffsets bool
	printKey     bool
	commit       func() error
	interval     time.Duration
	last         time.Time
}

func (p *printer) flush() error {
	if err := p.out.Flush(); err != nil {
		return err
	}
	if p.commit != nil && time.Since(p.last) >= p.interval {
		p.last = time.Now()
		if err := p.commit(); err != nil {
			slog.Warn("commit failed; will retry", "component", "console-consumer", "err", err)
		}
	}
	return nil
}

func (p *printer) run(maxMsgs int64) error {
	for n := int64(0); maxMsgs < 0 || n < maxMsgs; n++ {
		if !p.s.Poll() {
			if err := p.s.Err(); err != nil {
				return err
			}
			if err := p.flush(); err != nil {
				return err
			}
			if !p.s.Next() {
				return p.s.Err()
			}
		}
		m := p.s.Message()
		if p.printOffsets {
			fmt.Fprintf(p.out, "%s %s %d %d\t", m.Topic, m.Partition, m.Offset, m.NextOffset)
		}
		if p.printKey {
			p.out.Write(m.Key)
			p.out.WriteByte('\t')
		}
		p.out.Write(m.Payload)
		if err := p.out.WriteByte('\n'); err != nil {
			return err
		}
		// A steady flow never waits: commit on the way, after this message is written and before the next
		// one is taken.
		if n%1024 == 1023 && p.commit != nil && time.Since(p.last) >= p.interval {
			if err := p.flush(); err != nil {
				return err
			}
		}
	}
	return nil
}

// consoleConsumer08 is the console consumer over the Kafka protocol (consumer.Consumer08): the topic's
// partitions and leaders from ZooKeeper, read again every second (a 0.7 topic gains a partition when a
// broker first stores it), each read from the earliest or the latest logical offset, one payload per line.
// With timeout not negative it ends after that long without a message.
func consoleConsumer08(std stdio, connect, topic string, fromBeginning bool, maxMsgs int64, fetchSize int32,
	timeout time.Duration, printOffsets, printKey bool) error {
	z, err := zk.Connect(connect, zk.DefaultConnectTimeout)
	if err != nil {
		return err
	}
	defer z.Close()
	c := &consumer.Consumer08{Topic: topic, FromBeginning: fromBeginning, FetchSize: fetchSize,
		MaxWait: 100 * time.Millisecond, Timeout: 30 * time.Second, Relocate: time.Second,
		Locate: func() ([]consumer.Partition08, error) { return consumer.ZKPartitions08(z, topic, 10*time.Second) }}
	defer c.Close()
	out := bufio.NewWriterSize(std.Out, 64<<10)
	defer out.Flush()
	var n int64
	last := time.Now()
	for maxMsgs < 0 || n < maxMsgs {
		k, err := c.Poll(func(r consumer.Record08) error {
			if maxMsgs >= 0 && n >= maxMsgs {
				return consumer.ErrStop08
			}
			if printOffsets {
				fmt.Fprintf(out, "%s %s %d %d\t", topic, r.Name, r.Offset, r.Offset+1)
			}
			if printKey {
				out.Write(r.Key)
				out.WriteByte('\t')
			}
			out.Write(r.Value)
			n++
			return out.WriteByte('\n')
		})
		if err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if k > 0 {
			last = time.Now()
		} else if timeout >= 0 && time.Since(last) >= timeout {
			return nil // --consumer-timeout-ms: a normal end
		}
	}
	return nil
}

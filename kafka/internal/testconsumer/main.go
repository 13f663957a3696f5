// Command testconsumer is one member of a consumer group (paper §3.2) run as its own process by the
// integration tests of kafka/consumer, so that a test can kill it with SIGKILL. It writes one line per message
// to stdout with a write system call each ("<topic> <partition> <offset> <nextoffset> <payload>"), so that a
// message handed to it is in the output before the next one is asked for: what the test reads is what the
// group delivered. SIGTERM closes the consumer cleanly (commit, release, deregister).
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
)

func main() {
	zkConnect := flag.String("zookeeper", "", "zk.connect")
	group := flag.String("group", "", "groupid")
	topics := flag.String("topics", "", "topic:streams,topic:streams")
	props := flag.String("props", "", "extra properties key=value,key=value")
	flag.Parse()

	p := map[string]string{"groupid": *group, "zk.connect": *zkConnect}
	for _, kv := range strings.Split(*props, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			p[k] = v
		}
	}
	cfg, err := consumer.GroupConfigFromProperties(p)
	if err != nil {
		fail(err)
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	sub := map[string]int{}
	for _, tn := range strings.Split(*topics, ",") {
		t, n, _ := strings.Cut(tn, ":")
		k, err := strconv.Atoi(n)
		if err != nil {
			fail(fmt.Errorf("bad -topics %q", *topics))
		}
		sub[t] = k
	}
	g, err := consumer.NewGroupConsumer(cfg)
	if err != nil {
		fail(err)
	}
	streams, err := g.CreateMessageStreams(sub)
	if err != nil {
		fail(err)
	}
	fmt.Fprintf(os.Stderr, "READY %s\n", g.ID())

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	var mu sync.Mutex
	done := make(chan error, 1)
	for _, ss := range streams {
		for _, s := range ss {
			go func() {
				var line []byte
				for s.Next() {
					m := s.Message()
					line = fmt.Appendf(line[:0], "%s %s %d %d %s\n", m.Topic, m.Partition, m.Offset, m.NextOffset, m.Payload)
					// Written before the next message is asked for.
					mu.Lock()
					os.Stdout.Write(line)
					mu.Unlock()
				}
				done <- s.Err()
			}()
		}
	}
	select {
	case <-sig:
		if err := g.Close(); err != nil {
			fail(err)
		}
	case err := <-done:
		g.Close()
		if err != nil {
			fail(err)
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "testconsumer:", err)
	os.Exit(1)
}

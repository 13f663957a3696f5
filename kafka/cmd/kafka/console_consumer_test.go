package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// TestIntegration_ConsoleConsumer: a group consumer from the command line reads everything with
// --from-beginning, stops after --max-messages and commits, so the same group goes on where it stopped.
func TestIntegration_ConsoleConsumer(t *testing.T) {
	connect := zktest.Start(t)
	b := zkBroker(t, connect, 1, 2)
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "1:" + b.Addr().String()
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(prefix string, n int) []string {
		var sent []string
		for i := range n {
			m := fmt.Sprintf("%s-%d", prefix, i)
			if err := p.SendTo(1, "cc", int32(i%2), []byte(m)); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, m)
		}
		sort.Strings(sent)
		return sent
	}
	lines := func(out string) []string {
		l := strings.Fields(out)
		sort.Strings(l)
		return l
	}
	fast := []string{"--property", "zk.synctime.ms=100", "--property", "fetcher.backoff.ms=20"}

	sent := send("a", 10)
	args := append([]string{"console-consumer", "--zookeeper", connect, "--topic", "cc", "--group", "cg",
		"--from-beginning", "--max-messages", "6"}, fast...)
	out1, errOut, code := runKafka(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	args = append([]string{"console-consumer", "--zookeeper", connect, "--topic", "cc", "--group", "cg",
		"--consumer-timeout-ms", "1500"}, fast...)
	out2, errOut, code := runKafka(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if n := len(strings.Fields(out1)); n != 6 {
		t.Fatalf("--max-messages 6 printed %d lines:\n%s", n, out1)
	}
	if got := lines(out1 + out2); strings.Join(got, " ") != strings.Join(sent, " ") {
		t.Fatalf("two runs of group cg printed %v, want each of %v once", got, sent)
	}

	// A new group without --from-beginning starts at the end: it sees only what comes after it joined.
	args = append([]string{"console-consumer", "--zookeeper", connect, "--topic", "cc",
		"--consumer-timeout-ms", "1500"}, fast...)
	out3, errOut, code := runKafka(t, args...)
	if code != 0 || strings.TrimSpace(out3) != "" {
		t.Fatalf("new group from the end: exit %d, printed %q: %s", code, out3, errOut)
	}
}

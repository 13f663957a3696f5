package main

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// TestIntegration_ConsoleConsumer: a group consumer from the command line reads everything with
// --from-beginning, stops after --max-messages and commits, so the same group goes on where it stopped.
func TestIntegration_ConsoleConsumer(t *testing.T) {
	connect := zktest.Start(t)
	b := zkBroker(t, connect, 1, 2)
	p := newSyncProducer(t, "1:"+b.Addr().String())
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

// TestIntegration_ConsoleConsumer08: --protocol 0.8 reads a 0.7 topic that two brokers each hold partitions
// of (each broker serving its own, found in ZooKeeper) through the Kafka protocol, every message once with
// its logical offset, from the beginning; without --from-beginning it starts at the end. Refused flags say so.
func TestIntegration_ConsoleConsumer08(t *testing.T) {
	connect := zktest.Start(t)
	b1, b2 := zkBroker(t, connect, 1, 2), zkBroker(t, connect, 2, 1)
	p := newSyncProducer(t, "1:"+b1.Addr().String()+",2:"+b2.Addr().String())
	var want []string
	for i := range 9 {
		broker, part := 1+i%2, int32(0)
		if broker == 1 {
			part = int32(i / 2 % 2)
		}
		m := fmt.Sprintf("m%d", i)
		if err := p.SendTo(broker, "c8", part, []byte(m)); err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
	}
	sort.Strings(want)
	out, errOut, code := runKafka(t, "console-consumer", "--protocol", "0.8", "--zookeeper", connect, "--topic", "c8",
		"--from-beginning", "--consumer-timeout-ms", "3000", "--print-offsets") // brokers register a new topic in ZooKeeper after its first message: a second look finds it
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []string
	next := map[string]int{} // partition name → the logical offset the next line must have
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var topic, name, payload string
		var off, after int
		if _, err := fmt.Sscanf(strings.Replace(line, "\t", " ", 1), "%s %s %d %d %s", &topic, &name, &off, &after, &payload); err != nil ||
			topic != "c8" || off != next[name] || after != off+1 {
			t.Fatalf("line %q (want partition %s at logical offset %d): %v\n%s", line, name, next[name], err, out)
		}
		next[name]++
		got = append(got, payload)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") || len(next) != 3 {
		t.Fatalf("printed %v from partitions %v, want each of %v once from 1-0, 1-1 and 2-0", got, next, want)
	}
	out, errOut, code = runKafka(t, "console-consumer", "--protocol", "0.8", "--zookeeper", connect, "--topic", "c8",
		"--consumer-timeout-ms", "500")
	if code != 0 || strings.TrimSpace(out) != "" {
		t.Fatalf("from the end: exit %d, printed %q: %s", code, out, errOut)
	}
	if _, errOut, code := runKafka(t, "console-consumer", "--protocol", "0.8", "--zookeeper", connect, "--topic", "c8", "--group", "g"); code != 2 ||
		!strings.Contains(errOut, "no group") {
		t.Fatalf("--protocol 0.8 --group: exit %d: %s", code, errOut)
	}
}

package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// The tools on a replicated topic (docs/PROTOCOL.md §10): create with --replica-assignment, describe in 0.8's
// format, produce through a broker that does not lead, consume with a group, check the group's offsets and
// ask a follower for the latest offset; a replication factor above the live brokers is refused with nothing
// created; preferred-replica-election writes its request.
func TestIntegration_ToolsOnAReplicatedTopic(t *testing.T) {
	connect := zktest.Start(t)
	c := brokertest.StartCluster(t, 3, brokertest.Options{ZKConnect: connect,
		Props: map[string]string{"log.flush.interval": "1", "replica.fetch.wait.max.ms": "50"}})
	if out, errs, code := runKafka(t, "topics", "--zookeeper", connect, "--create", "--topic", "rt", "--replication-factor", "4"); code != 2 ||
		!strings.Contains(errs, "replication factor 4 larger than the 3 live brokers") {
		t.Fatalf("--replication-factor 4 on 3 brokers: exit %d\n%s%s", code, out, errs)
	}
	if out, _, _ := runKafka(t, "topics", "--zookeeper", connect, "--list"); strings.Contains(out, "rt") {
		t.Fatalf("a refused topic is listed: %q", out)
	}
	if out, errs, code := runKafka(t, "topics", "--zookeeper", connect, "--create", "--topic", "rt", "--replica-assignment", "1:2:0,2:0:1"); code != 0 ||
		!strings.Contains(out, `Created topic "rt": 2 partitions with replication factor 3.`) {
		t.Fatalf("create: exit %d\n%s%s", code, out, errs)
	}
	out, _, _ := runKafka(t, "topics", "--zookeeper", connect, "--describe", "--topic", "rt")
	want := regexp.MustCompile("^Topic:rt\tPartitionCount:2\tReplicationFactor:3\tConfigs:\n" +
		"\tTopic: rt\tPartition: 0\tLeader: 1\tReplicas: 1,2,0\tIsr: [0-2,]+\n" +
		"\tTopic: rt\tPartition: 1\tLeader: 2\tReplicas: 2,0,1\tIsr: [0-2,]+\n$")
	if !want.MatchString(out) {
		t.Fatalf("describe:\n%s", out)
	}
	// Broker 0 leads nothing: the producer asks it for metadata and sends to the leaders.
	if code, _, errs := runCmd("one\ntwo\nthree\nfour\n", "console-producer", "--broker-list", c[0].HostPort(), "--topic", "rt",
		"--batch-size", "1", "--request-required-acks", "-1", "--request-timeout-ms", "5000"); code != 0 {
		t.Fatalf("console-producer with acks -1: exit %d: %s", code, errs)
	}
	code, got, errs := runCmd("", "console-consumer", "--zookeeper", connect, "--topic", "rt", "--group", "g", "--from-beginning", "--max-messages", "4")
	if code != 0 {
		t.Fatalf("console-consumer: exit %d: %s", code, errs)
	}
	for _, m := range []string{"one", "two", "three", "four"} {
		if !strings.Contains(got, m+"\n") {
			t.Errorf("consumed %q, missing %q", got, m)
		}
	}
	out, _, _ = runKafka(t, "consumer-offset-checker", "--zookeeper", connect, "--group", "g")
	rows := regexp.MustCompile(`(?m)^g\s+rt\s+([01])\s+(\d+)\s+(\d+)\s+(\d+)`).FindAllStringSubmatch(out, -1)
	if len(rows) != 2 {
		t.Fatalf("offset checker:\n%s", out)
	}
	for _, r := range rows {
		if r[4] != "0" {
			t.Errorf("partition %s: offset %s, log end %s, lag %s: want lag 0\n%s", r[1], r[2], r[3], r[4], out)
		}
	}
	// A follower of partition 0 sends the question on to its leader.
	out, errs, code = runKafka(t, "get-offset-shell", "--broker", c[0].HostPort(), "--topic", "rt", "--partition", "0", "--time", "-1")
	if code != 0 || strings.TrimSpace(out) != rows[0][3] && strings.TrimSpace(out) != rows[1][3] {
		t.Errorf("get-offset-shell through a follower: exit %d, %q %s; the checker says %s and %s", code, out, errs, rows[0][3], rows[1][3])
	}
	if out, _, _ := runKafka(t, "topics", "--zookeeper", connect, "--describe", "--under-replicated-partitions"); out != "" {
		t.Errorf("--under-replicated-partitions with every replica in sync: %q", out)
	}
	if out, errs, code := runKafka(t, "preferred-replica-election", "--zookeeper", connect); code != 0 || !strings.Contains(out, "2 partitions") {
		t.Errorf("preferred-replica-election: exit %d, %q %s", code, out, errs)
	}

	// The console consumer over the Kafka protocol reads from the leaders, and, once the leader of partition
	// 0 (broker 1) has stopped, from the new one: every message once.
	read08 := func(n int) string {
		t.Helper()
		code, got, errs := runCmd("", "console-consumer", "--protocol", "0.8", "--zookeeper", connect, "--topic", "rt",
			"--from-beginning", "--max-messages", strconv.Itoa(n), "--consumer-timeout-ms", "20000")
		if code != 0 {
			t.Fatalf("console-consumer --protocol 0.8: exit %d: %s", code, errs)
		}
		return got
	}
	got = read08(4)
	if err := c[1].Stop(); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runCmd("five\nsix\n", "console-producer", "--protocol", "0.8", "--broker-list", c[0].HostPort(), "--topic", "rt",
		"--batch-size", "1", "--request-required-acks", "-1", "--message-send-max-retries", "40", "--retry-backoff-ms", "250"); code != 0 {
		t.Fatalf("console-producer --protocol 0.8 after broker 1 stopped: exit %d: %s", code, errs)
	}
	after := read08(6)
	for _, m := range []string{"one", "two", "three", "four"} {
		if strings.Count(got, m+"\n") != 1 || strings.Count(after, m+"\n") != 1 {
			t.Errorf("--protocol 0.8 read %q, then after the leader stopped %q: want %q once in each", got, after, m)
		}
	}
	for _, m := range []string{"five", "six"} {
		if strings.Count(after, m+"\n") != 1 {
			t.Errorf("--protocol 0.8 after the leader stopped read %q: want %q once", after, m)
		}
	}
}

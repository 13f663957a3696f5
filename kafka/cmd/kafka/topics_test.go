package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/kafkarepro/kafkarepro/kafka/zk"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// zkBroker runs an in-process broker registered in ZooKeeper with numParts partitions per topic.
func zkBroker(t *testing.T, connect string, id, numParts int) *brokertest.Broker {
	t.Helper()
	return brokertest.Start(t, id, brokertest.Options{ZKConnect: connect,
		Props: map[string]string{"num.partitions": strconv.Itoa(numParts), "log.flush.interval": "1"}})
}

func runKafka(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, stdio{In: strings.NewReader(""), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

func TestIntegration_TopicsAndOffsetChecker(t *testing.T) {
	connect := zktest.Start(t)
	zkBroker(t, connect, 1, 2)
	zkBroker(t, connect, 2, 1)

	// Broker 2 gives a new topic one partition: --partitions 2 is refused before anything is created.
	out, errs, code := runKafka(t, "topics", "--zookeeper", connect, "--create", "--topic", "events", "--partitions", "2")
	if code != 1 || !strings.Contains(errs, "broker 2") || !strings.Contains(errs, "nothing was created") {
		t.Fatalf("create with --partitions 2 where broker 2 gives 1: code %d\n%s%s\nwant 1 and an error naming broker 2", code, out, errs)
	}
	if out, _, _ := runKafka(t, "topics", "--zookeeper", connect, "--list"); out != "" {
		t.Fatalf("after the refused create, --list = %q, want nothing", out)
	}
	out, errs, code = runKafka(t, "topics", "--zookeeper", connect, "--create", "--topic", "events")
	if code != 0 || !strings.Contains(out, `Created topic "events": 3 partitions on 2 brokers`) {
		t.Fatalf("create: code %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "broker 1 has 2 partitions") {
		t.Errorf("no warning about broker 1's partition count: %q", errs)
	}
	if _, _, code := runKafka(t, "topics", "--zookeeper", connect, "--create", "--topic", "x", "--replication-factor", "3"); code != 2 {
		t.Errorf("--replication-factor 3: exit %d, want a usage error", code)
	}
	out, _, _ = runKafka(t, "topics", "--zookeeper", connect, "--create", "--topic", "events")
	if !strings.Contains(out, "already exists") {
		t.Errorf("second create: %q", out)
	}
	runKafka(t, "topics", "--zookeeper", connect, "--create", "--topic", "audit")
	if out, _, _ := runKafka(t, "topics", "--zookeeper", connect, "--list"); out != "audit\nevents\n" {
		t.Errorf("list = %q", out)
	}

	// 3 messages of 5 bytes (14 bytes each on disk) to 1-1.
	cfg := producer.DefaultConfig()
	cfg.ZkConnect = connect
	cfg.Magic = message.MagicV0 // 9 bytes of header, as the sizes below count
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.SendTo(1, "events", 1, []byte("aaaaa"), []byte("bbbbb"), []byte("ccccc")); err != nil {
		t.Fatal(err)
	}
	var desc string
	deadline := time.Now().Add(20 * time.Second)
	for !regexp.MustCompile(`1-1\s+1\s+127\.0\.0\.1:\d+\s+42\s+42`).MatchString(desc) {
		if time.Now().After(deadline) {
			t.Fatalf("describe:\n%s", desc)
		}
		time.Sleep(100 * time.Millisecond)
		desc, _, _ = runKafka(t, "topics", "--zookeeper", connect, "--describe", "--topic", "events")
	}
	for _, want := range []string{"Topic:events\tPartitionCount:3\tBrokers:2", "1-0", "2-0"} {
		if !strings.Contains(desc, want) {
			t.Errorf("describe lacks %q:\n%s", want, desc)
		}
	}

	// A group that committed 14 of partition 1-1 and owns it.
	c, err := zk.Connect(connect, 4*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.SetPersistent(zk.OffsetPath("g1", "events", "1-1"), []byte("14")); err != nil {
		t.Fatal(err)
	}
	if err := c.CreateEphemeral(zk.OwnerPath("g1", "events", "1-1"), []byte("g1_h-1-2-0")); err != nil {
		t.Fatal(err)
	}
	out, errs, code = runKafka(t, "consumer-offset-checker", "--zookeeper", connect, "--group", "g1")
	if code != 0 {
		t.Fatalf("checker: %d %s", code, errs)
	}
	if !regexp.MustCompile(`g1\s+events\s+1-1\s+14\s+42\s+28\s+g1_h-1-2-0`).MatchString(out) {
		t.Errorf("checker output:\n%s", out)
	}
	if !regexp.MustCompile(`g1\s+events\s+2-0\s+none\s+0\s+\?\s+none`).MatchString(out) {
		t.Errorf("checker output for an uncommitted partition:\n%s", out)
	}
	if _, _, code := runKafka(t, "consumer-offset-checker", "--zookeeper", connect, "--group", "nosuch"); code != 1 {
		t.Errorf("unknown group: exit %d", code)
	}
}

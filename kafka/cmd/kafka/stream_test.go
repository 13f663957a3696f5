package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/stream"
	"github.com/kafkarepro/kafkarepro/kafka/zk/zktest"
)

// streamCluster is ZooKeeper and two in-process brokers registered in it, two partitions per topic, flushing
// every 10 ms, with the named topics created through `kafka topics --create`.
func streamCluster(t *testing.T, topics ...string) string {
	t.Helper()
	connect := zktest.Start(t)
	for id := range 2 {
		brokertest.Start(t, id, brokertest.Options{ZKConnect: connect, Props: map[string]string{
			"num.partitions": "2", "log.flush.interval": "10000", "log.default.flush.interval.ms": "10"}})
	}
	for _, tp := range topics {
		if out, errs, code := runKafka(t, "topics", "--zookeeper", connect, "--create", "--topic", tp, "--partitions", "2"); code != 0 {
			t.Fatalf("create %s: %d\n%s%s", tp, code, out, errs)
		}
	}
	return connect
}

// stream-ctr-gen publishes the workload keyed by impression id and prints its exact rates; stream-table reads
// a topic back as a table: every impression id once (the tick lines have their own keys), its latest line.
func TestIntegration_StreamCTRGenAndTable(t *testing.T) {
	connect := streamCluster(t, "impressions", "clicks")
	out, errs, code := runKafka(t, "stream-ctr-gen", "--zookeeper", connect, "--impressions", "impressions",
		"--clicks", "clicks", "--rounds", "5")
	if code != 0 {
		t.Fatalf("stream-ctr-gen: %d\n%s", code, errs)
	}
	want := "item-a 5 15 0.333333\nitem-b 15 35 0.428571\nitem-c 0 25 0.000000\nitem-d 20 20 1.000000\nitem-e 10 45 0.222222\n"
	if out != want {
		t.Errorf("stream-ctr-gen printed\n%s\nwant\n%s", out, want)
	}
	imps, _, err := stream.DefaultCTRWorkload(5).Generate()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // flushed every 10 ms
	out, errs, code = runKafka(t, "stream-table", "--zookeeper", connect, "--topic", "impressions", "--key-field", "1")
	if code != 0 {
		t.Fatalf("stream-table: %d\n%s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != len(imps)+4 {
		t.Fatalf("stream-table shows %d rows, want %d impressions and 4 ticks; stderr %s", len(lines), len(imps), errs)
	}
	rows := map[string]bool{}
	for _, l := range lines {
		rows[l] = true
	}
	for _, e := range imps {
		if !rows[e.String()] {
			t.Errorf("impression %q missing from the table", e)
		}
	}
	if !strings.Contains(errs, strconv.Itoa(len(imps)+4)+" keys from "+strconv.Itoa(len(imps)+4)+" messages of 4 partitions") {
		t.Errorf("stream-table's count: %q", errs)
	}
	// A topic nobody created is an error, not an empty table.
	if _, errs, code := runKafka(t, "stream-table", "--zookeeper", connect, "--topic", "nosuch"); code != 1 || !strings.Contains(errs, "nosuch") {
		t.Errorf("stream-table on a missing topic: %d %q", code, errs)
	}
	if _, errs, code := runKafka(t, "stream-ctr-gen", "--zookeeper", connect, "--impressions", "nosuch", "--clicks", "clicks"); code != 1 || !strings.Contains(errs, "create it first") {
		t.Errorf("stream-ctr-gen to a missing topic: %d %q", code, errs)
	}
}

// Bad command lines are refused before anything connects (the ZooKeeper address is unreachable, so a
// command that went on would fail with exit 1 instead): exit 2 and a message naming what is wrong.
func TestStreamCommandsBadInput(t *testing.T) {
	const zk = "127.0.0.1:1"
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"stream-ctr-gen", "--impressions", "i", "--clicks", "c"}, "--zookeeper is required"},
		{[]string{"stream-ctr-gen", "--zookeeper", zk, "--clicks", "c"}, "--impressions is required"},
		{[]string{"stream-ctr-gen", "--zookeeper", zk, "--impressions", "../etc", "--clicks", "c"}, "invalid topic name"},
		{[]string{"stream-ctr-gen", "--zookeeper", zk, "--impressions", "i", "--clicks", "i"}, "two topics"},
		{[]string{"stream-ctr-gen", "--zookeeper", zk, "--impressions", "i", "--clicks", "c", "--rounds", "0"}, "--rounds"},
		{[]string{"stream-table", "--zookeeper", zk}, "--topic is required"},
		{[]string{"stream-table", "--zookeeper", zk, "--topic", "a b"}, "invalid topic name"},
		{[]string{"stream-table", "--zookeeper", zk, "--topic", "t", "--key-field", "-1"}, "--key-field"},
	} {
		_, errs, code := runKafka(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
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

// runStream runs a stream command until stop is called, and returns its stderr then.
func runStream(t *testing.T, args ...string) (stop func() (code int, errs string)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	streamContext = ctx
	var errb syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(args, stdio{In: strings.NewReader(""), Out: &errb, Err: &errb}) }()
	return func() (int, string) {
		cancel()
		select {
		case code := <-done:
			streamContext = context.Background()
			return code, errb.String()
		case <-time.After(30 * time.Second):
			t.Fatalf("%v did not stop within 30 s of its context's end:\n%s", args, errb.String())
			return 0, ""
		}
	}
}

// syncBuffer is a bytes.Buffer safe for a command's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// §1's click-through rates with the real commands: the generator's workload, kafka stream-ctr (four stages
// over the group consumer, the join within a 10 s window), and kafka stream-table on the output. Once every
// impression is decided, the latest rate of each item equals the generator's known rate exactly.
func TestIntegration_StreamCTRExact(t *testing.T) {
	connect := streamCluster(t, "impressions", "clicks")
	want, errs, code := runKafka(t, "stream-ctr-gen", "--zookeeper", connect, "--impressions", "impressions",
		"--clicks", "clicks", "--rounds", "20")
	if code != 0 {
		t.Fatalf("stream-ctr-gen: %d\n%s", code, errs)
	}
	total := int64(0)
	for _, r := range stream.DefaultCTRWorkload(20).Expected() {
		total += r.Impressions
	}
	stop := runStream(t, "stream-ctr", "--zookeeper", connect, "--impressions", "impressions", "--clicks", "clicks",
		"--window", "10s", "--output", "ctr", "--group", "ctr", "--report-every", "1s")
	var got string
	deadline := time.Now().Add(90 * time.Second)
	for {
		out, _, code := runKafka(t, "stream-table", "--zookeeper", connect, "--topic", "ctr")
		n := int64(0)
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			if _, r, err := stream.ParseRateLine([]byte(l)); err == nil {
				n += r.Impressions
			}
		}
		if code == 0 && n == total {
			got = out
			break
		}
		if time.Now().After(deadline) {
			_, errs := stop()
			t.Fatalf("after 90 s the rates cover %d of %d impressions:\n%s\n--- stream-ctr:\n%s", n, total, out, errs)
		}
		time.Sleep(500 * time.Millisecond)
	}
	code, errs = stop()
	t.Logf("stream-ctr:\n%s", errs)
	if code != 0 {
		t.Errorf("stream-ctr exited %d", code)
	}
	if got != want {
		t.Errorf("rates\n%s\nwant (the generator's)\n%s", got, want)
	}
	if !strings.Contains(errs, "late 0 ") {
		t.Errorf("stream-ctr's report does not say 0 late events:\n%s", errs)
	}
}

// §6's "window-based counting" with the real command: kafka stream-count over the generator's clicks published
// keyed by item (§6: partitioned at publish time on the key that is counted), per item in 10 s tumbling
// windows of event time. Every window's final count equals the count made from the generated events; a tick
// an hour later in every partition closes them all (and the ticks' own window stays open, so it is not
// published).
func TestIntegration_StreamCountExact(t *testing.T) {
	connect := streamCluster(t, "item-clicks")
	_, clicks, err := stream.DefaultCTRWorkload(20).Generate()
	if err != nil {
		t.Fatal(err)
	}
	cfg := producer.DefaultConfig()
	cfg.ZkConnect = connect
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := map[string]int64{}
	var last int64
	for _, e := range clicks {
		start := e.Time - e.Time%10000
		want[strconv.FormatInt(start, 10)+" "+e.Item]++
		last = max(last, e.Time)
		if err := p.SendKeyed("item-clicks", []byte(e.Item), []byte(e.String())); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := p.Discovery().Partitions("item-clicks")
	if err != nil || len(parts) != 4 {
		t.Fatalf("partitions %v, %v", parts, err)
	}
	for _, pt := range parts {
		if err := p.SendTo(pt.BrokerID, "item-clicks", pt.Part, stream.TickLine(stream.Click, []byte("tick"), last+3600000)); err != nil {
			t.Fatal(err)
		}
	}
	stop := runStream(t, "stream-count", "--zookeeper", connect, "--input", "item-clicks", "--key", "2", "--time", "3",
		"--window", "10s", "--output", "click-counts", "--report-every", "1s")
	got := map[string]int64{}
	deadline := time.Now().Add(60 * time.Second)
	for len(got) < len(want) {
		if time.Now().After(deadline) {
			_, errs := stop()
			t.Fatalf("after 60 s, %d of %d window counts:\n%v\n--- stream-count:\n%s", len(got), len(want), got, errs)
		}
		time.Sleep(500 * time.Millisecond)
		got = map[string]int64{}
		cout, _, _ := runKafka(t, "console-consumer", "--zookeeper", connect, "--topic", "click-counts",
			"--from-beginning", "--consumer-timeout-ms", "1000")
		for _, l := range strings.Split(strings.TrimSpace(cout), "\n") {
			r, err := stream.ParseResult([]byte(l))
			if err != nil {
				continue
			}
			k := strconv.FormatInt(r.Start, 10) + " " + string(r.Key)
			if prev, ok := got[k]; ok && prev != r.Value {
				t.Errorf("window %s published twice with %d and %d", k, prev, r.Value)
			}
			got[k] = r.Value
		}
	}
	code, errs := stop()
	if code != 0 {
		t.Errorf("stream-count exited %d:\n%s", code, errs)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("window %s: count %d, want %d", k, got[k], n)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d windows published, want %d (the ticks' window must stay open)", len(got), len(want))
	}
	t.Logf("%d window counts exact; stream-count: %s", len(want), errs[strings.LastIndex(errs, "stopped:"):])
	// The final report counts every task once: one process ran every partition from the start, uninterrupted,
	// so it read each message once and published each window once.
	m := regexp.MustCompile(`stopped: read (\d+),.* emitted (\d+)`).FindStringSubmatch(errs)
	if m == nil || m[1] != strconv.Itoa(len(clicks)+len(parts)) || m[2] != strconv.Itoa(len(want)) {
		t.Errorf("stream-count's final report %q, want read %d (the clicks and %d ticks), emitted %d (the windows)",
			m, len(clicks)+len(parts), len(parts), len(want))
	}
}

// §6's stream–table join with the real command: the generator's clicks joined with an item table published to a
// topic; every click comes out once with its item's row, a click of an item the table lacks with "-".
func TestIntegration_StreamJoinTable(t *testing.T) {
	connect := streamCluster(t, "impressions", "clicks", "items")
	if _, errs, code := runKafka(t, "stream-ctr-gen", "--zookeeper", connect, "--impressions", "impressions",
		"--clicks", "clicks", "--rounds", "3"); code != 0 {
		t.Fatalf("stream-ctr-gen: %d\n%s", code, errs)
	}
	cfg := producer.DefaultConfig()
	cfg.ZkConnect = connect
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rows := map[string]string{"item-a": "item-a red-shoes 40", "item-b": "item-b hat 12", "item-d": "item-d socks 3",
		"item-e": "item-e gloves 9"} // no item-c
	for k, v := range rows {
		if err := p.SendKeyed("items", []byte(k), []byte(k+" old-row"), []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(100 * time.Millisecond)
	_, clicks, _ := stream.DefaultCTRWorkload(3).Generate()
	stop := runStream(t, "stream-join-table", "--zookeeper", connect, "--input", "clicks", "--table", "items",
		"--key", "2", "--output", "clicks-named", "--report-every", "1s")
	var lines []string
	for deadline := time.Now().Add(60 * time.Second); len(lines) < len(clicks)+4; time.Sleep(300 * time.Millisecond) {
		if time.Now().After(deadline) {
			_, errs := stop()
			t.Fatalf("%d of %d joined clicks after 60 s\n%s", len(lines), len(clicks)+4, errs)
		}
		out, _, _ := runKafka(t, "console-consumer", "--zookeeper", connect, "--topic", "clicks-named",
			"--from-beginning", "--consumer-timeout-ms", "1000")
		lines = strings.Split(strings.TrimSpace(out), "\n")
	}
	code, errs := stop()
	if code != 0 || !strings.Contains(errs, "table items loaded: 4 keys") {
		t.Errorf("stream-join-table: exit %d\n%s", code, errs)
	}
	got := map[string]int{}
	for _, l := range lines {
		got[l]++
	}
	for _, e := range clicks {
		row, ok := rows[e.Item]
		if !ok {
			row = "-"
		}
		if want := e.String() + " " + row; got[want] == 0 {
			t.Errorf("no joined line %q", want)
		}
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
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--key", "1", "--time", "2"}, "--output is required"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--time", "2"}, "--key is required"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--key", "1"}, "--time N or --audit"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--key", "1", "--time", "2", "--window", "0s"}, "--window must be a positive"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--key", "1", "--time", "2", "--window", "-60s"}, "--window must be a positive"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--key", "1", "--time", "2", "--window", "1500us"}, "whole number of milliseconds"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "../../etc/passwd", "--key", "1", "--time", "2"}, "invalid topic name"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o\x00", "--key", "1", "--time", "2"}, "invalid topic name"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "t", "--key", "1", "--time", "2"}, "must differ"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--key", "x", "--time", "2"}, "--key must be a field number"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--key", "1", "--audit", "--time", "2"}, "give one"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--key", "1", "--time", "2", "--grace", "-1s"}, "--grace"},
		{[]string{"stream-count", "--zookeeper", zk, "--input", "t", "--output", "o", "--key", "1", "--time", "2", "--group", "a/b"}, "--group"},
		{[]string{"stream-ctr", "--zookeeper", zk, "--impressions", "i", "--clicks", "c"}, "--output is required"},
		{[]string{"stream-join-table", "--zookeeper", zk, "--input", "c", "--table", "t", "--output", "o"}, "--key is required"},
		{[]string{"stream-join-table", "--zookeeper", zk, "--input", "c", "--table", "t", "--output", "t", "--key", "2"}, "must differ"},
		{[]string{"stream-join-table", "--zookeeper", zk, "--input", "c", "--table", "t", "--output", "../o", "--key", "2"}, "invalid topic name"},
		{[]string{"stream-join-table", "--zookeeper", zk, "--input", "c", "--table", "t", "--output", "o", "--key", "-2"}, "--key must be a field number"},
		{[]string{"stream-ctr", "--zookeeper", zk, "--impressions", "i", "--clicks", "c", "--output", "o", "--window", "0"}, "--window must be a positive"},
		{[]string{"stream-ctr", "--zookeeper", zk, "--impressions", "i", "--clicks", "c", "--output", "o", "--window", "-1m"}, "--window must be a positive"},
		{[]string{"stream-ctr", "--zookeeper", zk, "--impressions", "i", "--clicks", "c", "--output", "a b"}, "invalid topic name"},
		{[]string{"stream-ctr", "--zookeeper", zk, "--impressions", "i", "--clicks", "c", "--output", "c"}, "must differ"},
		{[]string{"stream-ctr", "--zookeeper", zk, "--impressions", "i", "--clicks", "c", "--output", "o", "--group", ".."}, "--group"},
		{[]string{"stream-ctr", "--zookeeper", zk, "--impressions", "i", "--clicks", "c", "--output", "o", "--grace", "-5s"}, "--grace"},
		{[]string{"stream-table", "--zookeeper", zk, "--topic", "a b"}, "invalid topic name"},
		{[]string{"stream-table", "--zookeeper", zk, "--topic", "t", "--key-field", "-1"}, "--key-field"},
	} {
		_, errs, code := runKafka(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

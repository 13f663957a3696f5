package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/audit"
	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// console-producer writes 0.7's format by default (magic 1), magic 0 with
// --magic 0, and compresses with --compression-codec (--compress is gzip).
func TestConsoleProducerFormats(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.flush.interval": "1"}})
	sc := consumer.NewSimpleConsumer(b.HostPort(), 5*time.Second)
	defer sc.Close()
	for _, c := range []struct {
		topic string
		flags []string
		outer message.Codec
		magic byte
	}{
		{"plain", nil, message.CodecNone, 1},
		{"paper", []string{"--magic", "0"}, message.CodecNone, 0},
		{"snappy", []string{"--compression-codec", "snappy"}, message.CodecSnappy, 1},
		{"gzip", []string{"--compress"}, message.CodecGzip, 1},
		{"gzip0", []string{"--compression-codec", "1", "--magic", "0"}, message.CodecGzip, 0},
	} {
		args := append([]string{"console-producer", "--broker-list", b.HostPort(), "--topic", c.topic, "--batch-size", "10"}, c.flags...)
		if code, _, errOut := runCmd("one\ntwo\nthree\n", args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", c.flags, code, errOut)
		}
		var set []byte
		for deadline := time.Now().Add(5 * time.Second); len(set) == 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			var err error
			if set, err = sc.Fetch(c.topic, 0, 0, 1<<16); err != nil {
				t.Fatal(err)
			}
		}
		first := message.Message(set)
		if len(set) < message.HeaderSizeV1 || first.Codec() != c.outer || (c.outer == message.CodecNone && first.Magic() != c.magic) {
			t.Fatalf("%v: first stored message %x, want codec %v magic %d", c.flags, set, c.outer, c.magic)
		}
		d := message.NewDeepIterator(set, 0)
		var got []string
		for d.Next() {
			if d.Message().Magic() != c.magic {
				t.Fatalf("%v: message %q has magic %d, want %d", c.flags, d.Message().Payload(), d.Message().Magic(), c.magic)
			}
			got = append(got, string(d.Message().Payload()))
		}
		if d.Err() != nil || len(got) != 3 || got[2] != "three" {
			t.Fatalf("%v: read back %q (%v)", c.flags, got, d.Err())
		}
	}
	for _, bad := range [][]string{
		{"--compression-codec", "lz4"},
		{"--compress", "--compression-codec", "snappy"},
		{"--magic", "2"},
	} {
		args := append([]string{"console-producer", "--broker-list", b.HostPort(), "--topic", "x"}, bad...)
		if code, _, errOut := runCmd("", args...); code != 2 || errOut == "" {
			t.Errorf("%v: exit %d, stderr %q; want 2 and a message", bad, code, errOut)
		}
	}
}

// The §4 tools refuse bad input with a usage error naming it.
func TestDeploymentToolsBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mirror-maker", "--consumer.config", "c", "--producer.config", "p", "--whitelist", "clicks["}, "not a valid regular expression"},
		{[]string{"mirror-maker", "--consumer.config", "c", "--producer.config", "p", "--whitelist", "a", "--blacklist", "b"}, "exactly one"},
		{[]string{"mirror-maker", "--producer.config", "p", "--whitelist", "a"}, "--consumer.config is required"},
		{[]string{"audit-check", "--topic", "t"}, "--zookeeper is required"},
		{[]string{"load", "--zookeeper", "127.0.0.1:1", "--topic", "t"}, "--output is required"},
	} {
		code, _, errOut := runCmd("", c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
}

// console-producer --audit wraps each line in the audit envelope and
// publishes the window's count: the tally of what is stored finds nothing
// missing.
func TestConsoleProducerAudit(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.flush.interval": "1"}})
	if code, _, errOut := runCmd("a\nb\nc\n", "console-producer", "--broker-list", b.HostPort(), "--topic", "lines",
		"--audit", "--audit-window", "1h"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	sc := consumer.NewSimpleConsumer(b.HostPort(), 5*time.Second)
	defer sc.Close()
	fetchAll := func(topic string, want int) [][]byte {
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			set, err := sc.Fetch(topic, 0, 0, 1<<16)
			if err != nil {
				continue // not created yet
			}
			var out [][]byte
			for it := message.NewIterator(set, 0); it.Next(); {
				out = append(out, it.Message().Payload())
			}
			if len(out) >= want {
				return out
			}
		}
		t.Fatalf("%s: fewer than %d messages", topic, want)
		return nil
	}
	tl := audit.NewTally("lines")
	for _, e := range fetchAll("audit", 1) {
		if err := tl.AddEvent(e); err != nil {
			t.Fatal(err)
		}
	}
	lines := fetchAll("lines", 3)
	for _, m := range lines {
		tl.AddMessage(m)
	}
	if e, err := audit.OpenEnvelope(lines[2]); err != nil || string(e.Payload) != "c" {
		t.Fatalf("third line: %+v %v", e, err)
	}
	rows := tl.Rows()
	if len(rows) != 1 || rows[0].Produced != 3 || rows[0].Consumed != 3 || rows[0].Missing != 0 {
		t.Fatalf("rows %+v", rows)
	}
}

// A line over --max-message-size stops the console producer with an error naming the line, after it has
// sent the lines before it; a --partition the topic does not have is refused before anything is read
// (0.7's PRODUCE has no answer: the broker would drop the set unseen).
func TestConsoleProducerBadLinesAndPartitions(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.flush.interval": "1"}})
	in := "one\ntwo\n" + strings.Repeat("x", 50) + "\nfour\n"
	code, _, errOut := runCmd(in, "console-producer", "--broker-list", b.HostPort(), "--topic", "long", "--max-message-size", "20", "--batch-size", "1")
	if code == 0 || !strings.Contains(errOut, "line 3:") || !strings.Contains(errOut, "lines 1..2 were sent") {
		t.Errorf("a 50-byte line 3 with --max-message-size 20: exit %d, %q; want an error naming line 3 and lines 1..2 sent", code, errOut)
	}
	// All lines in one batch: the two before the long one are sent all the same.
	code, _, errOut = runCmd(in, "console-producer", "--broker-list", b.HostPort(), "--topic", "long2", "--max-message-size", "20")
	if code == 0 || !strings.Contains(errOut, "lines 1..2 were sent") {
		t.Errorf("in one batch: exit %d, %q", code, errOut)
	}
	sc := consumer.NewSimpleConsumer(b.HostPort(), 5*time.Second)
	defer sc.Close()
	for _, topic := range []string{"long", "long2"} {
		var got []string
		for deadline := time.Now().Add(5 * time.Second); len(got) < 2 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			set, err := sc.Fetch(topic, 0, 0, 1<<16)
			if err != nil {
				t.Fatal(err)
			}
			got = got[:0]
			for it := message.NewIterator(set, 0); it.Next(); {
				got = append(got, string(it.Message().Payload()))
			}
		}
		if strings.Join(got, ",") != "one,two" {
			t.Errorf("%s holds %q, want the two lines before the long one", topic, got)
		}
	}
	code, _, errOut = runCmd("lost\n", "console-producer", "--broker-list", b.HostPort(), "--topic", "one", "--partition", "7")
	if code == 0 || !strings.Contains(errOut, "no partition 7") {
		t.Errorf("--partition 7 of a topic of one partition: exit %d, %q; want an error", code, errOut)
	}
	if code, _, errOut := runCmd("kept\n", "console-producer", "--broker-list", b.HostPort(), "--topic", "one", "--partition", "0"); code != 0 {
		t.Errorf("--partition 0: exit %d, %q", code, errOut)
	}
}

// --sync=false is the paper's asynchronous producer (producer.type=async): the lines reach the broker in
// batches from its queue, all of them by the time the command exits; it sends without acknowledgements, so
// it refuses --request-required-acks 1.
func TestConsoleProducerAsync(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.flush.interval": "1"}})
	in := strings.Repeat("line\n", 500)
	if code, _, errOut := runCmd(in, "console-producer", "--broker-list", b.HostPort(), "--topic", "async", "--sync=false", "--batch-size", "50"); code != 0 {
		t.Fatalf("--sync=false: exit %d, %s", code, errOut)
	}
	sc := consumer.NewSimpleConsumer(b.HostPort(), 5*time.Second)
	defer sc.Close()
	n := 0
	for deadline := time.Now().Add(5 * time.Second); n < 500 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		set, err := sc.Fetch("async", 0, 0, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		n = 0
		for it := message.NewIterator(set, 0); it.Next(); {
			n++
		}
	}
	if n != 500 {
		t.Errorf("the asynchronous producer delivered %d of 500 lines", n)
	}
	if code, _, errOut := runCmd("x\n", "console-producer", "--broker-list", b.HostPort(), "--topic", "async", "--sync=false", "--request-required-acks", "1"); code != 2 {
		t.Errorf("--sync=false with acks 1: exit %d, %q; want a usage error", code, errOut)
	}
}

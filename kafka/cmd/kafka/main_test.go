package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

func runCmd(stdin string, args ...string) (code int, out, errOut string) {
	var o, e bytes.Buffer
	code = run(args, stdio{In: strings.NewReader(stdin), Out: &o, Err: &e})
	return code, o.String(), e.String()
}

func TestUsageAndExitCodes(t *testing.T) {
	if code, out, _ := runCmd("", "help"); code != 0 || !strings.Contains(out, "dump-log-segments") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, out, _ := runCmd("", "help", "producer-perf"); code != 0 || !strings.Contains(out, "--message-size") {
		t.Fatalf("help producer-perf: %d %q", code, out)
	}
	for _, args := range [][]string{{}, {"no-such-command"}, {"get-offset-shell"}, {"producer-perf", "--bogus"},
		{"dump-log-segments"}, {"server-start"}, {"console-producer", "--topic", "t"}} {
		if code, _, errOut := runCmd("", args...); code != 2 || errOut == "" {
			t.Errorf("%q: exit %d, stderr %q; want 2 and a message", args, code, errOut)
		}
	}
	if code, _, errOut := runCmd("", "get-offset-shell", "--broker", "127.0.0.1:1", "--topic", "t"); code != 1 || !strings.Contains(errOut, "127.0.0.1:1") {
		t.Errorf("unreachable broker: exit %d, %q; want 1 naming the address", code, errOut)
	}
	// --broker-list, as the console tools and 0.8's shells name it, with an id in front or not.
	for _, b := range []string{"127.0.0.1:1", "3:127.0.0.1:1,4:127.0.0.1:2"} {
		if code, _, errOut := runCmd("", "get-offset-shell", "--broker-list", b, "--topic", "t"); code != 1 || !strings.Contains(errOut, "127.0.0.1:1") {
			t.Errorf("--broker-list %s: exit %d, %q; want 1 naming 127.0.0.1:1", b, code, errOut)
		}
	}
	// A stray argument before the flags is named, not taken for missing flags.
	code, _, errOut := runCmd("", "console-producer", "stray", "--broker-list", "127.0.0.1:1", "--topic", "t")
	if code != 2 || !strings.Contains(errOut, `unexpected argument "stray"`) {
		t.Errorf("a stray argument: exit %d, %q; want 2 naming it", code, errOut)
	}
	// The flags are shown as the README writes them: --name.
	code, _, errOut = runCmd("", "get-offset-shell", "-h")
	if code != 0 || !strings.Contains(errOut, "  --broker-list string") || !strings.Contains(errOut, "  --time int") || strings.Contains(errOut, "\n  -time") {
		t.Errorf("get-offset-shell -h: exit %d:\n%s\nwant every flag as --name", code, errOut)
	}
}

// dump-log-segments reports every message, a bad CRC and a partial tail,
// and does not fail on a corrupt file.
func TestDumpLogSegmentsOnACorruptFile(t *testing.T) {
	var seg []byte
	seg = message.AppendV0(seg, []byte("one"))
	seg = message.AppendV0(seg, []byte("two"))
	seg[len(seg)-1] ^= 1 // bad CRC on "two"
	seg = message.AppendV1(seg, message.CodecNone, []byte("three"))
	seg = append(seg, 0, 0, 0, 50, 0, 1) // a partial tail
	path := filepath.Join(t.TempDir(), "00000000000000001000.kafka")
	if err := os.WriteFile(path, seg, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd("", "dump-log-segments", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"offset: 1000 size: 12 magic: 0 codec: none crc valid: true",
		"offset: 1012 size: 12 magic: 0 codec: none crc valid: false",
		"offset: 1024 size: 15 magic: 1 codec: none crc valid: true",
		"partial message at offset 1039",
		"3 messages, 1 with an invalid CRC, 39 of 45 bytes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// console-producer, get-offset-shell and simple-consumer-shell against an
// in-process broker.
func TestConsoleProducerAndShells(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.default.flush.interval.ms": "10"}})
	addr := b.HostPort()
	if code, _, errOut := runCmd("first\nsecond\n\nfourth", "console-producer", "--broker-list", addr, "--topic", "lines", "--batch-size", "2", "--magic", "0"); code != 0 {
		t.Fatalf("console-producer: %d %s", code, errOut)
	}
	waitLatest(t, addr, "lines", int64(message.SizeV0(5)+message.SizeV0(6)+message.SizeV0(0)+message.SizeV0(6)))
	code, out, errOut := runCmd("", "simple-consumer-shell", "--broker", addr, "--topic", "lines", "--offset", "-2", "--max-messages", "4", "--print-offsets")
	if code != 0 {
		t.Fatalf("simple-consumer-shell: %d %s", code, errOut)
	}
	wantOut := "offset 0 next 14: first\noffset 14 next 29: second\noffset 29 next 38: \noffset 38 next 53: fourth\n"
	if out != wantOut {
		t.Fatalf("simple-consumer-shell printed\n%q\nwant\n%q", out, wantOut)
	}
	// Both numbers of the end: byte 53 (9 + 5, 9 + 6, 9 + 0, 9 + 6 bytes before it) and message 4.
	if code, out, errOut := runCmd("", "get-offset-shell", "--broker", addr, "--topic", "lines", "--time", "-1", "--logical"); code != 0 || out != "53 logical 4\n" {
		t.Errorf("get-offset-shell --logical: exit %d, %q %s; want \"53 logical 4\"", code, out, errOut)
	}
}

// console-producer --protocol 0.8 speaks the Kafka protocol (Metadata, Produce v0), plain and gzip; what it
// wrote, the paper's protocol reads back.
func TestConsoleProducer08(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.default.flush.interval.ms": "10", "num.partitions": "1"}})
	addr := b.HostPort()
	for _, args := range [][]string{{"--request-required-acks", "1"}, {"--compression-codec", "gzip"}} {
		if code, _, errOut := runCmd("first\nsecond\n", append([]string{"console-producer", "--broker-list", addr, "--topic", "p08", "--protocol", "0.8"}, args...)...); code != 0 {
			t.Fatalf("console-producer --protocol 0.8 %v: %d %s", args, code, errOut)
		}
	}
	// 4 messages: two plain magic-1 ones of 10 + 5 and 10 + 6 bytes, then one gzip wrapper holding two.
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, out, _ := runCmd("", "get-offset-shell", "--broker", addr, "--topic", "p08", "--time", "-1", "--logical")
		if strings.HasSuffix(strings.TrimSpace(out), "logical 4") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the end of p08 is %q, want 4 messages", out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	code, out, errOut := runCmd("", "simple-consumer-shell", "--broker", addr, "--topic", "p08", "--offset", "-2", "--max-messages", "4")
	if code != 0 || out != "first\nsecond\nfirst\nsecond\n" {
		t.Errorf("simple-consumer-shell: exit %d, %q %s", code, out, errOut)
	}
	if code, _, errOut := runCmd("x\n", "console-producer", "--zookeeper", "127.0.0.1:1", "--topic", "p08", "--protocol", "0.8"); code == 0 || !strings.Contains(errOut, "--protocol 0.8 takes --broker-list") {
		t.Errorf("--protocol 0.8 with --zookeeper: exit %d, %s", code, errOut)
	}
}

// waitLatest waits until get-offset-shell reports want as the latest offset
// of partition 0 of topic: everything produced has been flushed.
func waitLatest(t *testing.T, addr, topic string, want int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, out, _ := runCmd("", "get-offset-shell", "--broker", addr, "--topic", topic, "--time", "-1")
		if strings.TrimSpace(out) == strconv.FormatInt(want, 10) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("latest offset of %s %q, want %d", topic, out, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// newSyncProducer returns a producer on list (broker.list: id:host:port,...),
// closed when the test ends.
func newSyncProducer(t *testing.T, list string) *producer.SyncProducer {
	t.Helper()
	cfg := producer.DefaultConfig()
	cfg.BrokerList = list
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

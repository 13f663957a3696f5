package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
)

// Issue 13's report: snappy sets that other 0.7 clients produce were stored
// and then could not be read; simple-consumer-shell and consumer-perf stopped
// with "unsupported compression codec: snappy". Both fixtures of
// kafka/message (snappy-java's stream format and one raw block) are sent as
// a client would send them, and both tools read every message.
func TestToolsReadOtherClientsSnappy(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.flush.interval": "1"}})
	p := newSyncProducer(t, "0:"+b.HostPort())
	for _, f := range []string{"snappy-java-stream.set", "snappy-raw-block.set"} {
		set, err := os.ReadFile(filepath.Join("..", "..", "message", "testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := p.SendSet("snappy", 0, set); err != nil {
			t.Fatal(err)
		}
	}
	waitLatest(t, b.HostPort(), "snappy", int64(102+76))
	code, out, errOut := runCmd("", "simple-consumer-shell", "--broker", b.HostPort(), "--topic", "snappy", "--max-messages", "8")
	if code != 0 {
		t.Fatalf("simple-consumer-shell: exit %d: %s", code, errOut)
	}
	if want := strings.Repeat("before\nkafka\nsnappy\nabcdabcdabcdabcd\n", 2); out != want {
		t.Fatalf("simple-consumer-shell printed\n%q\nwant\n%q", out, want)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		code, out, errOut = runCmd("", "consumer-perf", "--broker", b.HostPort(), "--topic", "snappy", "--messages", "8", "--idle-timeout", "2s")
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("consumer-perf did not finish")
	}
	if code != 0 || strings.Contains(errOut, "unsupported") {
		t.Fatalf("consumer-perf: exit %d\n%s%s", code, out, errOut)
	}
}

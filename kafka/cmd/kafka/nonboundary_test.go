package main

import (
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
)

// TestToolsNameAnOffsetInsideAMessage: started at a byte offset that falls
// inside a message, simple-consumer-shell and consumer-perf fail saying
// that the offset does not start a message, with what they read there,
// instead of "message larger than the fetch size".
func TestToolsNameAnOffsetInsideAMessage(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.default.flush.interval.ms": "10"}})
	addr := b.HostPort()
	// Payloads of 'T' (0x54): read from inside one, the length field is
	// 0x54545454 = 1414812756 bytes, past what any response can hold.
	lines := strings.Repeat(strings.Repeat("T", 100)+"\n", 5)
	if code, _, errOut := runCmd(lines, "console-producer", "--broker-list", addr, "--topic", "tt", "--magic", "0"); code != 0 {
		t.Fatalf("console-producer: %d %s", code, errOut)
	}
	waitLatest(t, addr, "tt", 5*(9+100)) // magic 0: 9 bytes of header
	const want = "offset 20 does not start a message: its first bytes 54 54 54 54 54 54 54 54 54 54 read as a 1414812760-byte message of magic 84"
	for _, args := range [][]string{
		{"simple-consumer-shell", "--broker", addr, "--topic", "tt", "--offset", "20", "--max-messages", "1"},
		{"consumer-perf", "--broker", addr, "--topic", "tt", "--offset", "20", "--messages", "1", "--idle-timeout", "1s"},
	} {
		code, _, errOut := runCmd("", args...)
		if code != 1 || !strings.Contains(errOut, want) || strings.Contains(errOut, "larger than the fetch size") {
			t.Errorf("%s: exit %d, stderr %q; want 1 and %q", args[0], code, errOut, want)
		}
	}
}

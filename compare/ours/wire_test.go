package ours

import (
	"math"
	"testing"
)

// The bytes of one 200-byte message on the stream, written out.
func TestStreamBytes(t *testing.T) {
	// Batch 50 into "perf-b50": 209-byte messages (4 length + 1 magic + 4
	// CRC + 200) and one PRODUCE header of 4 size + 2 request id + 2+8
	// topic + 4 partition + 4 set size = 24 bytes per 50 messages.
	if got, _ := ProduceStreamBytes("perf-b50", 200, 50); math.Abs(got-(209+24.0/50)) > 1e-9 {
		t.Errorf("batch 50: %v bytes a message, want 209.48", got)
	}
	// Batch 1 into "perf-b1": the 23-byte header on every message.
	if got, how := ProduceStreamBytes("perf-b1", 200, 1); got != 232 || how != "209 + 23 (PRODUCE header of topic perf-b1) / 1" {
		t.Errorf("batch 1: %v bytes a message (%s), want 232", got, how)
	}
	// A 307,200-byte answer after its 6-byte header (4 size + 2 error
	// code) holds 307,200 / 209 = 1,469 whole messages.
	if got, _ := FetchStreamBytes(200); math.Abs(got-307206.0/1469) > 1e-9 {
		t.Errorf("consumer: %v bytes a message, want 307,206 / 1,469 = 209.13", got)
	}
}

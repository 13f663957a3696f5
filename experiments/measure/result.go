// Package measure is what the harness records of one test, whatever the
// experiment: a throughput series sampled from the adapter's message
// counter (Sampler, Point), the test's Result, and what the server's
// processes wrote meanwhile (ServerIO). The §5 reproduction (package
// experiments) and the further figures (compression, latency, replication)
// all measure with it.
package measure

import (
	"fmt"

	"github.com/kafkarepro/kafkarepro/experiments/machine"
)

// Result is one producer or consumer test.
type Result struct {
	System  string  `json:"system"`
	Test    string  `json:"test"`  // "producer" or "consumer"
	Batch   int     `json:"batch"` // producer batch size; 0 for the consumer
	Seconds float64 `json:"seconds"`
	MBSent  float64 `json:"mb_sent"` // payload MB (10^6 bytes)
	Msgs    int64   `json:"msgs"`
	MsgPerS float64 `json:"msg_per_s"`
	Series  []Point `json:"-"` // in series.csv
	Error   string  `json:"error,omitempty"`
	// SendSeconds is when the last message left the client (producer) or
	// reached the application (consumer); for our producer, Seconds also
	// includes the wait until the broker has flushed and exposes every
	// message, which weighs heavily in a short run.
	SendSeconds float64 `json:"send_seconds"`
	SendMsgPerS float64 `json:"send_msg_per_s"`
	// ServerIO is what the server processes wrote during the test (set
	// for the consumer test; see ServerIO).
	ServerIO *ServerIO `json:"server_io,omitempty"`
	// Machine is what the whole machine did in each tenth of the test's
	// time (set for the producer tests; see machine.Tenths).
	Machine []machine.ActivityTenth `json:"machine_tenths,omitempty"`
}

// OK reports whether the test completed without error.
func (r Result) OK() bool { return r.Error == "" && r.Msgs > 0 }

// Label names the line in the figures: "kafka (batch 50)".
func (r Result) Label() string {
	if r.Test == "producer" {
		return fmt.Sprintf("%s (batch %d)", r.System, r.Batch)
	}
	return r.System
}

package protocols

import (
	"context"
	"os"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
)

// The in-process paths against a broker of this process: what our 0.7
// producer wrote, our 0.7 consumer and our minimal Kafka protocol client both
// read whole, and a reader asked for more than was written fails instead of
// waiting forever or counting short.
func TestPaths(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{
		"num.partitions": "1", "log.flush.interval": "1000", "log.default.flush.interval.ms": "50"}})
	ctx := context.Background()
	const n = 5003 // not a multiple of Batch: the last request is short
	ph, err := Measure(os.Getpid(), n, func() error { return Produce07(ctx, b.HostPort(), n, 200) })
	if err != nil {
		t.Fatal(err)
	}
	if ph.Messages != n || ph.MsgPerS <= 0 || ph.Seconds <= 0 {
		t.Errorf("producer phase %+v", ph)
	}
	if ph.CPUMeasured && ph.ClientCPUus <= 0 {
		t.Errorf("producer phase measured no CPU: %+v", ph)
	}
	if end, err := LogicalEnd(b.HostPort(), Topic07); err != nil || end != n {
		t.Fatalf("logical end %d, %v; want %d", end, err, n)
	}
	if err := Consume07(ctx, b.HostPort(), Topic07, n); err != nil {
		t.Error(err)
	}
	if err := Fetch08(ctx, b.HostPort(), Topic07, n); err != nil {
		t.Error(err)
	}
	// One more than there is: the fetch at the end answers an empty set, which must be an error.
	if err := Consume07(ctx, b.HostPort(), Topic07, n+1); err == nil {
		t.Error("Consume07 of one message more than written succeeded")
	}
	if err := Fetch08(ctx, b.HostPort(), Topic07, n+1); err == nil {
		t.Error("Fetch08 of one message more than written succeeded")
	}
}

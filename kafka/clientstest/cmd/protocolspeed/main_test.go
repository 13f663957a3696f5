package main

import (
	"context"
	"os"
	"testing"

	"github.com/kafkarepro/kafkarepro/experiments/protocols"
	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
)

// franz-go's path against a broker of this process: every message written
// through the Kafka protocol is counted at the broker's logical end and read
// back by franz-go and by our minimal client.
func TestRun(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{
		"num.partitions": "1", "log.flush.interval": "1000", "log.default.flush.interval.ms": "50"}})
	const n = 3001
	p, err := run(context.Background(), b.HostPort(), os.Getpid(), n, 200)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != protocols.NameFranz || p.Topic != protocols.Topic08 || p.Producer == nil || p.Consumer == nil ||
		p.Producer.Messages != n || p.Consumer.MsgPerS <= 0 {
		t.Errorf("path %+v", p)
	}
	if end, err := protocols.LogicalEnd(b.HostPort(), protocols.Topic08); err != nil || end != n {
		t.Errorf("logical end %d, %v; want %d", end, err, n)
	}
	if err := protocols.Fetch08(context.Background(), b.HostPort(), protocols.Topic08, n); err != nil {
		t.Error(err)
	}
}

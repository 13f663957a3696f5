// Helpers of the paper's claims (paper_claims_test.go): a broker with the
// claims' flush timer, our producer and consumer pointed at it, and what
// the claims read back.
package kafka_test

import (
	"bytes"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// startBroker starts an in-process broker with the given server.properties
// overrides over a 20 ms flush timer (so that what is sent is soon
// visible); it is stopped cleanly at the end of the test unless stopped
// before.
func startBroker(t *testing.T, props map[string]string) *brokertest.Broker {
	t.Helper()
	p := map[string]string{"log.default.flush.interval.ms": "20"}
	maps.Copy(p, props)
	return brokertest.Start(t, 0, brokertest.Options{Props: p})
}

// newProducer is a sync producer sending to tb.
func newProducer(t *testing.T, tb *brokertest.Broker) *producer.SyncProducer {
	t.Helper()
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + tb.HostPort()
	// The claims are the paper's, about its format: magic 0, 9 bytes of
	// overhead (0.7 and our producer's default write magic 1, 10 bytes).
	cfg.Magic = message.MagicV0
	p, err := producer.NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// newConsumer is a simple consumer reading from tb.
func newConsumer(t *testing.T, tb *brokertest.Broker) *consumer.SimpleConsumer {
	c := consumer.NewSimpleConsumer(tb.HostPort(), 10*time.Second)
	t.Cleanup(func() { c.Close() })
	return c
}

// waitLatest polls OFFSETS latest (the flushed end) until it reaches want.
func waitLatest(t *testing.T, c *consumer.SimpleConsumer, topic string, part int32, want int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var got int64
	var err error
	for time.Now().Before(deadline) {
		if got, err = c.LatestOffset(topic, part); err == nil && got >= want {
			if got > want {
				t.Fatalf("%s-%d: latest offset %d passed the expected %d", topic, part, got, want)
			}
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s-%d: latest offset %d (err %v), want %d", topic, part, got, err, want)
}

// record is one message as a consumer saw it.
type record struct {
	off, next int64
	payload   []byte
}

// readAll reads topic/part from offset until it has caught up with the
// flushed end, failing on any error (a bad CRC included).
func readAll(t *testing.T, c *consumer.SimpleConsumer, topic string, part int32, from int64, fetchSize int32) []record {
	t.Helper()
	it := consumer.NewPartitionIterator(c, topic, part, from, fetchSize)
	var out []record
	for it.Poll() {
		out = append(out, record{it.Offset(), it.NextOffset(), bytes.Clone(it.Payload())})
	}
	if it.Err() != nil {
		t.Fatalf("reading %s-%d from %d: %v", topic, part, from, it.Err())
	}
	return out
}

func payload(i, size int) []byte {
	p := []byte(fmt.Sprintf("%08d:", i))
	for len(p) < size {
		p = append(p, byte('a'+(i+len(p))%26))
	}
	return p
}

func setSize(msgs [][]byte) int64 {
	n := 0
	for _, m := range msgs {
		n += message.SizeV0(len(m))
	}
	return int64(n)
}

func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.kafka"))
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

// retentionBroker fills a partition of several small segments.
func retentionBroker(t *testing.T, props map[string]string) (*brokertest.Broker, *consumer.SimpleConsumer, int64) {
	props["log.file.size"] = "2000"
	tb := startBroker(t, props)
	p, c := newProducer(t, tb), newConsumer(t, tb)
	var end int64
	for i := 0; i < 60; i++ {
		batch := [][]byte{payload(3*i, 100), payload(3*i+1, 100), payload(3*i+2, 100)}
		end += setSize(batch)
		if err := p.Send("old", 0, batch...); err != nil {
			t.Fatal(err)
		}
	}
	waitLatest(t, c, "old", 0, end)
	return tb, c, end
}

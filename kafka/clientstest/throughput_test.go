package clientstest

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/experiments/protocols"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The Kafka protocol's price, on one broker in this process: b.N messages of 200 bytes produced and consumed
// through it with franz-go (its defaults, but acks=0, as our 0.7 producer does not wait either), and
// through the paper's protocol with our own producer (batches of 50) and simple consumer, one after the
// other on the same broker. Run with
//
//	cd kafka/clientstest && go test -run '^$' -bench Throughput -benchtime 1000000x
//
// The numbers are for the machine they ran on (the broker and the client share its cores); they are not
// a figure of the paper, and make test does not run them.

const perfSize = 200

func perfBroker(b *testing.B) *brokertest.Broker {
	return brokertest.Start(b, 0, brokertest.Options{Props: map[string]string{
		"num.partitions": "1", "log.flush.interval": "10000", "log.default.flush.interval.ms": "100",
		"log.file.size": "1073741824",
	}})
}

func BenchmarkThroughput08FranzGo(b *testing.B) {
	tb := perfBroker(b)
	value := bytes.Repeat([]byte("x"), perfSize)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.HostPort()), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("perf"))
	if err != nil {
		b.Fatal(err)
	}
	defer cl.Close()
	b.SetBytes(perfSize)
	b.ReportAllocs()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		cl.Produce(context.Background(), &kgo.Record{Partition: 0, Value: value}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	produced := time.Since(start)
	tb.Flush("perf", 0)
	cons, err := kgo.NewClient(kgo.SeedBrokers(tb.HostPort()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"perf": {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(1<<20), kgo.FetchMaxPartitionBytes(1<<20))
	if err != nil {
		b.Fatal(err)
	}
	defer cons.Close()
	start = time.Now()
	n := 0
	for n < b.N {
		c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		fs := cons.PollFetches(c)
		cancel()
		if fs.NumRecords() == 0 {
			b.Fatalf("franz-go consumed %d of %d", n, b.N)
		}
		n += fs.NumRecords()
	}
	consumed := time.Since(start)
	report(b, "franz-go, Kafka protocol", produced, consumed)
}

func BenchmarkThroughput07Ours(b *testing.B) {
	tb := perfBroker(b)
	b.SetBytes(perfSize)
	b.ReportAllocs()
	produced := produce07(b, tb)
	start := time.Now()
	if err := protocols.Consume07(context.Background(), tb.HostPort(), "perf", b.N); err != nil {
		b.Fatal(err)
	}
	consumed := time.Since(start)
	report(b, "ours, paper's protocol", produced, consumed)
}

// produce07 writes b.N messages of perfSize bytes to partition 0 of "perf" with our producer, in batches
// of 50, flushes the broker's log and returns how long the sending took.
func produce07(b *testing.B, tb *brokertest.Broker) time.Duration {
	cfg := producer.DefaultConfig()
	cfg.BrokerList = "0:" + tb.HostPort()
	p, err := producer.NewSync(cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	value := bytes.Repeat([]byte("x"), perfSize)
	batch := make([][]byte, 50)
	for i := range batch {
		batch[i] = value
	}
	start := time.Now()
	for i := 0; i < b.N; i += len(batch) {
		if err := p.Send("perf", 0, batch[:min(len(batch), b.N-i)]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := p.Flush(); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	time.Sleep(200 * time.Millisecond) // the produces are not answered: let the broker take the last
	tb.Flush("perf", 0)
	return took
}

func report(b *testing.B, who string, produced, consumed time.Duration) {
	b.ReportMetric(float64(b.N)/produced.Seconds(), "produced-msg/s")
	b.ReportMetric(float64(b.N)/consumed.Seconds(), "consumed-msg/s")
	b.ReportMetric(0, "ns/op")
	if b.N >= 100000 {
		b.Log(fmt.Sprintf("%s: %d messages of %d bytes: produced %.0f msg/s, consumed %.0f msg/s", who, b.N, perfSize,
			float64(b.N)/produced.Seconds(), float64(b.N)/consumed.Seconds()))
	}
}

// BenchmarkThroughput08Raw consumes through the Kafka protocol with a minimal client of ours
// (protocols.Fetch08, the reader of make reproduce's protocols experiment: Fetch v0, entries walked,
// every CRC checked, nothing allocated per message), so that the broker's side of a Kafka protocol
// fetch is measured apart from franz-go's.
func BenchmarkThroughput08Raw(b *testing.B) {
	tb := perfBroker(b)
	produce07(b, tb)
	fetch08(b, tb, "our minimal client, Kafka protocol")
}

// fetch08 times protocols.Fetch08 reading b.N messages of "perf" from logical offset 0 and reports its rate.
func fetch08(b *testing.B, tb *brokertest.Broker, who string) {
	b.SetBytes(perfSize)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	if err := protocols.Fetch08(context.Background(), tb.HostPort(), "perf", b.N); err != nil {
		b.Fatal(err)
	}
	consumed := time.Since(start)
	b.ReportMetric(float64(b.N)/consumed.Seconds(), "consumed-msg/s")
	b.ReportMetric(0, "ns/op")
	if b.N >= 100000 {
		b.Logf("%s: %d messages of %d bytes consumed at %.0f msg/s", who, b.N, perfSize, float64(b.N)/consumed.Seconds())
	}
}

// BenchmarkThroughput08RawView is BenchmarkThroughput08Raw on a topic written through the Kafka protocol
// (franz-go, acks=0, no compression), which the broker keeps as 0.8 entries beside the log as well
// (kafka/log/view.go) and sends from there by sendfile: the figure to set beside BenchmarkThroughput07Ours'
// consumer.
func BenchmarkThroughput08RawView(b *testing.B) {
	tb := perfBroker(b)
	value := bytes.Repeat([]byte("x"), perfSize)
	cl, err := kgo.NewClient(kgo.SeedBrokers(tb.HostPort()), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic("perf"))
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		cl.Produce(context.Background(), &kgo.Record{Partition: 0, Value: value}, nil)
	}
	if err := cl.Flush(context.Background()); err != nil {
		b.Fatal(err)
	}
	cl.Close()
	if err := protocols.WaitLogicalEnd(context.Background(), tb.HostPort(), "perf", b.N); err != nil {
		b.Fatal(err)
	}
	tb.Flush("perf", 0)
	fetch08(b, tb, "our minimal client, Kafka protocol, from the view")
}

package clientstest

import (
	"testing"

	"github.com/IBM/sarama"
)

// sarama cannot negotiate below 0.10's versions on its own: it is given
// Version = V0_8_2_0 and ApiVersionsRequest = false, as the README says. Its
// offset manager commits with OffsetCommit v1 at the coordinator that
// ConsumerMetadata names.
func init() {
	register(client{
		name: "sarama",
		produce: func(t *testing.T, addr, topic, codec string, msgs []record) {
			cfg := saramaConfig()
			cfg.Producer.Return.Successes = true
			cfg.Producer.RequiredAcks = sarama.WaitForAll
			cfg.Producer.Partitioner = sarama.NewManualPartitioner
			cfg.Producer.Compression = map[string]sarama.CompressionCodec{"none": sarama.CompressionNone,
				"gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy}[codec]
			p, err := sarama.NewSyncProducer([]string{addr}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			pm := make([]*sarama.ProducerMessage, len(msgs))
			for i, m := range msgs {
				pm[i] = &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(m.key), Value: sarama.StringEncoder(m.value)}
			}
			if err := p.SendMessages(pm); err != nil {
				t.Fatalf("sarama produce to %s: %v", topic, err)
			}
		},
		consume: func(t *testing.T, addr, topic string, n int) []record {
			c, err := sarama.NewConsumer([]string{addr}, saramaConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
			if err != nil {
				t.Fatal(err)
			}
			defer pc.Close()
			var got []record
			done := ctx(t).Done()
			for len(got) < n {
				select {
				case m := <-pc.Messages():
					got = append(got, record{m.Offset, string(m.Key), string(m.Value)})
				case e := <-pc.Errors():
					t.Fatalf("sarama consume %s: %v", topic, e)
				case <-done:
					return got
				}
			}
			return got
		},
		offsets: func(t *testing.T, addr, topic string) (int64, int64) {
			cl := saramaClient(t, addr)
			early, err1 := cl.GetOffset(topic, 0, sarama.OffsetOldest)
			late, err2 := cl.GetOffset(topic, 0, sarama.OffsetNewest)
			if err1 != nil || err2 != nil {
				t.Fatalf("sarama GetOffset: %v, %v", err1, err2)
			}
			return early, late
		},
		commit: func(t *testing.T, addr, group, topic string, offset int64) int64 {
			cl := saramaClient(t, addr)
			om, err := sarama.NewOffsetManagerFromClient(group, cl)
			if err != nil {
				t.Fatal(err)
			}
			pom, err := om.ManagePartition(topic, 0)
			if err != nil {
				t.Fatal(err)
			}
			pom.MarkOffset(offset, "matrix")
			om.Commit()
			pom.Close()
			om.Close()
			om2, _ := sarama.NewOffsetManagerFromClient(group, saramaClient(t, addr))
			defer om2.Close()
			pom2, err := om2.ManagePartition(topic, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer pom2.Close()
			next, _ := pom2.NextOffset()
			return next
		},
		topics: func(t *testing.T, addr string) []string {
			ts, err := saramaClient(t, addr).Topics()
			if err != nil {
				t.Fatal(err)
			}
			return ts
		},
	})
}

func saramaConfig() *sarama.Config {
	cfg := sarama.NewConfig()
	cfg.Version = sarama.V0_8_2_0
	cfg.ApiVersionsRequest = false
	return cfg
}

func saramaClient(t *testing.T, addr string) sarama.Client {
	t.Helper()
	cl, err := sarama.NewClient([]string{addr}, saramaConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cl.Close() })
	return cl
}

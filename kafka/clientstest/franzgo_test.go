package clientstest

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franz-go with its defaults: it asks ApiVersions on every connection and
// uses what is listed (Produce v0 with message set v0, Fetch v0, ...); its
// idempotent producer, on by default, falls back to plain produces without
// 0.11's InitProducerID. Group consuming needs 0.9's JoinGroup, so offsets
// are committed with OffsetCommit itself (v1, at the coordinator that
// ConsumerMetadata names).
func init() {
	register(client{
		name: "franz-go",
		produce: func(t *testing.T, addr, topic, codec string, msgs []record) {
			comp := map[string]kgo.CompressionCodec{"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression()}[codec]
			cl := franz(t, addr, kgo.ProducerBatchCompression(comp), kgo.RecordPartitioner(kgo.ManualPartitioner()))
			recs := make([]*kgo.Record, len(msgs))
			for i, m := range msgs {
				recs[i] = &kgo.Record{Topic: topic, Partition: 0, Key: []byte(m.key), Value: []byte(m.value)}
			}
			if err := cl.ProduceSync(ctx(t), recs...).FirstErr(); err != nil {
				t.Fatalf("franz-go produce to %s: %v", topic, err)
			}
		},
		consume: func(t *testing.T, addr, topic string, n int) []record {
			cl := franz(t, addr, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
			var got []record
			c := ctx(t)
			for len(got) < n && c.Err() == nil {
				fs := cl.PollFetches(c)
				for _, e := range fs.Errors() {
					if c.Err() == nil {
						t.Fatalf("franz-go fetch %s: %v", topic, e.Err)
					}
				}
				fs.EachRecord(func(r *kgo.Record) { got = append(got, record{r.Offset, string(r.Key), string(r.Value)}) })
			}
			return got
		},
		offsets: func(t *testing.T, addr, topic string) (int64, int64) {
			cl := franz(t, addr)
			at := func(ts int64) int64 {
				req := kmsg.NewPtrListOffsetsRequest()
				req.ReplicaID = -1
				rt := kmsg.NewListOffsetsRequestTopic()
				rt.Topic = topic
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp, rp.MaxNumOffsets = 0, ts, 1
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
				resp, err := req.RequestWith(ctx(t), cl)
				if err != nil {
					t.Fatalf("franz-go ListOffsets: %v", err)
				}
				p := resp.Topics[0].Partitions[0]
				if p.ErrorCode != 0 || len(p.OldStyleOffsets) != 1 {
					t.Fatalf("franz-go ListOffsets v%d: error %d, offsets %v", resp.Version, p.ErrorCode, p.OldStyleOffsets)
				}
				return p.OldStyleOffsets[0]
			}
			return at(-2), at(-1)
		},
		commit: func(t *testing.T, addr, group, topic string, offset int64) int64 {
			cl := franz(t, addr)
			c := kmsg.NewPtrOffsetCommitRequest()
			c.Group, c.Generation = group, -1
			ct := kmsg.NewOffsetCommitRequestTopic()
			ct.Topic = topic
			cp := kmsg.NewOffsetCommitRequestTopicPartition()
			cp.Partition, cp.Offset, cp.Timestamp = 0, offset, -1
			ct.Partitions = append(ct.Partitions, cp)
			c.Topics = append(c.Topics, ct)
			cr, err := c.RequestWith(ctx(t), cl)
			if err != nil || cr.Topics[0].Partitions[0].ErrorCode != 0 {
				t.Fatalf("franz-go OffsetCommit: %v %+v", err, cr)
			}
			f := kmsg.NewPtrOffsetFetchRequest()
			f.Group = group
			ft := kmsg.NewOffsetFetchRequestTopic()
			ft.Topic, ft.Partitions = topic, []int32{0}
			f.Topics = append(f.Topics, ft)
			fr, err := f.RequestWith(ctx(t), cl)
			if err != nil {
				t.Fatalf("franz-go OffsetFetch: %v", err)
			}
			return fr.Topics[0].Partitions[0].Offset
		},
		topics: func(t *testing.T, addr string) []string {
			cl := franz(t, addr)
			req := kmsg.NewPtrMetadataRequest()
			resp, err := req.RequestWith(ctx(t), cl)
			if err != nil {
				t.Fatalf("franz-go Metadata: %v", err)
			}
			var out []string
			for _, tp := range resp.Topics {
				out = append(out, *tp.Topic)
			}
			return out
		},
	})
}

func franz(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

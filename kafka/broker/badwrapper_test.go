package broker_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/message/messagetest"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// A compressed wrapper whose own CRC is right but which does not unpack
// (messagetest.BadWrappers: garbage gzip or snappy, an inner set with a bad
// CRC or a partial message, a wrapper inside a wrapper, an inflation past
// message.MaxDecompressedSize) is refused at produce on every produce path,
// PRODUCE, MULTIPRODUCE and ACKED_PRODUCE (ErrInvalidMessage), with a log
// line naming the topic, the partition and why; nothing of its set is
// stored, no partition is created for it, the connection goes on serving,
// and the valid sets around it in the same partition read back, also after
// a crash's recovery (§3.3: recovery cuts the log at the first message that
// fails the checks; had the broker stored the wrapper, recovery would have
// cut off every set after it).
func TestProduceRefusesBadWrappers(t *testing.T) {
	const topic = "wrap"
	for _, c := range messagetest.BadWrappers() {
		t.Run(c.Name, func(t *testing.T) {
			var logs brokertest.LogBuffer
			tb := brokertest.Start(t, 0, brokertest.Options{
				Props:  map[string]string{"log.default.flush.interval.ms": "0"},
				Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
			})
			cl := dial(t, tb.Addr())
			bad := append(messageSet(100, 1, 20), c.Message...)
			gz, err := message.Compress(message.CodecGzip, messageSet(3, 2, 20))
			if err != nil {
				t.Fatal(err)
			}

			cl.produce(topic, 0, append(messageSet(0, 3, 20), gz...)) // 0-2, and 3-4 in a valid wrapper
			cl.produce(topic, 0, bad)
			cl.send(protocol.MultiProduceRequest{Produces: []protocol.ProduceRequest{
				{Topic: topic, Partition: 0, Messages: messageSet(5, 2, 20)},
				{Topic: topic, Partition: 0, Messages: bad},
				{Topic: "fresh", Partition: 0, Messages: bad},
			}})
			cl.send(protocol.AckedProduceRequest{Acks: protocol.AcksLeader, TimeoutMs: 1000, Produces: []protocol.ProduceRequest{
				{Topic: topic, Partition: 0, Messages: bad},
				{Topic: topic, Partition: 0, Messages: messageSet(7, 1, 20)},
			}})
			code, payload := cl.response()
			res, err := protocol.DecodeAckedProduceResponse(nil, payload)
			if err != nil || code != protocol.ErrNone || len(res) != 2 {
				t.Fatalf("ACKED_PRODUCE answer: code %v, %v, %v", code, res, err)
			}
			if res[0].Error != protocol.ErrInvalidMessage || res[0].Offset != -1 || res[1].Error != protocol.ErrNone {
				t.Fatalf("ACKED_PRODUCE of the bad set and a good one: %+v, want InvalidMessage then none", res)
			}
			cl.sync()
			if _, ok := tb.Logs().Get("fresh", 0); ok {
				t.Errorf("a refused set created partition fresh-0")
			}
			line := logs.String()
			if !strings.Contains(line, "topic="+topic) || !strings.Contains(line, "partition=0") || !strings.Contains(line, c.Want.Error()) {
				t.Errorf("no log line names topic %s, partition 0 and %q:\n%s", topic, c.Want, line)
			}

			want := []string{"00000000", "00000001", "00000002", "00000003", "00000004", "00000005", "00000006", "00000007"}
			tb.Flush(topic, 0)
			if got := deepPayloads(t, cl, topic); !slices.Equal(got, want) {
				t.Fatalf("read back %v, want %v", got, want)
			}

			// kill -9: no clean-shutdown marker, so the restart recovers
			// (scans) the partition.
			if err := tb.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := os.Remove(filepath.Join(tb.Dir, log.CleanShutdownFile)); err != nil {
				t.Fatal(err)
			}
			tb.Restart()
			cl = dial(t, tb.Addr())
			if got := deepPayloads(t, cl, topic); !slices.Equal(got, want) {
				t.Fatalf("after recovery read back %v, want %v", got, want)
			}
			t.Logf("acknowledged %d / read back %d / lost 0 / refused: %s", len(want), len(want), c.Name)
		})
	}
}

// deepPayloads fetches partition 0 of topic from offset 0 to its end,
// unpacking wrappers, and returns the payloads' 8-byte prefixes.
func deepPayloads(t *testing.T, cl *client, topic string) []string {
	t.Helper()
	var out []string
	for off := int64(0); ; {
		code, set := cl.fetch(topic, 0, off, 1<<20)
		if code != protocol.ErrNone {
			t.Fatalf("fetch %s-0 at %d: %v", topic, off, code)
		}
		if len(set) == 0 {
			return out
		}
		d := message.NewDeepIterator(set, off)
		for d.Next() {
			out = append(out, string(d.Message().Payload()[:8]))
		}
		if err := d.Err(); err != nil {
			t.Fatalf("fetched %s-0 at %d: %v", topic, off, err)
		}
		if d.Consumed() == 0 {
			t.Fatalf("fetch %s-0 at %d: no whole message in %d bytes", topic, off, len(set))
		}
		off += int64(d.Consumed())
	}
}

package producer_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/broker/brokertest"
	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// A gzip and a snappy batch written by our producer come back from the
// broker byte for byte as the producer built them (§3.1: nothing is
// re-encoded on the way through), and unpack to the messages sent.
func TestCompressedSetsRoundTripThroughBroker(t *testing.T) {
	b := brokertest.Start(t, 0, brokertest.Options{Props: map[string]string{"log.flush.interval": "1"}})

	var msgs [][]byte
	for i := 0; i < 300; i++ {
		msgs = append(msgs, []byte(fmt.Sprintf("203.0.113.%d - - GET /index.html HTTP/1.1 200 %d", i%7, i)))
	}
	for _, codec := range []message.Codec{message.CodecGzip, message.CodecSnappy} {
		t.Run(codec.String(), func(t *testing.T) {
			pc := producer.DefaultConfig()
			pc.BrokerList = "0:" + b.Addr().String()
			pc.Compression = codec
			p, err := producer.NewSync(pc)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			topic := "rt-" + codec.String()
			if err := p.Send(topic, 0, msgs...); err != nil {
				t.Fatal(err)
			}
			// What the producer put on the wire: one wrapper of the batch.
			var inner []byte
			for _, m := range msgs {
				inner = message.Append(inner, pc.Magic, m) // magic 1 by default, as 0.7
			}
			want, err := message.Compress(codec, inner)
			if err != nil {
				t.Fatal(err)
			}
			sc := consumer.NewSimpleConsumer(b.Addr().String(), 5*time.Second)
			defer sc.Close()
			var got []byte
			for deadline := time.Now().Add(10 * time.Second); len(got) < len(want) && time.Now().Before(deadline); {
				if got, err = sc.Fetch(topic, 0, 0, 1<<20); err != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("fetched %d bytes differ from the %d the producer wrote", len(got), len(want))
			}
			d := message.NewDeepIterator(got, 0)
			n := 0
			for ; d.Next(); n++ {
				if !bytes.Equal(d.Message().Payload(), msgs[n]) {
					t.Fatalf("message %d: %q", n, d.Message().Payload())
				}
			}
			if d.Err() != nil || n != len(msgs) {
				t.Fatalf("%d of %d messages, %v", n, len(msgs), d.Err())
			}
			t.Logf("%s: %d messages, %d bytes uncompressed, %d stored", codec, n, len(inner), len(got))
		})
	}
}

// Command protocolspeed is the franz-go half of the protocols experiment
// (experiments/protocols): it produces --messages messages of --size bytes
// to partition 0 of protocols.Topic08 through the Kafka protocol with
// franz-go (its defaults, but acks=0 and no idempotence, as the paper's
// producer waits for no answer, and no compression, as §5's messages are
// sent plain; franz-go would pick snappy), waits until a consumer can read them all,
// then consumes them from the start with franz-go, and prints the path as
// one line of JSON (protocols.Path). It lives in the test module so that the
// library's module does not depend on franz-go; experiments/cmd/reproduce
// builds and runs it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/protocols"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	broker := flag.String("broker", "localhost:9092", "the broker's host:port")
	pid := flag.Int("broker-pid", 0, "the broker's process id, for its CPU time (0: not measured)")
	n := flag.Int("messages", 1_000_000, "messages to produce and consume")
	size := flag.Int("size", 200, "bytes per message")
	flag.Parse()
	p, err := run(context.Background(), *broker, *pid, *n, *size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "protocolspeed:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(p)
}

func run(ctx context.Context, addr string, pid, n, size int) (protocols.Path, error) {
	path := protocols.Path{Name: protocols.NameFranz, Topic: protocols.Topic08}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite(),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(protocols.Topic08))
	if err != nil {
		return path, err
	}
	defer cl.Close()
	value := compare.Payload(size) // §5's payload, as our 0.7 producer sends it

	prod, err := protocols.Measure(pid, n, func() error {
		var failed atomic.Pointer[error] // the first error a promise saw; promises run on franz-go's goroutines
		for i := 0; i < n; i++ {
			cl.Produce(ctx, &kgo.Record{Partition: 0, Value: value}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.CompareAndSwap(nil, &err)
				}
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return err
		}
		if err := failed.Load(); err != nil {
			return fmt.Errorf("franz-go produce to %s: %w", addr, *err)
		}
		return protocols.WaitLogicalEnd(ctx, addr, protocols.Topic08, n)
	})
	if err != nil {
		return path, err
	}
	path.Producer = &prod
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{protocols.Topic08: {0: kgo.NewOffset().AtStart()}}),
		kgo.FetchMaxBytes(protocols.FetchBytes), kgo.FetchMaxPartitionBytes(protocols.FetchBytes))
	if err != nil {
		return path, err
	}
	defer cons.Close()
	con, err := protocols.Measure(pid, n, func() error {
		for got := 0; got < n; {
			c, cancel := context.WithTimeout(ctx, 30*time.Second)
			fs := cons.PollFetches(c)
			cancel()
			if errs := fs.Errors(); len(errs) > 0 {
				return fmt.Errorf("franz-go fetch from %s: %v", addr, errs[0].Err)
			}
			if fs.NumRecords() == 0 {
				return fmt.Errorf("franz-go consumed %d of %d from %s", got, n, addr)
			}
			fs.EachRecord(func(r *kgo.Record) {
				if len(r.Value) == size {
					got++
				}
			})
		}
		return nil
	})
	if err != nil {
		return path, err
	}
	path.Consumer = &con
	return path, nil
}

// Package hotpath names the hot paths of the system, the code every message
// goes through (paper §3.1: "efficient transfer", "simple storage"), and
// makes each one an operation that a benchmark, an allocation test and an
// instruction counter can all run the same way:
//
//	message/iterate          walk a 300 KB fetched set, checking every CRC
//	message/validate         the broker's check of a produced set (CRC, framing, wrappers)
//	message/build            the producer's encoding of 50 messages
//	log/append-batch1        Log.Append of one message
//	log/append-batch50       Log.Append of a set of 50
//	log/append-replica       a follower's Log.AppendReplicaPrefix of a fetched set of 50
//	                         (every CRC checked once, written through to the file)
//	broker/produce-batch1    a PRODUCE of 1 message, over loopback, into the log
//	broker/produce-each1     the same, each request in a write(2) of its own, as
//	                         a batch-1 producer sends them: the broker's read
//	                         side (wake-ups, package coalesce) counted too
//	broker/produce-batch50   a PRODUCE of 50 messages
//	broker/fetch             a 300 KB FETCH over loopback, answered with sendfile
//	producer/send-batch1     SyncProducer.Send of 1 message (one socket write)
//	producer/send-batch50    SyncProducer.Send of 50 messages
//	consumer/iterate         PartitionIterator.Next over a broker on loopback
//	e2e/produce-consume      1,000 messages sent by a SyncProducer, flushed by
//	                         the broker and read back by a PartitionIterator
//	stream/count-tumbling    message/iterate's set counted per key in tumbling
//	                         windows by one kafka/stream task (§6)
//	stream/consume-count     consumer/iterate over such keyed messages, each
//	                         counted by the task
//
// A Path is opened in a folder (for the logs it writes) and gives an Op.
// One call of Op.Do moves Path.Messages messages; Op.Settle waits until
// the other side has taken everything (a broker's log holds every produced
// message); Op.Close releases it all. The rule the alloc test checks is
// the paper's implied one for a system meant to move millions of messages a
// second: in the steady state no path allocates, per message or per
// operation (make test, allocs_test.go). The benchmarks (bench_test.go,
// make bench) time the same Do, and make perf-check counts its
// instructions: TestRun (run_test.go) runs one path n times in a process
// of its own under valgrind --tool=callgrind, and again with n = 0, and the
// difference is the path's cost (experiments/perfcheck).
//
// The brokers here run in this process, with the settings every
// measurement of the repository uses (broker.Shipped), on 127.0.0.1 and a
// port the kernel picks. The group consumer's Stream is not here: it is
// fed by fetchers over unexported channels, and kafka/consumer checks its
// Next itself (TestStreamNextAllocs). Of replication's follower path only
// its log's part is here (log/append-replica); the fetcher is unexported:
// kafka/replication times and checks it, the answer applied
// (BenchmarkFollowerAppend) and the whole fetch over loopback
// (BenchmarkFollowerFetchRoundTrip), with the leader's side of it, each with
// an allocation test.
package hotpath

import (
	"fmt"
	"github.com/kafkarepro/kafkarepro/internal/tuning"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// PayloadSize is the message size of every path: the paper's 200 bytes (§5).
const PayloadSize = 200

// FetchSize is the consumer's fetch.size: 0.7's 300 KiB.
const FetchSize = 300 << 10

// Path is one hot path.
type Path struct {
	Name string
	// Messages is how many messages one Op.Do moves.
	Messages int
	// Bytes is how many bytes one Op.Do moves (for b.SetBytes): message
	// sets with their 9-byte headers, or a fetch's whole answer.
	Bytes int64
	// Open sets the path up with its data under dir (an existing folder).
	Open func(dir string) (Op, error)
}

// Op is an opened path.
type Op interface {
	// Do runs the path once, moving Path.Messages messages.
	Do() error
	// Settle waits until everything Do sent has been taken by the other side
	// (nothing to wait for on the paths that stay in memory).
	Settle() error
	// Close stops what Open started and frees it.
	Close() error
}

// Paths returns every hot path, in the order a message travels them.
func Paths() []Path {
	return []Path{
		{Name: "message/iterate", Messages: iterateMessages, Bytes: int64(iterateMessages * wire), Open: openIterate},
		{Name: "message/validate", Messages: 50, Bytes: 50 * wire, Open: openValidate},
		{Name: "message/build", Messages: 50, Bytes: 50 * wire, Open: openBuild},
		{Name: "log/append-batch1", Messages: 1, Bytes: wire, Open: openLogAppend(1)},
		{Name: "log/append-batch50", Messages: 50, Bytes: 50 * wire, Open: openLogAppend(50)},
		{Name: "log/append-replica", Messages: 50, Bytes: 50 * wire, Open: openLogAppendReplica(50)},
		{Name: "broker/produce-batch1", Messages: 1, Bytes: wire, Open: openBrokerProduce(1)},
		{Name: "broker/produce-each1", Messages: 1, Bytes: wire, Open: openBrokerProduceWrites(1, 0)},
		{Name: "broker/produce-batch50", Messages: 50, Bytes: 50 * wire, Open: openBrokerProduce(50)},
		{Name: "broker/fetch", Messages: FetchSize / wire, Bytes: FetchSize, Open: openBrokerFetch},
		{Name: "producer/send-batch1", Messages: 1, Bytes: wire, Open: openSend(1)},
		{Name: "producer/send-batch50", Messages: 50, Bytes: 50 * wire, Open: openSend(50)},
		{Name: "consumer/iterate", Messages: 1, Bytes: wire, Open: openConsumerIterate(1)},
		{Name: "consumer/ranges", Messages: 1, Bytes: wire, Open: openConsumerIterate(tuning.RangesInFlight)},
		{Name: "e2e/produce-consume", Messages: e2eMessages, Bytes: e2eMessages * wire, Open: openEndToEnd},
		{Name: "stream/count-tumbling", Messages: iterateMessages, Bytes: int64(iterateMessages * wire), Open: openStreamCount},
		{Name: "stream/consume-count", Messages: 1, Bytes: wire, Open: openStreamConsumeCount},
	}
}

// Lookup returns the path called name.
func Lookup(name string) (Path, error) {
	for _, p := range Paths() {
		if p.Name == name {
			return p, nil
		}
	}
	return Path{}, fmt.Errorf("%w %q", ErrUnknown, name)
}

// wire is the size of one message on the wire and on disk: the 9-byte
// magic-0 header and the payload (docs/PROTOCOL.md §2).
const wire = message.HeaderSizeV0 + PayloadSize

// inMemory is the Settle and Close of the paths that hold nothing but
// memory.
type inMemory struct{}

func (inMemory) Settle() error { return nil }
func (inMemory) Close() error  { return nil }

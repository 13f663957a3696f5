package log_test

import (
	"fmt"
	"os"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// A producer's message set goes into a partition log, becomes visible once
// flushed, and is read back from its byte offset.
func Example() {
	dir, _ := os.MkdirTemp("", "kafka-log-example")
	defer os.RemoveAll(dir)

	m, err := log.NewManager(dir, log.DefaultConfig())
	if err != nil {
		panic(err)
	}
	defer m.Close()
	l, err := m.GetOrCreate("clicks", 0)
	if err != nil {
		panic(err)
	}

	set := message.AppendV0(nil, []byte("hello"))
	set = message.AppendV0(set, []byte("world"))
	offset, _ := l.Append(set)
	fmt.Println("appended at", offset, "end", l.LogEndOffset(), "visible up to", l.FlushedEnd())
	l.Flush() // §3.1: only flushed messages are exposed to consumers
	fmt.Println("after flush visible up to", l.FlushedEnd())

	b, _ := l.ReadBytes(0, 1000)
	it := message.NewIterator(b, 0)
	for it.Next() {
		fmt.Printf("offset %d: %s (next %d)\n", it.Offset(), it.Message().Payload(), it.NextOffset())
	}
	// Output:
	// appended at 0 end 28 visible up to 0
	// after flush visible up to 28
	// offset 0: hello (next 14)
	// offset 14: world (next 28)
}

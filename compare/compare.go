// Package compare holds one adapter per messaging system measured in the
// paper's §5 experiments (ours, ActiveMQ, RabbitMQ) behind one small
// interface, and the providers that start, check and stop each server.
//
// The experiment harness (package experiments) only sees System and
// Provider: it never knows which protocol or client library an adapter uses.
// Each adapter states those in Settings, because a fair comparison puts each
// system's persistence, flush policy, acknowledgement mode and prefetch next
// to its result (docs/PROTOCOL.md §9).
package compare

import (
	"context"
	"sync/atomic"
	"time"
)

// ProduceSpec describes one producer test: Messages messages of MessageSize
// bytes, sent Batch at a time (1 = one message per send).
type ProduceSpec struct {
	Topic       string // topic or queue name
	Messages    int
	MessageSize int
	Batch       int
	// Sent is incremented by the adapter as messages leave the client, so the
	// harness can sample throughput against MB sent (the paper's figure 4).
	Sent *atomic.Int64
}

// ConsumeSpec describes one consumer test: read Messages messages (written by
// a preceding Produce with the same Topic and MessageSize).
type ConsumeSpec struct {
	Topic            string
	Messages         int
	MessageSize      int
	PrefetchMessages int // about 1000 in the paper
	PrefetchBytes    int // about 200 KB in the paper (our fetch.size)
	// Received is incremented by the adapter as messages are handed to the
	// application (the paper's figure 5).
	Received *atomic.Int64
}

// Result is what one test measured. Elapsed for a producer runs until the
// server holds every message (ours: the latest offset reaches the expected
// end; RabbitMQ: the queue depth; ActiveMQ: the final receipt), not until the
// last write returns.
type Result struct {
	Messages int64
	Bytes    int64 // payload bytes
	Elapsed  time.Duration
}

// Ours is the Name of our system, the one this project builds, in every
// adapter, table and figure.
const Ours = "kafka"

// System is one messaging system under test, connected to a running server.
type System interface {
	// Name is a short stable id: "kafka", "activemq", "rabbitmq".
	Name() string
	// Settings names everything that matters for a fair comparison:
	// persistence, flush/fsync policy, acknowledgement mode, prefetch,
	// protocol, client library and server version.
	Settings() map[string]string
	Produce(ctx context.Context, spec ProduceSpec) (Result, error)
	Consume(ctx context.Context, spec ConsumeSpec) (Result, error)
	// DiskBytes is the number of bytes the server keeps on disk for its
	// data store (used for the bytes-per-message overhead after a producer test).
	DiskBytes() (int64, error)
	Close() error
}

// Endpoint is where a started server answers and keeps its files.
type Endpoint struct {
	Host    string
	Port    int    // the main port (Kafka broker, STOMP, AMQP, ZooKeeper client port)
	DataDir string // host path of the server's data (for DiskBytes); empty if not on the host
	LogPath string // host path of the server's log, named in errors
	Version string // server version as reported or installed
}

// Server is a started server; Stop stops it and removes its temporary files
// unless told to keep them.
type Server interface {
	Endpoint() Endpoint
	Stop() error
}

// Provider starts servers: "local" from Debian packages and scripts/, or
// "containers" through testcontainers-go.
type Provider interface {
	Name() string
	// Start starts the named service: "zookeeper", "kafka", "activemq",
	// "rabbitmq". A server that fails to start returns an error that names
	// the path of its log.
	Start(ctx context.Context, service string) (Server, error)
}

// IOCounters are a server's I/O counters from Linux's /proc/<pid>/io, summed
// over the server process and its descendants (RabbitMQ's beam.smp runs
// under the rabbitmq-server shell script). The harness samples them just
// before and just after a test and records the difference. §5: "We observed
// that one of the ActiveMQ threads was busy writing KahaDB pages to disks
// during this test. In contrast, there were no disk write activities on the
// Kafka broker."
type IOCounters struct {
	// WriteBytes is write_bytes: bytes the processes caused to be sent to
	// the storage layer (counted when a page-cache page is dirtied, so a
	// write the kernel flushes later still counts, to the writer).
	WriteBytes int64 `json:"write_bytes"`
	// CancelledWriteBytes is cancelled_write_bytes: dirtied bytes that were
	// never written because their file was truncated or deleted first.
	CancelledWriteBytes int64 `json:"cancelled_write_bytes"`
	// WChar is wchar: bytes passed to write(2), send(2), sendfile(2) and the
	// like, to any file descriptor, sockets included; it is not disk I/O.
	WChar int64 `json:"wchar"`
	// Processes is how many processes were summed.
	Processes int `json:"processes"`
}

// ProcessIO is implemented by servers (and systems) whose server runs as a
// process on this machine, so its I/O counters can be read; servers in
// containers do not implement it, or return ErrNoProcessIO.
type ProcessIO interface {
	IOCounters() (IOCounters, error)
}

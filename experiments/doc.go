// Package experiments reproduces the §5 experiments of the NetDB'11 Kafka
// paper: one producer publishing N messages of 200 bytes (Kafka with batch
// sizes 1 and 50, ActiveMQ and RabbitMQ one message per send; figure 4), the
// bytes each system keeps on disk per message (Kafka 9 bytes of overhead
// against ActiveMQ's 144), and one consumer reading the same N messages back
// from the page cache with about 1000 messages or 200 KB prefetched per pull
// (figure 5).
//
// The harness only sees compare.System. While a test runs, a sampler reads
// the adapter's atomic counter (ProduceSpec.Sent, ConsumeSpec.Received)
// every ~250 ms and turns it into a series of (MB so far, msg/s over the
// last interval), which is what the paper's figures plot. A system whose
// server fails in the middle of a test has that test recorded with its
// error; the run goes on with the other systems and reports what it did
// measure.
//
// Around the consumer test the harness also reads the server's process I/O
// counters (compare.ProcessIO, from /proc/<pid>/io) when its server runs as
// a local process, to check §5's "there were no disk write activities on
// the Kafka broker" while "one of the ActiveMQ threads was busy writing KahaDB pages to disks".
//
// Outputs (see Write): producer.csv, consumer.csv, series.csv, summary.json,
// fig4_producer.png, fig5_consumer.png, fig_storage.png and REPORT.md, which
// sets every number beside the paper's (package paper).
//
// The §5 tests write the paper's magic-0 format (9 bytes of overhead).
//
// The packages under experiments/, by purpose:
//
//   - experiments (this package): the §5 reproduction, figures 4 and 5,
//     the storage bars, REPORT.md and summary.json, which also carries
//     the further figures' results when a run made them.
//   - measure: what every experiment records of one test (a throughput
//     series, the test's result, the server's disk writes); figure: the
//     drawing every figure shares (palette, captions, ticks).
//   - the further figures, each an experiment of its own that the paper
//     does not run: compression (Kafka 0.7's compressed sets: none, gzip
//     and snappy over a log-like corpus), latency (figure 7, §3.1's flush
//     trade-off) and replication (figure 6: one producer against a
//     three-broker cluster, one replica and three with acks 0, 1 and -1).
//   - tools around the runs: machine (what the machine is and holds, and
//     its tuning for a run), link (the 1 Gb/s two-host network), ceiling
//     (the machine's ceiling probes), perfcheck (the instruction-count
//     regression check).
//
// cmd/reproduce runs them as a list: the §5 tests, then the further
// experiments its flags ask for.
package experiments

// Package compression is the compression experiment: compressed message sets, which Kafka 0.7 added
// after the paper (its §4 has the Hadoop job compress what it loads, "A
// MapReduce job loads the raw data and then groups and compresses it";
// docs/PROTOCOL.md §2 and §11). One producer sends the same log-like
// corpus three times, with no codec, gzip and snappy, in batches of
// Batch messages (0.7's batch.size: one wrapper per batch), to a
// broker of its own; one consumer then reads each topic back, checking every
// CRC and unpacking every wrapper. For each codec it records the bytes the
// broker stores per message, the producer's and the consumer's messages per
// second, and the CPU time per message of the client and of the broker
// during each phase (Linux schedstat, summed over threads). Messages are
// magic 1, the format 0.7 compresses with.
package compression

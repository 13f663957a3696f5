// Package latency is the latency experiment, figure 7, "§3.1: the flush trade-off". The paper
// says consumers see messages within seconds, and §3.1 exposes a message
// to consumers only once the broker has flushed it, after
// log.flush.interval messages or log.default.flush.interval.ms
// milliseconds. For each flush setting a broker of its own takes a
// producer sending one message per request at a fixed rate, each message
// stamped with its send time, while a consumer reads the same partition;
// the delay from send to the consumer's receipt (CRC checked) goes into an
// HdrHistogram, from which p50, p99, p99.9 and the maximum are read.
// Beside each setting: the rate the paced producer achieved, and the rate
// of an unpaced batch-1 producer against the same broker, the throughput
// that setting leaves (flushing more often costs more fsyncs).
//
// The consumer polls with a 1 ms backoff when it has caught up (0.7's
// fetcher backs off up to 1 s, which would hide the flush policy), so the
// delay is the flush policy's plus a millisecond or so.
package latency

// Package replication is the replication experiment, figure 6, "§6: the price of replication". The paper plans replication
// to "support both asynchronous and synchronous replication models" (§6); Kafka 0.8 built it, and Kreps'
// benchmark of 2014, on three machines, measured one producer on a topic of three replicas at 0.96× the
// throughput of an unreplicated topic with asynchronous replication (the leader answers alone, acks=1)
// and at 0.51× with synchronous replication (every in-sync replica has it, acks=-1).
//
// Here a cluster of three broker processes shares this machine (ZooKeeper, started by the caller, too):
// one producer, the §5 one (messages of 200 bytes in the paper's format, batches of 50), sends the same
// number of messages to a topic of one replica (the baseline) and to a topic of three replicas with acks 0,
// 1 and -1; with acks 1 and -1 it keeps InFlight batches in flight, as Kreps' producer had
// many, and once more with acks=-1 and one, as the §5 producer sends. Each mode gets a fresh cluster under a ZooKeeper chroot of its
// own, so that no mode inherits another's logs, fetchers or page cache. For each mode it records
// throughput as figure 4 does (messages leaving the client per second, and the average until the leader
// exposes the last message, that is until it is committed and flushed), the latency of every acknowledged
// send in an HdrHistogram (p50, p99, p99.9), and what bounds the rate: the CPU time every process used and
// the time its threads waited for a core (Linux schedstat), and the top of each broker's CPU profile
// (server-start --cpuprofile, read with `go tool pprof -top`). With Config.Baseline, each acks=-1 mode is
// measured a second time right after its own, on a cluster started with those settings (figure 7's
// baseline, package latency), and the report sets the two modes' latencies side by side under figure 7's
// rule: an acknowledged produce must not wait on what the baseline turns off. Of the baseline's
// producer properties, socket.nagle.disable changes nothing here: only a connection whose requests get
// no answer has Nagle's algorithm on (producer.Config.NagleDisable), and both modes are acknowledged.
package replication

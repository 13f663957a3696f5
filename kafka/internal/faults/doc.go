// Package faults is the harness of replication's fault tests, in the
// style of Jepsen: a cluster of real broker processes, clients that record what the cluster acknowledged,
// faults injected from outside (kill -9, a damaged log, a network cut, a slowed link), and a checker that
// reads everything back at the end and says what was lost. The tests themselves are in kafka/faults_test.go
// and kafka/faults_netns_test.go; docs/ROBUSTNESS.md has their figures.
//
// # The cluster
//
// Cluster runs ZooKeeper (kafka/zk/zktest) and N brokers, each `kafka server-start` in a process of its
// own started by internal/kafkaproc (the project's one broker launcher), so that a kill is a real SIGKILL:
// no deferred function runs, the page cache keeps what was written and nothing was fsynced since the last
// flush. Broker i has id i. A broker can be killed, paused (SIGSTOP, a stalled process: it still holds
// its sockets and its ZooKeeper session until the session times out), resumed and restarted on the same
// port and log.dir.
//
// By default everything runs on this machine's loopback. Options.ZKConnect and Options.Host put
// ZooKeeper and each broker on hosts of their own: the network fault tests start ZooKeeper and the
// brokers in network namespaces joined by a bridge (kafka/internal/faultnet), each listening on its
// host's address, and run the clients and the checker in a namespace of their own, so that iptables and
// tc can cut or slow one host's links while the others go on.
//
// # The history
//
// A Workload runs one synchronous producer per partition (producer.SyncProducer with
// request.required.acks and retries), each sending message sets one after another, and records every set:
// when it was sent, when the call returned, and whether it was acknowledged. Every message names itself
// in its first bytes (Payload):
//
//	krf p0001 s00000042 m0007 xxxxxxxx...      partition 1, set 42, message 7, padded to the message size
//
// so that whatever is read back can be matched to what was sent. A set is acknowledged when Send returned
// nil: with acks=-1 that means every in-sync replica had appended it (committed, docs/PROTOCOL.md §10),
// with acks=1 that the leader had.
//
// # The checker
//
// Check reads every partition from offset 0 to its end, from the partition's leader as a consumer does
// (after waiting until the visible end stops moving), and compares it with the history:
//
//   - lost: an acknowledged message that is not there. With acks=-1 there must be none.
//   - duplicated: copies beyond the first. A producer that retries a set whose answer it did not get (the
//     leader died after appending it) writes it twice; such a copy is the whole set again, right after
//     the first copy, since each partition's producer has one set in flight at a time. Any other duplicate
//     (part of a set, or a copy further away) is counted as a violation.
//   - order: the first copies within a partition are in the order their sets were sent.
//   - unexpected: a message no producer sent, or a partition's message in another partition.
//   - not acknowledged but read back: sets whose Send failed (after every retry) yet were written, which
//     is allowed: the producer could not know.
//
// A consumer that tails the topic during the run (Tail) adds one more rule: every message it received must
// be in the final log. A message it saw and that was later lost is a dirty read: the broker served bytes
// that were not committed (docs/PROTOCOL.md §10: consumers see committed bytes only).
//
// Report prints the figures of a run in one block: acknowledged, read back, lost, duplicated, and for
// every fault the failover time: from the kill until the producer was acknowledged again, and until the
// consumer received a message sent after the kill.
package faults

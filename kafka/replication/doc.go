// Package replication keeps several copies of a partition on several brokers:
// the paper's §6 future work ("we plan to add built-in replication of messages
// across multiple brokers ... We’d like to support both asynchronous and
// synchronous replication models"), built the way Kafka 0.8 shipped it, with the fix that
// came later for its one known way of losing acknowledged data (leader epochs,
// Kafka's KIP-101). docs/PROTOCOL.md §10 is the reference for the ZooKeeper
// nodes, the requests and the settings; this comment is the design.
//
// # One leader, followers that fetch like consumers
//
// Every partition of a replicated topic has an ordered list of replicas,
// broker ids chosen when the topic is created (the first one is the
// "preferred" leader). At any time one live replica is the leader: producers
// send to it and consumers fetch from it. The others are followers, and a
// follower is nothing but a consumer of the leader: it sends REPLICA_FETCH
// with the byte offset where its own log ends, gets the leader's log bytes
// from there (sent with sendfile, as to any consumer, paper §3.1), and
// appends those bytes verbatim to its own log.
//
// Because the bytes are the same and they are appended at the same place,
// a message has the same byte offset (§3.1: "each message is addressed by its
// logical offset in the log") on every replica. This is the point of the design:
// nothing is renumbered, a consumer that moves from a dead leader to the new
// one goes on fetching from the offset it had, and a follower's position is
// one number, its log end offset (LEO). The follower checks it: the offset
// log.Append returns must be the offset it asked the leader for.
//
//	leader   [m0 @0][m1 @209][m2 @418][m3 @627]       LEO 836
//	follower [m0 @0][m1 @209][m2 @418]                LEO 627 → fetch from 627
//	                                  ▲
//	                          high watermark (HW) = min LEO over the ISR
//
// # In-sync replicas, the high watermark, and what "committed" means
//
// The leader remembers, per follower, the offset of its last fetch (that is
// the follower's LEO) and when it last caught up. The in-sync replicas (ISR)
// are the leader and the followers that are keeping up: a follower leaves the
// ISR when it has not caught up with the leader for replica.lag.time.max.ms
// or is more than replica.lag.max.messages messages behind, and comes back
// when its fetch offset reaches the leader's LEO as the leader had it at the
// follower's previous fetch (so a follower of a busy leader can rejoin). The
// leader writes every ISR change to ZooKeeper itself, with a conditional
// update on the state node's version.
//
// The high watermark is the smallest LEO over the ISR. The sentence the
// tests check (TestClaim_ConsumersSeeCommittedAndFlushedBytesOnly):
//
//	A message is committed when every replica in the ISR has appended it,
//	that is when the HW has passed its end. A consumer is served a message
//	only once it is committed AND the leader has flushed it to disk (paper
//	§3.1: "A message is only exposed to the consumers after it is
//	flushed"): the end a FETCH or an OFFSETS "latest" answer stops at is
//	min(HW, the leader's flushed end).
//
// A follower writes what it fetched to its file (the page cache, no fsync)
// before it fetches again, so the LEO it reports survives the follower's
// process dying; a machine losing power loses what its page cache held, as
// in 0.8 (the copies on other machines are the durability, not fsync).
//
// # Producers: acks 0, 1 and -1 (the paper's asynchronous and synchronous models)
//
// ACKED_PRODUCE carries request.required.acks and a timeout:
//   - 0: no answer (0.7's PRODUCE, and the paper's §5 producer);
//   - 1: answered once the leader has appended the set (asynchronous
//     replication: a leader that dies before its followers fetch loses it);
//   - -1: answered once the message is committed (synchronous replication).
//     With fewer than min.insync.replicas replicas in the ISR the set is
//     refused before it is appended (NotEnoughReplicas); if the ISR shrinks
//     below it while waiting, the answer is NotEnoughReplicasAfterAppend.
//
// A broker that does not lead the partition answers NotLeaderForPartition;
// the producer then asks for the topic's metadata again and retries
// (message.send.max.retries, retry.backoff.ms). A retry after a timeout may
// write a message twice: duplicates come only from the producer's retries.
// A producer may keep several produces in flight on one connection
// (max.in.flight.requests.per.connection): the leader appends each as it
// reads it and answers them in their order, acks=-1 ones once committed, so
// one follower fetch carries several of them (kafka/producer/inflight.go
// says how order is kept across retries).
//
// # The controller
//
// One broker is the controller: the first to create the ephemeral node
// /controller. It then adds one to /controller_epoch (a persistent counter,
// updated conditionally), and every request it sends carries that epoch; a
// broker refuses a request with an epoch older than the newest it has seen
// (StaleControllerEpoch), and its writes to partition state nodes are fenced
// (one ZooKeeper multi-operation that also checks /controller_epoch's version,
// a fence 0.8 lacked), so a deposed controller that has not noticed yet
// changes nothing. When /controller goes away every broker tries again; the
// candidacy starts with the first replicated topic, so a cluster of 0.7
// topics keeps exactly 0.7's ZooKeeper tree.
//
// The controller watches /brokers/ids and /brokers/topics, and is the only
// one to change a partition's leader:
//   - a new replicated topic: each partition's state node is created with
//     the first live replica as leader, the live replicas as ISR, leader
//     epoch 0;
//   - a broker dies: for each partition it led, the first live replica in
//     assignment order that is in the ISR becomes leader, the leader epoch
//     grows by one and the dead broker leaves the ISR; where it was a
//     follower it just leaves the ISR (0.8 did both). If no ISR member is
//     alive the partition stays offline (leader -1) unless
//     unclean.leader.election.enable is true, in which case any live replica
//     becomes leader and committed messages can be lost;
//   - a broker comes back: it is told to follow, and rejoins the ISR once it
//     has caught up (the leader expands the ISR). A broker that registered
//     again before the controller saw it gone is a broker that came back all
//     the same (broker epochs, below);
//   - /admin/preferred_replica_election: leadership moves back to the
//     preferred replica where it is alive and in the ISR.
//
// Every change is a conditional set on the state node's version, after
// which the controller sends LEADER_AND_ISR to the partition's replicas. The
// rules are one function of what the controller knows (Decide, election.go);
// reading ZooKeeper, writing it and sending the requests are around it.
//
// # Broker epochs: a restart is a new broker
//
// A machine that loses power loses what its page cache held; a broker on it
// that comes back and registers again before the controller saw its old
// registration expire must not go on as if nothing happened: leading in the
// same leader epoch with a shorter log, its followers would truncate to its
// end and lose acknowledged messages. So every registration has a broker
// epoch, the czxid of /brokers/ids/<id> (Kafka's KIP-380), and the state node
// records each ISR member's. A member registered with another epoch has died
// and come back: it leaves the ISR and, if it led, another member leads in a
// new epoch. If no member is left in the life it was in sync in, none is
// known to hold every committed message: the partition waits until every ISR
// member is back, asks each where its log ends (EPOCH_END_OFFSET from the
// controller) and the longest log leads. A broker refuses a LEADER_AND_ISR
// made for its earlier registration, and a replica never leads an epoch its
// history already holds unless this process took it
// (TestLeaderNeverContinuesAnEpochAcrossARestart,
// kafka/faults_restart_test.go for both ways this lost data).
//
// # Leader epochs: truncating without losing acknowledged data
//
// Each leader change starts a new leader epoch. A replica keeps, in the file
// leader-epoch-checkpoint of the partition's directory, the pairs (epoch,
// offset of the first message written in it). A leader adds (its epoch, its
// LEO) when it becomes leader; a follower copies the leader's pairs, which
// come with every REPLICA_FETCH answer, for the bytes it appends (our message
// format, 0.7's, has no room for an epoch in each message).
//
// A follower may hold messages the new leader does not have (the old
// leader's uncommitted tail); before fetching it must cut them off. 0.8 cut
// at its own high watermark, which it learns one fetch late and checkpoints
// only every few seconds: a follower truncating to a stale HW threw away
// committed messages, and if it then became leader they were gone
// (TestClaim_EpochTruncationKeepsWhatAStaleHWWouldLose). Here the follower
// asks the leader, with EPOCH_END_OFFSET, where the follower's latest epoch
// ends in the leader's log and truncates there (never past its own end):
// everything before that point was written by the same leader in the same
// epochs on both, so it is identical, and a message boundary on both.
//
// # Coexisting with 0.7's topics
//
// Topics a broker creates on their first PRODUCE stay what they were in the
// paper: unreplicated, named "<brokerid>-<partition>", registered with an
// ephemeral /brokers/topics/<topic>/<brokerid> per broker. A replicated
// topic is created by `kafka topics --create --replication-factor N`, which
// writes the persistent /brokers/topics/<topic> with its replica assignment
// as JSON data (a 0.7 topic's node has no data), and its partition states
// live under /brokers/topics/<topic>/partitions/<p>/state. Its partitions are
// named by their number alone ("0", "1", ...), as in 0.8, in the consumers'
// ownership and offset registries; Algorithm 1 sorts those names as strings
// like any others. A broker refuses to create a 0.7 partition of a topic that
// is replicated, and the tool refuses to replicate a name already used by a
// 0.7 topic. A partition directory holding leader-epoch-checkpoint is a
// replicated partition; its directory name is the same <topic>-<partition>.
//
// # The pieces
//
//	election.go     the controller's rules: Decide, a function of what it knows
//	controller.go   the controller's election, its I/O around Decide, LEADER_AND_ISR
//	zkstate.go      the ZooKeeper nodes and their JSON
//	assign.go       replica assignment (spread, and --replica-assignment)
//	partition.go    one partition on one broker: leader or follower, HW, ISR
//	manager.go      the broker's replicas: the requests' logic, ISR checks
//	fetcher.go      the followers' fetch loops, one per leader broker
//	epochs.go       leader-epoch-checkpoint, replication-offset-checkpoint
package replication

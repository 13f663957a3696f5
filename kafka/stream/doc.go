// Package stream is a small library of stream utilities over the group consumer and the producer: the
// second direction of the paper's §6 ("a library of helpful stream utilities, such as different windowing
// functions or join techniques will be beneficial to this kind of applications"), for the real-time uses of
// §1 — counts of activity per item, click-through rates, reports of operational metrics. LinkedIn built
// Samza on this idea and Kafka Streams after it; the shapes below are theirs: tasks per partition, state
// local to a task, the state checkpointed together with the input offset.
//
// # The model
//
// A Stage reads one input topic with a consumer group. Algorithm 1 (§3.2, kafka/consumer) gives each
// partition to exactly one member, and every partition is processed by one Task of that member. §6:
// "semantically partitioning messages on the join key during publishing". The producer hashes a message's key
// to choose its partition (§3.2), so every
// message of a key reaches the same task, and the per-key state the task keeps — a WindowedAggregate's
// windows, or a join's table — is complete without talking to any other task:
//
//	input topic (6 partitions)          group "counts": 3 processes      output topic
//	┌──────┐                             ┌────────────────────────────┐
//	│ p0   │──► task p0 ─┐               │ process A: tasks p0, p1    │
//	│ p1   │──► task p1 ─┤  key → state  │ process B: tasks p2, p3    │──► F 0 60000 17 page-3
//	│ ...  │             │  (in memory)  │ process C: tasks p4, p5    │    F 0 60000 4 page-9 ...
//	│ p5   │──► task p5 ─┘               └────────────────────────────┘
//	└──────┘     each task: Key, Time → processors → Emitter (producer)
//	                        checkpoint (state + input offset) ──► ZooKeeper, one node per task
//
// A Runner is one processor process: a member of the group (consumer.GroupConsumer with OwnershipOnly: for
// Algorithm 1's ownership, without fetchers; OwnershipChanges says when to start and stop tasks), with one
// Task per partition it owns, each read with a consumer.PartitionIterator from its
// checkpoint's offset and publishing through a producer. Processors are made per task by the Stage's
// ProcessorFactory; WindowedAggregate is one, and any type with Process, AppendState and RestoreState can be
// another.
//
// Each message goes through its stage's KeyFunc and TimeFunc, then its processors. Event time comes from
// the message: the audit envelope's timestamp (package audit, Stage.Envelope / AuditTime) or a function of
// the payload. A message whose key or time cannot be extracted is skipped and counted in the task's Report
// with its reason (Report.Reasons keeps the first few, with their offsets): never silent, never a crash.
//
// # Windows and aggregations
//
// Windows are Tumbling, Hopping or Session (window.go); a length of zero or less is ErrBadWindow when the
// window is made. Stream time is the largest event time the task has seen. A window [s, e) takes messages
// until stream time reaches e + grace; then it closes and its Final results — one Result line per key — are
// published to the output topic (WindowedConfig.Updates also publishes every change as an Update). A
// message later than that is counted in Report.Late and not aggregated. Aggregations are Count, Sum, Min,
// Max and a user's Fold. Output topics are checked with kafka/topic's rule before anything is produced.
//
// # Checkpoints and guarantees
//
// A task's state and the offset of the next message to read are encoded together (Task.Checkpoint) and
// written in one atomic write, a version-conditional set of one ZooKeeper node per task
// (/consumers/<group>/checkpoints/<topic>/<partition>, ZKStore): §4's recipe for exactly-once loading
// ("store the offset with the data"), and the textbook's "changelog with the offsets". A task that is
// (re)assigned a partition restores the state and resumes from the checkpoint's offset, not from the group's
// offset registry. A task deposed by a rebalance it has not noticed cannot overwrite a newer checkpoint: its
// write is refused (ErrDeposed) and it drops its state. A checkpoint larger than one node holds is
// ErrStateTooLarge, and nothing is written.
//
//	checkpoint = "KSC1" | offset | report | processors n | n × (length, state)     (varints)
//
// The guarantees, precisely:
//
//   - The checkpointed state is exactly-once: every message of the partition is in the checkpointed state
//     once, none twice and none missed, however often tasks die (kill -9) and restart elsewhere — the state
//     and its offset are one value, so a task resumes exactly after the messages its state holds. The
//     Report's counters are part of it, so they are exact too.
//   - The output topic is at-least-once: results are published, and their publication acknowledged (acks=1),
//     before the checkpoint that covers them is written, so none is lost; but windows closed since the last
//     checkpoint are published again after a crash. A result published twice is the same line twice (what a
//     window publishes depends only on its partition's order), so a reader that keeps the last value per
//     (key, window) sees exactly the results of an uninterrupted run.
package stream

package consumer

import (
	"slices"
)

// This file holds the arithmetic of paper §3.2, Algorithm 1 ("rebalance process for consumer C_i in group G"),
// as a pure function so that it can be read, and tested, apart from ZooKeeper:
//
//	For each topic T that C_i subscribes to
//	    remove partitions owned by C_i from the ownership registry
//	    read the broker and the consumer registries from Zookeeper
//	    compute P_T = partitions available in all brokers under topic T
//	    compute C_T = all consumers in G that subscribe to topic T
//	    sort P_T and C_T
//	    let j be the index position of C_i in C_T and let N = |P_T|/|C_T|
//	    assign partitions from j*N to (j+1)*N - 1 in P_T to consumer C_i
//	    ...
//
// Every consumer of the group runs the same computation on the same registry contents, so all of them agree on
// who owns what without talking to each other (§3.2: "let consumers coordinate among themselves in a decentralized fashion"). The paper's j*N..(j+1)*N-1
// drops the remainder of |P_T|/|C_T|; like Kafka 0.7 we give one extra partition to each of the first
// |P_T| mod |C_T| consumers so that no partition is left unowned (docs/PROTOCOL.md §6 step 3).

// RangeAssignment is one stream's share of a topic under Algorithm 1.
type RangeAssignment struct {
	Stream     string   // stream id "<consumerid>-<i>"
	Partitions []string // "<brokerid>-<partition>" names, in the sorted order of P_T; empty if none
}

// AssignRange applies Algorithm 1 to one topic: partitions are the topic's partition names
// "<brokerid>-<partition>" (P_T) and streams the ids of every stream of the group subscribed to the topic (C_T).
// Both are sorted as strings, as 0.7 did, so "1-10" comes before "1-2": what matters is not the order itself but
// that every consumer computes the same one. With P partitions and C streams, n = P/C and extra = P%C, and the
// stream at position i takes n+1 partitions if i < extra and n otherwise, starting at n*i + min(i, extra).
// Streams beyond the number of partitions get nothing. The result has one entry per stream, in sorted stream
// order; the inputs are not modified.
func AssignRange(partitions, streams []string) []RangeAssignment {
	ps := slices.Clone(partitions)
	slices.Sort(ps)
	ps = slices.Compact(ps)
	cs := slices.Clone(streams)
	slices.Sort(cs)
	cs = slices.Compact(cs)

	out := make([]RangeAssignment, len(cs))
	if len(cs) == 0 {
		return out
	}
	n, extra := len(ps)/len(cs), len(ps)%len(cs)
	for i, s := range cs {
		start, count := rangeShare(i, n, extra)
		out[i] = RangeAssignment{Stream: s, Partitions: ps[start : start+count : start+count]}
	}
	return out
}

// rangeShare is the slice [start, start+count) of P_T that the stream at sorted position i owns.
func rangeShare(i, n, extra int) (start, count int) {
	start = n*i + min(i, extra)
	count = n
	if i < extra {
		count++
	}
	return start, count
}

// PartitionsFor is AssignRange seen from one stream: the partitions that stream owns, or nil if it owns none
// (or is not among streams).
func PartitionsFor(stream string, partitions, streams []string) []string {
	for _, a := range AssignRange(partitions, streams) {
		if a.Stream == stream {
			return a.Partitions
		}
	}
	return nil
}

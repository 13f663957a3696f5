package replication

import (
	"fmt"
	"maps"
	"slices"
)

// Facts is what the controller knows of one partition when it decides: its state node (if it exists),
// its replica list, the live brokers with their broker epochs, and what was asked of it. Decide reads
// nothing else, so the rules are tested without ZooKeeper (election_test.go).
type Facts struct {
	State    State // the state node as read; ignored when !Exists
	Exists   bool  // false: a new partition, no state node yet
	Replicas []int32
	// Live maps each registered broker to its broker epoch (zk.Broker.Epoch): the czxid of its current
	// registration.
	Live map[int32]int64
	// Preferred: move leadership back to the preferred replica (replicas[0]) if it is in the ISR (an
	// /admin/preferred_replica_election request or auto.leader.rebalance.enable).
	Preferred bool
	// Unclean is unclean.leader.election.enable.
	Unclean bool
	// LogEnds are the answers of the brokers a previous Decide asked about (Decision.Ask).
	LogEnds map[int32]LogEnd
	// ControllerEpoch is the deciding controller's epoch.
	ControllerEpoch int32
}

// LogEnd is where one replica's log ends: its newest leader epoch and its log end offset.
type LogEnd struct {
	Epoch int32
	End   int64
}

// after reports whether a is a longer log than b: a newer epoch, or the same epoch and a larger end (the
// order Raft uses for "more up to date").
func (a LogEnd) after(b LogEnd) bool {
	return a.Epoch > b.Epoch || a.Epoch == b.Epoch && a.End > b.End
}

// Decision is what Decide returns.
type Decision struct {
	// State is the partition's state after the decision; when Change is false it is Facts.State.
	State  State
	Change bool   // State must be written (a conditional set on its version, or a create)
	Why    string // for the log
	// Ask lists brokers whose LogEnd the decision needs: every ISR member has restarted, and the one
	// with the longest log must lead. Decide again with their answers in Facts.LogEnds.
	Ask []int32
	// Deposed: the state node was written by a controller of a newer epoch; this one must change nothing
	// and resign.
	Deposed bool
}

// Decide is the partition state machine of the package doc's controller section, as a function of what
// the controller knows. Two rules make a broker's restart safe (docs/PROTOCOL.md §10, "broker epochs"):
//
//   - A replica counts as the one in the ISR only while it is registered with the broker epoch the
//     state node recorded for it. A broker registered again (it died, or lost its session, and came back)
//     is a new broker: it leaves the ISR, loses leadership (a new leader epoch, another ISR member
//     leads), and follows until its leader takes it back into the ISR.
//   - When no ISR member is still in the life the state recorded, none of them is known to hold every
//     committed message (each may have lost what it had not flushed). The partition stays offline until
//     every ISR member is registered again; then the one with the longest log leads, in a new epoch, with
//     an ISR of itself. unclean.leader.election.enable elects any live replica at once instead.
//
// A state node written before broker epochs were recorded has none: its members count as unchanged, and
// the next write records them. A state node written by a controller of a newer epoch than the deciding one's
// is not touched: the decision is Deposed (the writes are fenced as well, controller.writeState).
func Decide(f Facts) Decision {
	if !f.Exists {
		return decideNew(f)
	}
	s := f.State
	if s.ControllerEpoch > f.ControllerEpoch {
		return Decision{State: s, Deposed: true}
	}
	same := func(r int32) bool {
		e, live := f.Live[r]
		if !live {
			return false
		}
		recorded, known := s.BrokerEpochs[r]
		return !known || recorded == e
	}
	ns := s
	ns.ISR = nil
	for _, r := range s.ISR {
		if same(r) {
			ns.ISR = append(ns.ISR, r)
		}
	}
	ns.BrokerEpochs = f.epochsOf(ns.ISR)
	leaderOK := s.Leader >= 0 && same(s.Leader)
	why := ""
	switch {
	case !leaderOK:
		if cand := first(f.Replicas, ns.ISR); cand >= 0 {
			ns.Leader, ns.LeaderEpoch = cand, s.LeaderEpoch+1
			why = "leader election"
			if _, live := f.Live[s.Leader]; live && s.Leader >= 0 {
				why = fmt.Sprintf("leader election: broker %d registered again (broker epoch %d, was %d)", s.Leader, f.Live[s.Leader], s.BrokerEpochs[s.Leader])
			}
			break
		}
		if f.Unclean {
			if cand := first(f.Replicas, liveOf(f.Replicas, f.Live)); cand >= 0 {
				ns.Leader, ns.LeaderEpoch, ns.ISR = cand, s.LeaderEpoch+1, []int32{cand}
				ns.BrokerEpochs = f.epochsOf(ns.ISR)
				why = "UNCLEAN leader election (committed messages may be lost)"
				break
			}
		}
		if len(s.ISR) > 0 && len(liveOf(s.ISR, f.Live)) == len(s.ISR) {
			var ask []int32
			best, bestEnd := int32(-1), LogEnd{}
			for _, r := range f.Replicas {
				if !slices.Contains(s.ISR, r) {
					continue
				}
				e, ok := f.LogEnds[r]
				if !ok {
					ask = append(ask, r)
				} else if best < 0 || e.after(bestEnd) {
					best, bestEnd = r, e
				}
			}
			if len(ask) > 0 {
				return Decision{State: s, Ask: ask}
			}
			ns.Leader, ns.LeaderEpoch, ns.ISR = best, s.LeaderEpoch+1, []int32{best}
			ns.BrokerEpochs = f.epochsOf(ns.ISR)
			why = fmt.Sprintf("every ISR member %v registered again: the longest log (broker %d, epoch %d, end %d) leads", s.ISR, best, bestEnd.Epoch, bestEnd.End)
			break
		}
		// Offline: keep the ISR and its recorded epochs as they were, so that a clean election can happen
		// when one of them returns in the same life, or all of them return.
		ns.Leader, ns.ISR, ns.BrokerEpochs = -1, s.ISR, s.BrokerEpochs
		if s.Leader < 0 {
			return Decision{State: s}
		}
		why = "offline: no live replica in the ISR (unclean.leader.election.enable=false)"
	case f.Preferred && len(f.Replicas) > 0 && f.Replicas[0] != s.Leader && slices.Contains(ns.ISR, f.Replicas[0]):
		ns.Leader, ns.LeaderEpoch, why = f.Replicas[0], s.LeaderEpoch+1, "preferred replica election"
	case len(ns.ISR) < len(s.ISR):
		why = "dead or registered-again brokers leave the ISR"
	case !maps.Equal(ns.BrokerEpochs, s.BrokerEpochs):
		why = "broker epochs recorded"
	default:
		return Decision{State: s}
	}
	return Decision{State: ns, Change: true, Why: why}
}

// decideNew is a new partition's first state: the first live replica leads, the live replicas are in sync
// (there is nothing to be out of sync with yet); with none alive every replica counts as in sync, with no
// epochs recorded.
func decideNew(f Facts) Decision {
	ns := State{Leader: -1, ZKVersion: -1, ISR: liveOf(f.Replicas, f.Live)}
	if len(ns.ISR) > 0 {
		ns.Leader = ns.ISR[0]
		ns.BrokerEpochs = f.epochsOf(ns.ISR)
	} else {
		ns.ISR = slices.Clone(f.Replicas)
	}
	return Decision{State: ns, Change: true, Why: "new partition"}
}

// epochsOf is the broker epochs of the live brokers among ids (nil for none).
func (f Facts) epochsOf(ids []int32) map[int32]int64 {
	var out map[int32]int64
	for _, r := range ids {
		if e, ok := f.Live[r]; ok && e != 0 {
			if out == nil {
				out = map[int32]int64{}
			}
			out[r] = e
		}
	}
	return out
}

// first is the first of replicas (assignment order) that is in set, -1 if none is.
func first(replicas, set []int32) int32 {
	for _, r := range replicas {
		if slices.Contains(set, r) {
			return r
		}
	}
	return -1
}

// liveOf is the members of ids that are registered, in their order.
func liveOf(ids []int32, live map[int32]int64) []int32 {
	var out []int32
	for _, r := range ids {
		if _, ok := live[r]; ok {
			out = append(out, r)
		}
	}
	return out
}

package faults

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// Log is one partition as read back: the messages' ids in offset order, and the offset where it ends.
type Log struct {
	IDs []ID
	End int64
}

// ReadBack reads every partition of topic from offset 0 to its end from its leader, as a consumer does. It
// first waits until the visible ends have not moved for settle (the followers' fetches and the leader's
// flush make the last committed bytes visible a little after the last acknowledgement).
func ReadBack(t testing.TB, c *Cluster, topic string, partitions int, settle time.Duration) []Log {
	t.Helper()
	ends := make([]int64, partitions)
	stable := time.Now()
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(250 * time.Millisecond) {
		moved := false
		for p := range partitions {
			if e, err := latest(c, topic, int32(p)); err == nil && e != ends[p] {
				ends[p], moved = e, true
			} else if err != nil {
				moved = true
			}
		}
		if moved {
			stable = time.Now()
		} else if time.Since(stable) >= settle {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("faults: the ends of %s kept moving or could not be read for 2 minutes (%v)", topic, ends)
		}
	}
	logs := make([]Log, partitions)
	for p := range partitions {
		logs[p] = readPartition(t, c, topic, int32(p), ends[p])
	}
	return logs
}

// leaderAddr asks the cluster for a partition's leader.
func leaderAddr(c *Cluster, topic string, p int32) (string, error) {
	leaders, hosts, err := consumer.Leaders(c.liveAddrs(), 5*time.Second, topic)
	if err != nil {
		return "", err
	}
	ls := leaders[topic]
	if int(p) >= len(ls) || ls[p] < 0 || hosts[ls[p]] == "" {
		return "", fmt.Errorf("faults: %s-%d has no leader now (%v)", topic, p, ls)
	}
	return hosts[ls[p]], nil
}

func (c *Cluster) liveAddrs() []string {
	var out []string
	for _, b := range c.Brokers {
		if b.up {
			out = append(out, b.Addr())
		}
	}
	return out
}

func latest(c *Cluster, topic string, p int32) (int64, error) {
	addr, err := leaderAddr(c, topic, p)
	if err != nil {
		return 0, err
	}
	sc := consumer.NewSimpleConsumer(addr, 5*time.Second)
	defer sc.Close()
	return sc.LatestOffset(topic, p)
}

func readPartition(t testing.TB, c *Cluster, topic string, p int32, end int64) Log {
	t.Helper()
	addr, err := leaderAddr(c, topic, p)
	if err != nil {
		t.Fatalf("faults: read back %s-%d: %v", topic, p, err)
	}
	sc := consumer.NewSimpleConsumer(addr, 10*time.Second)
	defer sc.Close()
	var l Log
	for l.End < end {
		set, err := sc.Fetch(topic, p, l.End, 1<<20)
		if err != nil {
			t.Fatalf("faults: read back %s-%d at %d from %s: %v", topic, p, l.End, addr, err)
		}
		it := message.NewIterator(set, l.End)
		for it.Next() {
			id, ok := ParseID(it.Message().Payload())
			if !ok {
				id = ID{Partition: -1, Set: -1, Msg: -1}
			}
			l.IDs = append(l.IDs, id)
		}
		if it.Err() != nil {
			t.Fatalf("faults: read back %s-%d: at %d: %v", topic, p, it.Offset(), it.Err())
		}
		if it.Consumed() == 0 {
			t.Fatalf("faults: read back %s-%d: nothing whole at %d (end %d)", topic, p, l.End, end)
		}
		l.End += int64(it.Consumed())
	}
	return l
}

// Result is what the checker found (the package doc says what each count means).
type Result struct {
	Sent, Acked         int // messages
	SentSets, AckedSets int
	ReadBack            int // messages read back, every copy
	Lost                int // acknowledged messages not read back
	LostSets            []string
	Duplicated          int // copies beyond the first
	RetryDuplicateSets  int // whole sets repeated right after themselves (the producer's retries)
	BadDuplicates       int // any other extra copy
	Torn                int // messages of a set that was not read back whole and in order
	OutOfOrder          int
	Unexpected          int
	UnackedWritten      int // messages of sets not acknowledged, yet read back
	Consumed            int // what the tailing consumer received (0 without one)
	DirtyReads          int // of those, messages not in the final log
	Runs                []RunResult
}

// RunResult is one workload's part of a Result.
type RunResult struct {
	Acks              int16
	Sent, Acked, Lost int // messages
}

// OK reports whether the run kept every guarantee that holds whatever the acks: no bad duplicate, no
// torn set, order kept, nothing unexpected, no dirty read. Lost is for the caller to judge (with acks=-1
// it must be 0; with acks=1 it is what the run measures).
func (r Result) OK() bool {
	return r.BadDuplicates == 0 && r.Torn == 0 && r.OutOfOrder == 0 && r.Unexpected == 0 && r.DirtyReads == 0
}

// Check compares the logs read back with the history of the runs (workloads on the topic one after
// another, each numbering its sets above the previous one's) and, if tail is not nil, with what the
// consumer received.
func Check(logs []Log, tail *Tail, runs ...*Run) Result {
	type owned struct {
		s   Set
		run int
	}
	sets := make([]map[int]owned, len(logs)) // per partition: set number → record
	for p := range logs {
		sets[p] = map[int]owned{}
	}
	r := Result{Runs: make([]RunResult, len(runs))}
	for k, run := range runs {
		r.Runs[k].Acks = run.w.Acks
		for p, ss := range run.Sets() {
			for _, s := range ss {
				if p < len(sets) {
					sets[p][s.Seq] = owned{s, k}
				}
			}
		}
	}
	present := map[ID]bool{}
	for p, l := range logs {
		r.ReadBack += len(l.IDs)
		copies := map[int]int{} // set → whole copies read back
		last := ID{Set: -1}     // the last first copy, for the order
		prevSet := -1           // the set of the previous whole copy, for retry duplicates
		for i := 0; i < len(l.IDs); {
			id := l.IDs[i]
			o, known := sets[p][id.Set]
			if id.Partition != int32(p) || !known || id.Msg >= o.s.Messages {
				r.Unexpected++
				i++
				continue
			}
			// A whole copy of a set is its N messages in order, from message 0.
			n := o.s.Messages
			whole := id.Msg == 0 && i+n <= len(l.IDs)
			for k := 0; whole && k < n; k++ {
				whole = l.IDs[i+k] == ID{Partition: int32(p), Set: id.Set, Msg: k}
			}
			if !whole {
				r.Torn++
				present[id] = true
				i++
				continue
			}
			copies[id.Set]++
			for k := range n {
				present[ID{Partition: int32(p), Set: id.Set, Msg: k}] = true
			}
			switch {
			case copies[id.Set] == 1:
				if id.less(last) {
					r.OutOfOrder += n
				} else {
					last = ID{Partition: int32(p), Set: id.Set, Msg: n - 1}
				}
			case prevSet == id.Set:
				r.Duplicated += n
				r.RetryDuplicateSets++
			default:
				r.Duplicated += n
				r.BadDuplicates += n
			}
			prevSet = id.Set
			i += n
		}
		for _, seq := range slices.Sorted(maps.Keys(sets[p])) {
			o := sets[p][seq]
			s, rr := o.s, &r.Runs[o.run]
			r.Sent += s.Messages
			r.SentSets++
			rr.Sent += s.Messages
			switch {
			case s.Acked:
				r.Acked += s.Messages
				r.AckedSets++
				rr.Acked += s.Messages
				if copies[s.Seq] == 0 {
					for k := range s.Messages {
						if !present[ID{Partition: int32(p), Set: s.Seq, Msg: k}] {
							r.Lost++
							rr.Lost++
						}
					}
					r.LostSets = append(r.LostSets, fmt.Sprintf("p%d s%d", p, s.Seq))
				}
			case copies[s.Seq] > 0:
				r.UnackedWritten += s.Messages
			}
		}
	}
	if tail != nil {
		got, bad := tail.Got()
		r.Consumed = len(got) + bad
		r.Unexpected += bad
		for _, g := range got {
			if !present[g.ID] {
				r.DirtyReads++
			}
		}
	}
	return r
}

// String is the result in the form the fault tests print.
func (r Result) String() string {
	s := fmt.Sprintf("acknowledged %d messages (%d sets) of %d sent; read back %d; lost %d; duplicated %d (%d whole sets repeated right after themselves: the producer's retries; %d other)",
		r.Acked, r.AckedSets, r.Sent, r.ReadBack, r.Lost, r.Duplicated, r.RetryDuplicateSets, r.BadDuplicates)
	s += fmt.Sprintf("; not acknowledged but written %d; torn %d; out of order %d; unexpected %d", r.UnackedWritten, r.Torn, r.OutOfOrder, r.Unexpected)
	if len(r.Runs) > 1 {
		for k, rr := range r.Runs {
			s += fmt.Sprintf("; workload %d (acks=%d): acknowledged %d of %d, lost %d", k+1, rr.Acks, rr.Acked, rr.Sent, rr.Lost)
		}
	}
	if r.Consumed > 0 {
		s += fmt.Sprintf("; consumer received %d, dirty reads %d", r.Consumed, r.DirtyReads)
	}
	if len(r.LostSets) > 0 {
		s += "; lost sets: " + strings.Join(r.LostSets[:min(len(r.LostSets), 20)], ", ")
		if len(r.LostSets) > 20 {
			s += fmt.Sprintf(" and %d more", len(r.LostSets)-20)
		}
	}
	return s
}

// Failover is one fault and how long the cluster took to serve again.
type Failover struct {
	What          string        // "kill -9 of broker 2, leader of kill-0"
	Elected       time.Duration // until ZooKeeper named a new leader
	ProducerAgain time.Duration // until the producer was acknowledged again, after the new leader was named (0: not measured)
	ConsumerAgain time.Duration // until the consumer received a message sent after the fault (0: not measured)
}

func (f Failover) String() string {
	s := fmt.Sprintf("%s: new leader after %v", f.What, f.Elected.Round(time.Millisecond))
	if f.ProducerAgain > 0 {
		s += fmt.Sprintf(", producer acknowledged again after %v", f.ProducerAgain.Round(time.Millisecond))
	}
	if f.ConsumerAgain > 0 {
		s += fmt.Sprintf(", consumer reading again after %v", f.ConsumerAgain.Round(time.Millisecond))
	}
	return s
}

// Summary describes failovers by the median and the largest of each time.
func Summary(fs []Failover) string {
	if len(fs) == 0 {
		return "no failover"
	}
	stat := func(get func(Failover) time.Duration) string {
		var ds []time.Duration
		for _, f := range fs {
			if d := get(f); d > 0 {
				ds = append(ds, d)
			}
		}
		if len(ds) == 0 {
			return "not measured"
		}
		slices.Sort(ds)
		return fmt.Sprintf("median %v, max %v", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	return fmt.Sprintf("%d failovers: new leader %s; producer acknowledged again %s; consumer reading again %s",
		len(fs), stat(func(f Failover) time.Duration { return f.Elected }),
		stat(func(f Failover) time.Duration { return f.ProducerAgain }),
		stat(func(f Failover) time.Duration { return f.ConsumerAgain }))
}

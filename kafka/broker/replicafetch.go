package broker

import (
	"time"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/replication"
)

// handleReplicaFetch serves a REPLICA_FETCH (protocol/replicafetch.go): a follower fetching from this leader
// like a consumer (docs/PROTOCOL.md §10). The request is held until replica.fetch.min.bytes are there to send
// or its wait has passed; each part records the follower's progress (its fetch offset is its log end) as
// the request arrives and again when it is answered, and answers the leader's bytes from there (sendfile, §3.1), the high watermark and the epochs of those
// bytes. A broker id outside the partition's replicas gets ErrReplicaNotAvailable, and is logged.
func (cn *conn) handleReplicaFetch(body []byte) error {
	req, err := cn.dec.ReplicaFetch(body)
	if err != nil {
		return err
	}
	fetches := req.Fetches
	parts := growTo(cn.rparts, len(fetches)) // reused: no allocation per follower round
	cn.rparts = parts
	clear(parts)
	if cn.b.repl != nil {
		for i := range fetches {
			if parts[i] = cn.replica(fetches[i].Topic, fetches[i].Partition); parts[i] != nil {
				parts[i].FollowerArrived(req.ReplicaID, fetches[i].Offset) // before the wait: a follower at the end is caught up now
			}
		}
		cn.waitForBytes(&req, parts)
	}
	answers := growTo(cn.ranswers, len(fetches))
	cn.ranswers = answers
	cn.chunks, cn.epochs = cn.chunks[:0], cn.epochs[:0]
	defer func() {
		for _, c := range cn.chunks {
			c.Release()
		}
		clear(cn.chunks)
	}()
	budget := protocol.MaxResponseSize - 64*len(fetches)
	total := 2
	for i := range fetches {
		f := &fetches[i]
		a := replicaAnswer{hw: -1, code: protocol.ErrNotLeaderForPartition, epochs: len(cn.epochs), upto: len(cn.epochs)}
		var c log.Chunk
		switch {
		case cn.b.repl == nil:
			a.code = protocol.ErrUnknownTopicOrPartition
		case f.MaxSize < 0:
			a.code = protocol.ErrInvalidFetchSize
		case parts[i] != nil:
			var err error
			c, a.hw, cn.epochs, a.code, err = parts[i].FollowerFetch(req.ReplicaID, f.Offset, min(int(f.MaxSize), cn.b.maxFetch, max(budget, 0)), cn.epochs)
			a.upto = len(cn.epochs)
			if err != nil {
				cn.b.log.Warn("replica fetch refused", "remote", cn.remote, "replica", req.ReplicaID,
					"topic", f.Topic, "partition", f.Partition, "offset", f.Offset, "code", a.code, "err", err)
			}
		}
		cn.chunks = append(cn.chunks, c)
		answers[i] = a
		budget -= int(c.Len)
		total += protocol.ReplicaFetchPartSize(f.Topic, a.upto-a.epochs) + int(c.Len)
	}
	out := protocol.AppendResponseHeader(cn.out[:0], total, protocol.ErrNone)
	out = append(out, byte(len(fetches)>>8), byte(len(fetches)))
	for i, c := range cn.chunks {
		a := answers[i]
		out = protocol.AppendReplicaFetchPart(out, fetches[i].Topic, fetches[i].Partition, a.code, a.hw, cn.epochs[a.epochs:a.upto], int(c.Len))
		var err error
		if out, err = cn.sendPart(out, c); err != nil {
			return err
		}
	}
	cn.out = out
	return cn.send.write(out, false)
}

// waitForBytes holds a replica fetch until its partitions this broker leads have min bytes to send beyond
// the follower's offsets, or its wait is over (replica.fetch.min.bytes, replica.fetch.wait.max.ms).
func (cn *conn) waitForBytes(req *protocol.ReplicaFetchRequest, parts []*replication.Partition) {
	if req.MaxWaitMs <= 0 {
		return
	}
	ready := func() bool {
		var n int64
		for i, p := range parts {
			if p == nil || !p.IsLeader() {
				return true // answer the error now
			}
			n += p.Available(req.Fetches[i].Offset)
		}
		return n >= int64(max(req.MinBytes, 1))
	}
	if ready() {
		return
	}
	if cn.waitCh == nil {
		cn.waitCh = make(chan struct{}, 1)
	}
	// A partition is woken once it alone has its share of min bytes: when the sum over the partitions
	// reaches min bytes, one of them has at least that share, so no wake-up is missed; ready decides.
	share := (int64(max(req.MinBytes, 1)) + int64(len(parts)) - 1) / int64(len(parts))
	for i, p := range parts {
		p.AddWaiter(cn.waitCh, req.Fetches[i].Offset+share)
	}
	defer func() {
		for _, p := range parts {
			p.RemoveWaiter(cn.waitCh)
		}
	}()
	wait := time.Duration(req.MaxWaitMs) * time.Millisecond
	if cn.waitTimer == nil {
		cn.waitTimer = time.NewTimer(wait)
	} else {
		cn.waitTimer.Reset(wait) // since Go 1.23 a stopped timer's channel holds no stale tick
	}
	defer cn.waitTimer.Stop()
	for !ready() {
		select {
		case <-cn.waitCh:
		case <-cn.waitTimer.C:
			return
		case <-cn.b.stopping:
			return
		}
	}
}

// replicaAnswer is one partition's answer to a REPLICA_FETCH, before its bytes are sent.
type replicaAnswer struct {
	hw           int64
	code         protocol.ErrorCode
	epochs, upto int // cn.epochs[epochs:upto]
}

// growTo returns s with length n, reusing its array when it is large enough.
func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

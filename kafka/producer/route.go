package producer

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// This file is Send's short way. A send of the paper's producer, one
// request that gets no answer, does little beyond encoding its messages and
// one write(2); but before them the long way checks the topic's name, asks
// the Discovery for the topic's partitions, picks one, and finds the
// broker's connection in the pool. At one message per request that work
// is a part of a send's time that shows (docs/PERFORMANCE.md, "the
// send's short way").
//
// Where the answer cannot change, Send remembers it: for a topic and
// partition, the partition picked and the broker's connection. The answer
// is kept only if every step of the long way would give it again:
//
//   - the Discovery is a broker.list (staticDiscovery), whose brokers and
//     partitions never change, and the Partitioner is not asked: the
//     partition was given, or the list holds one broker;
//   - the producer reads no metadata (a replicated producer asks it which
//     broker leads) and its requests get no answer (an acknowledged send
//     reads the answer and retries on another connection);
//   - the topic's batches are not compressed (compressed.topics);
//   - the name passed the topic check, which depends on the name alone.
//
// The connection is the pool's for the broker, which it keeps until the
// producer closes; a send on it after Close fails with ErrClosed, as the
// long way's does. Each message is still checked against max.message.size.

// maxRoutes bounds the routes a producer remembers: past it, a new topic
// and partition takes the long way on every send, still without allocating.
const maxRoutes = 8

// route is where a send to topic and partition goes.
type route struct {
	topic     string
	partition int32 // as the caller gave it (-1: the producer picks)
	dst       Partition
	c         *brokerConn
}

// routeCache holds the routes, in a list replaced, never changed, when one
// is added (under mu), so that a send finds its route with one atomic load
// and comparisons: no lock, nothing allocated.
type routeCache struct {
	list atomic.Pointer[[]route]
	mu   sync.Mutex
}

// find returns the route of topic and partition, or nil.
func (rc *routeCache) find(topic string, partition int32) *route {
	if p := rc.list.Load(); p != nil {
		for i := range *p {
			if r := &(*p)[i]; r.partition == partition && r.topic == topic {
				return r
			}
		}
	}
	return nil
}

// room reports whether fewer than maxRoutes are held, so that past them the
// long way does not look up a connection and take mu on every send for a
// route add would refuse.
func (rc *routeCache) room() bool {
	p := rc.list.Load()
	return p == nil || len(*p) < maxRoutes
}

// add remembers r, unless maxRoutes are held or it is there already.
func (rc *routeCache) add(r route) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var cur []route
	if p := rc.list.Load(); p != nil {
		cur = *p
	}
	if len(cur) >= maxRoutes || slices.ContainsFunc(cur, func(x route) bool { return x.partition == r.partition && x.topic == r.topic }) {
		return
	}
	next := append(slices.Clip(cur), r) // a new array: senders may hold cur
	rc.list.Store(&next)
}

// routable reports whether a producer's answers for a topic given the
// partition the caller asked for can be remembered (the rules above; the
// compression and name rules are the caller's).
func (p *SyncProducer) routable(partition int32) bool {
	if p.meta != nil || p.cfg.RequiredAcks != protocol.AcksNone {
		return false
	}
	d, ok := p.disc.(*staticDiscovery)
	return ok && (partition >= 0 || len(d.parts) == 1)
}

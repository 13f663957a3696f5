package broker

import (
	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// maxCachedLogs bounds a connection's cache of partition logs.
const maxCachedLogs = 4096

type partKey struct {
	topic     string
	partition int32
}

// cache remembers a partition's log for this connection, so the next request
// for it is one map lookup with no allocation and no shared lock.
func (cn *conn) cache(topic string, partition int32, l *log.Log) {
	if len(cn.logs) >= maxCachedLogs {
		clear(cn.logs)
	}
	cn.logs[partKey{topic, partition}] = l
	cn.last = lastLog{partKey{topic, partition}, l}
}

// lastLog is the partition a connection's last request named, and its log.
type lastLog struct {
	partKey
	l *log.Log
}

// cached returns the log that cache remembered for a partition: the one
// asked for last without hashing its name (a producer names the same partition
// request after request, and names are interned, so the comparison is
// usually of one pointer), else from the map.
func (cn *conn) cached(topic string, partition int32) (*log.Log, bool) {
	if cn.last.l != nil && cn.last.partition == partition && cn.last.topic == topic {
		return cn.last.l, true
	}
	l, ok := cn.logs[partKey{topic, partition}]
	if ok {
		cn.last = lastLog{partKey{topic, partition}, l}
	}
	return l, ok
}

// lookup finds an existing log for a fetch or offsets request. It returns
// (nil, ErrWrongPartition) for a name or partition that cannot exist, and
// (nil, ErrNone) for a valid partition nobody has produced to yet.
func (cn *conn) lookup(topic string, partition int32) (*log.Log, protocol.ErrorCode) {
	if l, ok := cn.cached(topic, partition); ok {
		return l, protocol.ErrNone
	}
	if log.ValidateTopic(topic) != nil || partition < 0 || int(partition) >= cn.b.logs.Partitions(topic) {
		return nil, protocol.ErrWrongPartition
	}
	l, ok := cn.b.logs.Get(topic, int(partition))
	if !ok {
		return nil, protocol.ErrNone
	}
	cn.cache(topic, partition, l)
	return l, protocol.ErrNone
}

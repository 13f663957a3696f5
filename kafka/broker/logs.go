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
}

// lookup finds an existing log for a fetch or offsets request. It returns
// (nil, ErrWrongPartition) for a name or partition that cannot exist, and
// (nil, ErrNone) for a valid partition nobody has produced to yet.
func (cn *conn) lookup(topic string, partition int32) (*log.Log, protocol.ErrorCode) {
	if l, ok := cn.logs[partKey{topic, partition}]; ok {
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

package broker

import (
	"errors"
	"fmt"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
	"github.com/kafkarepro/kafkarepro/kafka/protocol08"
)

// The Kafka protocol as 0.8 defined it (package protocol08, docs/PROTOCOL.md
// §12), on the same port as 0.7's: a connection's first request decides
// which it speaks (protocol08.Is08), and it keeps to it. Requests are served
// in the kafka08_*.go files, on the paper's log: what comes in as 0.8
// messages is stored as the paper's (keys in 0.7's frame, message/keyed.go),
// and 0.8's logical offsets are mapped onto byte offsets by the log's index
// (log/index.go).

// errUnsupported08 closes a connection that asks for a version not served.
// Only ApiVersions has an answer for that (UNSUPPORTED_VERSION); clients
// learn the rest from it and do not ask.
var errUnsupported08 = errors.New("broker: Kafka protocol request of a version not served")

// conn08 is a connection's scratch for the Kafka protocol.
type conn08 struct {
	conv  []byte // a produced set converted to the paper's messages
	read  []byte // log bytes read for a fetch
	app   protocol08.Appender
	fetch []protocol08.FetchResult
	sets  [][]byte // the fetch answer's sets, one per partition, reused
	// views are the fetch answer's parts sent from a log view, by result
	// index (empty where the set was built); walk reads a view's entries.
	views    []log.Chunk
	walk     []byte
	sendView func(i int, more bool) error
}

// decide sets the protocol of the connection from its first request.
func (cn *conn) decide(id int16, body []byte) error {
	if protocol08.Is08(id, body) {
		cn.speaks = speaks08
		cn.k08 = &conn08{}
		cn.k08.sendView = cn.sendView08
		cn.b.log.Debug("connection speaks the Kafka protocol", "remote", cn.remote, "firstKey", protocol08.KeyName(id))
		return nil
	}
	cn.speaks = speaks07
	return protocol.CheckRequestID(id)
}

// handle08 serves one Kafka protocol request. An error closes the
// connection.
func (cn *conn) handle08(key int16, rest []byte) error {
	h, body, err := protocol08.ParseHeader(key, rest)
	if err != nil {
		return err
	}
	if key == protocol08.KeyAPIVersions {
		cn.out = protocol08.AppendAPIVersionsResponse(cn.out[:0], h)
		return cn.send.write(cn.out, false)
	}
	if !protocol08.Supported(key, h.APIVersion) {
		return fmt.Errorf("%w: %s v%d from client %q (ApiVersions lists what is)", errUnsupported08,
			protocol08.KeyName(key), h.APIVersion, h.ClientID)
	}
	switch key {
	case protocol08.KeyProduce:
		return cn.produce08(h, body)
	case protocol08.KeyFetch:
		return cn.fetch08(h, body)
	case protocol08.KeyOffsets:
		return cn.offsets08(h, body)
	case protocol08.KeyMetadata:
		return cn.metadata08(h, body)
	case protocol08.KeyOffsetCommit:
		return cn.offsetCommit08(h, body)
	case protocol08.KeyOffsetFetch:
		return cn.offsetFetch08(h, body)
	case protocol08.KeyConsumerMetadata:
		return cn.consumerMetadata08(h, body)
	}
	return fmt.Errorf("%w: %s", errUnsupported08, protocol08.KeyName(key))
}

// partition08 is where a partition's 0.8 requests go on this broker: its
// log and the byte offset up to which consumers may read, or an error code.
// A replicated partition is served by its leader only; a 0.7 partition
// (created by a produce) by the broker that holds it. l is nil for a 0.7
// partition that exists by configuration but has no log yet (empty).
type partition08 struct {
	l       *log.Log
	visible int64
	code    protocol.ErrorCode
}

func (cn *conn) partition08(topic string, partition int32) partition08 {
	if cn.replicatedTopic(topic) {
		p := cn.replica(topic, partition)
		if p == nil || !p.IsLeader() {
			return partition08{code: protocol.ErrNotLeaderForPartition}
		}
		return partition08{l: p.Log(), visible: min(p.HighWatermark(), p.Log().FlushedEnd())}
	}
	l, code := cn.lookup(topic, partition)
	if code != protocol.ErrNone {
		return partition08{code: protocol.ErrUnknownTopicOrPartition}
	}
	if l == nil {
		return partition08{}
	}
	return partition08{l: l, visible: l.FlushedEnd()}
}

// logical is the logical offset of byte offset b of l (a message boundary),
// and -1 when it cannot be read.
func (cn *conn) logical(l *log.Log, b int64) int64 {
	n, err := l.LogicalAt(b)
	if err != nil {
		cn.b.log.Warn("cannot map a byte offset to a logical one", "dir", l.Dir(), "offset", b, "err", err)
		return -1
	}
	return n
}

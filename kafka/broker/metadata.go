package broker

import (
	"net"
	"strconv"

	"github.com/kafkarepro/kafkarepro/kafka/log"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// handleMetadata serves a METADATA (protocol/metadata.go): which broker leads each partition of the topics
// asked, read from ZooKeeper (docs/PROTOCOL.md §10). A topic that is not replicated, or any topic on a broker
// without ZooKeeper, comes back as ErrUnknownTopicOrPartition: its clients route it the 0.7 way. A bad topic
// name is answered the same way and touches nothing.
func (cn *conn) handleMetadata(body []byte) error {
	req, err := protocol.DecodeMetadata(body)
	if err != nil {
		return err
	}
	resp := &protocol.MetadataResponse{}
	var valid []string
	for _, t := range req.Topics {
		if log.ValidateTopic(t) != nil {
			resp.Topics = append(resp.Topics, protocol.TopicMetadata{Error: protocol.ErrUnknownTopicOrPartition, Topic: t})
		} else {
			valid = append(valid, t)
		}
	}
	if cn.b.repl == nil {
		host, port, _ := net.SplitHostPort(cn.b.Addr().String())
		p, _ := strconv.Atoi(port)
		resp.Brokers = []protocol.BrokerAddr{{ID: int32(cn.b.cfg.BrokerID), Host: host, Port: int32(p)}}
		for _, t := range valid {
			resp.Topics = append(resp.Topics, protocol.TopicMetadata{Error: protocol.ErrUnknownTopicOrPartition, Topic: t})
		}
	} else if len(valid) > 0 || len(req.Topics) == 0 {
		m, err := cn.b.repl.Metadata(valid)
		if err != nil {
			cn.b.log.Warn("metadata from ZooKeeper failed", "remote", cn.remote, "err", err)
			cn.out = protocol.AppendResponseHeader(cn.out[:0], 0, protocol.ErrUnknown)
			return cn.send.write(cn.out, false)
		}
		m.Topics = append(resp.Topics, m.Topics...)
		resp = m
	}
	cn.out = protocol.AppendMetadataResponse(cn.out[:0], resp)
	return cn.send.write(cn.out, false)
}

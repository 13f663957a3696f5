package ours

import (
	"fmt"
	"strconv"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// What one message of the tests takes on the TCP stream between the
// adapter and the broker: with a link's bytes per second (package
// experiments/link), the most messages per second the link can carry.

// ProduceStreamBytes is what one message takes on the stream in a
// producer test of batch size b into topic: the magic-0 message (9 bytes of
// header and the payload, §3.1) and its share of the PRODUCE request's
// header (docs/PROTOCOL.md §4). How writes the sum out.
func ProduceStreamBytes(topic string, size, b int) (bytes float64, how string) {
	msg := message.SizeV0(size)
	req := len(protocol.ProduceRequest{Topic: topic}.AppendTo(nil))
	return float64(msg) + float64(req)/float64(b),
		fmt.Sprintf("%d + %d (PRODUCE header of topic %s) / %d", msg, req, topic, b)
}

// FetchStreamBytes is what one message takes on the stream in the
// consumer test: a FETCH answer of FetchSize bytes from a long log holds
// that many whole messages after its response header, and the start of
// the next message, which the next fetch sends again.
func FetchStreamBytes(size int) (bytes float64, how string) {
	msg := message.SizeV0(size)
	whole := FetchSize / msg
	return float64(FetchSize+protocol.ResponseHeaderSize) / float64(whole),
		fmt.Sprintf("(%d + %d) / %s: a %d-byte FETCH answer holds %s whole %d-byte messages",
			FetchSize, protocol.ResponseHeaderSize, strconv.Itoa(whole), FetchSize, strconv.Itoa(whole), msg)
}

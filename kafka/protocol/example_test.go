package protocol_test

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// A PRODUCE request (docs/PROTOCOL.md §4) carrying one magic-0 message
// "hello" to partition 0 of topic "clicks":
//
//	size = 2 + 2 + 6 + 4 + 4 + 14 = 32        00 00 00 20
//	request id 0 (PRODUCE)                    00 00
//	topic: int16 length 6, "clicks"           00 06 63 6c 69 63 6b 73
//	partition 0                               00 00 00 00
//	message set size 14                       00 00 00 0e
//	the message set, as it will lie in the log:
//	  N = 1 + 4 + 5 = 10, magic 0, CRC-32 IEEE of "hello" = 0x3610a686, "hello"
//
// The broker answers nothing (§5: the producer does not wait for
// acknowledgements).
func ExampleProduceRequest_AppendTo() {
	set := message.AppendV0(nil, []byte("hello"))
	req := protocol.ProduceRequest{Topic: "clicks", Partition: 0, Messages: set}
	b := req.AppendTo(nil)
	fmt.Print(hex.Dump(b))

	// The other side: ReadRequest takes the frame off, DecodeRequest parses
	// the body.
	id, body, _, _ := protocol.ReadRequest(bytes.NewReader(b), nil, 0)
	r, err := protocol.DecodeRequest(id, body)
	got := r.(protocol.ProduceRequest)
	fmt.Printf("%s: topic %q partition %d, %d bytes of messages, err %v\n",
		protocol.RequestName(id), got.Topic, got.Partition, len(got.Messages), err)
	// Output:
	// 00000000  00 00 00 20 00 00 00 06  63 6c 69 63 6b 73 00 00  |... ....clicks..|
	// 00000010  00 00 00 00 00 0e 00 00  00 0a 00 36 10 a6 86 68  |...........6...h|
	// 00000020  65 6c 6c 6f                                       |ello|
	// PRODUCE: topic "clicks" partition 0, 14 bytes of messages, err <nil>
}

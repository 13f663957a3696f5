package hotpath

import (
	"fmt"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// iterateMessages is the size of message/iterate's set: about one 300 KB
// fetch of 200-byte messages.
const iterateMessages = 1500

// newSet returns n messages of PayloadSize bytes in one set.
func newSet(n int) []byte {
	payload := make([]byte, PayloadSize)
	set := make([]byte, 0, n*wire)
	for range n {
		set = message.AppendV0(set, payload)
	}
	return set
}

// messageIterate walks a set as a consumer does after a fetch: each
// message found and its CRC checked (§3.3).
type messageIterate struct {
	inMemory
	set []byte
}

func openIterate(string) (Op, error) { return &messageIterate{set: newSet(iterateMessages)}, nil }

func (o *messageIterate) Do() error {
	it := message.NewIterator(o.set, 0)
	n := 0
	for it.Next() {
		if !it.Message().Valid() {
			return fmt.Errorf("hotpath: message/iterate: bad CRC at offset %d", it.Offset())
		}
		n++
	}
	if n != iterateMessages || it.Err() != nil {
		return fmt.Errorf("hotpath: message/iterate: %d messages, want %d (%v)", n, iterateMessages, it.Err())
	}
	return nil
}

// messageValidate is the broker's check of a produced set before it
// appends it (log.Log.Append): whole messages only, every CRC right, every
// compressed wrapper unpacked (none here: the §5 sets are magic 0).
type messageValidate struct {
	inMemory
	set []byte
}

func openValidate(string) (Op, error) { return &messageValidate{set: newSet(50)}, nil }

func (o *messageValidate) Do() error {
	n, err := message.ValidateWholeDeep(o.set)
	if err != nil || n != 50 {
		return fmt.Errorf("hotpath: message/validate: %d messages, want 50 (%v)", n, err)
	}
	return nil
}

// messageBuild is the producer's encoding of a batch of 50 into a reused
// buffer.
type messageBuild struct {
	inMemory
	payload, buf []byte
}

func openBuild(string) (Op, error) {
	return &messageBuild{payload: make([]byte, PayloadSize), buf: make([]byte, 0, 50*wire)}, nil
}

func (o *messageBuild) Do() error {
	o.buf = o.buf[:0]
	for range 50 {
		o.buf = message.AppendV0(o.buf, o.payload)
	}
	if len(o.buf) != 50*wire {
		return fmt.Errorf("hotpath: message/build: %d bytes, want %d", len(o.buf), 50*wire)
	}
	return nil
}

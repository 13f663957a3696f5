package message_test

import (
	"encoding/hex"
	"fmt"

	"github.com/kafkarepro/kafkarepro/kafka/message"
)

// One magic-0 message, the paper's format: 4 bytes of length N, the magic
// byte, the CRC-32 of the payload, the payload. N = 1 + 4 + 5 = 10 (0x0a);
// CRC-32 IEEE of "hello" = 0x3610a686; 4 + N = 14 bytes, 9 of them overhead
// (§5).
func ExampleAppendV0() {
	m := message.AppendV0(nil, []byte("hello"))
	fmt.Print(hex.Dump(m))
	msg := message.Message(m)
	fmt.Printf("size %d, magic %d, crc %08x, payload %q, valid %v\n", msg.Size(), msg.Magic(), msg.Checksum(), msg.Payload(), msg.Valid())
	// Output:
	// 00000000  00 00 00 0a 00 36 10 a6  86 68 65 6c 6c 6f        |.....6...hello|
	// size 14, magic 0, crc 3610a686, payload "hello", valid true
}

// One magic-1 message (Kafka 0.7's format): an attributes byte after the
// magic names the codec in its low two bits, here none. N = 1 + 1 + 4 + 5 =
// 11 (0x0b); the CRC is still that of the payload alone, 0x3610a686.
func ExampleAppendV1() {
	m := message.AppendV1(nil, message.CodecNone, []byte("hello"))
	fmt.Print(hex.Dump(m))
	msg := message.Message(m)
	fmt.Printf("size %d, magic %d, codec %v, crc %08x, payload %q\n", msg.Size(), msg.Magic(), msg.Codec(), msg.Checksum(), msg.Payload())
	// Output:
	// 00000000  00 00 00 0b 01 00 36 10  a6 86 68 65 6c 6c 6f     |......6...hello|
	// size 15, magic 1, codec none, crc 3610a686, payload "hello"
}

// A message set is messages back to back, with no header of its own. A
// message's offset is its byte position in the partition's log, and the
// next one starts at offset + 4 + N (§3.1: "message ids are increasing but
// not consecutive"). Here the set lies at byte 1000 of its log.
func ExampleIterator() {
	set := message.AppendV0(nil, []byte("a"))  // N = 1 + 4 + 1 = 6, CRC e8b7be43: 10 bytes at 1000
	set = message.AppendV0(set, []byte("bc"))  // N = 7, CRC c2a92b38: 11 bytes at 1000 + 10
	set = message.AppendV0(set, []byte("def")) // N = 8, CRC 0cc4e161: 12 bytes at 1010 + 11
	fmt.Print(hex.Dump(set))
	it := message.NewIterator(set, 1000)
	for it.Next() {
		fmt.Printf("offset %d next %d: %s\n", it.Offset(), it.NextOffset(), it.Message().Payload())
	}
	fmt.Println("consumed", it.Consumed(), "err", it.Err())
	// Output:
	// 00000000  00 00 00 06 00 e8 b7 be  43 61 00 00 00 07 00 c2  |........Ca......|
	// 00000010  a9 2b 38 62 63 00 00 00  08 00 0c c4 e1 61 64 65  |.+8bc........ade|
	// 00000020  66                                                |f|
	// offset 1000 next 1010: a
	// offset 1010 next 1021: bc
	// offset 1021 next 1033: def
	// consumed 33 err <nil>
}

// A fetch may end in the middle of a message: the iterator stops before it
// without an error, and the consumer fetches again from the next offset of
// the last whole message (docs/PROTOCOL.md §4).
func ExampleIterator_partialTail() {
	set := message.AppendV0(nil, []byte("a"))
	set = message.AppendV0(set, []byte("bc"))
	fetched := set[:15] // 10 bytes of "a", 5 of the 11 of "bc"
	it := message.NewIterator(fetched, 0)
	for it.Next() {
		fmt.Printf("offset %d next %d: %s\n", it.Offset(), it.NextOffset(), it.Message().Payload())
	}
	fmt.Println("err", it.Err(), "remaining", it.Remaining(), "fetch again from", it.Consumed())
	// Output:
	// offset 0 next 10: a
	// err <nil> remaining 5 fetch again from 10
}

// Validate checks every CRC (§3.3): a set with a damaged byte keeps the
// whole good messages before it.
func ExampleValidate() {
	set := message.AppendV0(nil, []byte("a"))
	set = message.AppendV0(set, []byte("bc"))
	set[19] = 'c' // the first payload byte of the second message: 10 + 9
	valid, n, err := message.Validate(set)
	fmt.Println(valid, n, err)
	// Output:
	// 10 1 message: CRC mismatch at offset 10 (stored c2a92b38)
}

// A compressed batch is one magic-1 wrapper whose payload is a compressed
// message set (docs/PROTOCOL.md §2). The deep iterator yields the inner
// messages with the log's offsets: each reports the wrapper's offset, and
// its next offset is the wrapper's own start until the last, whose next
// offset is past the wrapper, so a consumer that stops in the middle reads
// the whole wrapper again (§3.3: at least once). The wrapper's size depends
// on the compressor, so it is not printed.
func ExampleDeepIterator() {
	set := message.AppendV0(nil, []byte("plain")) // offset 0, 14 bytes
	inner := message.AppendV0(nil, []byte("x"))
	inner = message.AppendV0(inner, []byte("y"))
	wrapper, _ := message.Compress(message.CodecGzip, inner)
	set = append(set, wrapper...) // offset 14
	end := int64(len(set))
	it := message.NewDeepIterator(set, 0)
	for it.Next() {
		next := fmt.Sprint(it.NextOffset())
		if it.NextOffset() == end {
			next = "the end of the wrapper"
		}
		fmt.Printf("offset %d next %s: %s\n", it.Offset(), next, it.Message().Payload())
	}
	// Output:
	// offset 0 next 14: plain
	// offset 14 next 14: x
	// offset 14 next the end of the wrapper: y
}

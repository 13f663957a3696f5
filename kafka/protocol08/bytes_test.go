package protocol08

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// Fixed bytes, from the layouts of Kafka 0.8's protocol (docs/PROTOCOL.md
// §12; apache/kafka 0.8.2.2 core/src/main/scala/kafka/api/*.scala), with the
// arithmetic written out: they fail if our encoding drifts from 0.8's, which
// a round trip through our own encoder and decoder would not notice. CRCs
// are CRC-32 IEEE, e.g. python3 -c 'import zlib; print(hex(zlib.crc32(bytes.fromhex("0000000000016b0000000568656c6c6f"))))'.

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex in test: %v", err)
	}
	return b
}

// entryKHello is the 0.8 entry at logical offset 7 with key "k" and value "hello":
//
//	offset 7                                       00 00 00 00 00 00 00 07
//	size = 4 crc + 1 magic + 1 attributes
//	     + 4 + 1 key + 4 + 5 value = 20            00 00 00 14
//	CRC-32 of the 16 bytes from magic on           a4 cd ab 3a
//	magic 0, attributes 0 (no codec)               00 00
//	key: length 1, "k"                             00 00 00 01 6b
//	value: length 5, "hello"                       00 00 00 05 68 65 6c 6c 6f
//
// 12 + 20 = 32 bytes.
const entryKHello = "00 00 00 00 00 00 00 07  00 00 00 14  a4 cd ab 3a  00 00  00 00 00 01 6b  00 00 00 05 68 65 6c 6c 6f"

// entryNullHello is the same without a key: size 20 - 1 = 19, key length -1.
const entryNullHello = "00 00 00 00 00 00 00 00  00 00 00 13  87 a7 7a b2  00 00  ff ff ff ff  00 00 00 05 68 65 6c 6c 6f"

// keyedV1 is what the log stores for entryKHello (message/keyed.go):
//
//	N = 1 magic + 1 attributes + 4 crc + 4 + 1 key + 5 value = 16   00 00 00 10
//	magic 1, attributes 0x04 (keyed, codec none)                    01 04
//	CRC-32 of the payload 00 00 00 01 6b 68 65 6c 6c 6f             d7 fc cd c0
//	key length 1, "k", then "hello"                                 00 00 00 01 6b 68 65 6c 6c 6f
const keyedV1 = "00 00 00 10  01 04  d7 fc cd c0  00 00 00 01 6b  68 65 6c 6c 6f"

// plainV1 is what the log stores for entryNullHello: 0.7's plain magic-1
// message, N = 1 + 1 + 4 + 5 = 11, CRC-32 of "hello" = 0x3610a686.
const plainV1 = "00 00 00 0b  01 00  36 10 a6 86  68 65 6c 6c 6f"

func TestEntryBytes(t *testing.T) {
	if got, want := AppendEntry(nil, 7, []byte("k"), []byte("hello")), unhex(t, entryKHello); !bytes.Equal(got, want) {
		t.Errorf("AppendEntry(7, k, hello) =\n% x\nwant\n% x", got, want)
	}
	if got, want := AppendEntry(nil, 0, nil, []byte("hello")), unhex(t, entryNullHello); !bytes.Equal(got, want) {
		t.Errorf("AppendEntry(0, nil, hello) =\n% x\nwant\n% x", got, want)
	}
	var got []Entry
	if err := Entries(unhex(t, entryKHello+entryNullHello), false, func(e Entry) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Offset != 7 || string(got[0].Key) != "k" || string(got[0].Value) != "hello" ||
		got[1].Key != nil || string(got[1].Value) != "hello" {
		t.Errorf("Entries = %+v", got)
	}
	if EntryOverhead+1+5 != len(unhex(t, entryKHello)) {
		t.Errorf("EntryOverhead %d + 6 != %d", EntryOverhead, len(unhex(t, entryKHello)))
	}
}

// TestNextOffset walks the framing of fixed sets: entryNullHello (offset 0)
// then entryKHello (offset 7, 32 bytes) gives 7 + 1 = 8; the same with the
// last entry cut short by one byte gives 0 + 1 = 1; a set shorter than one
// entry's 12 bytes of offset and size gives none.
func TestNextOffset(t *testing.T) {
	both := unhex(t, entryNullHello+entryKHello)
	for _, c := range []struct {
		set  []byte
		next int64
		ok   bool
	}{
		{both, 8, true},
		{both[:len(both)-1], 1, true},
		{both[:11], 0, false},
		{nil, 0, false},
	} {
		if next, ok := NextOffset(c.set); next != c.next || ok != c.ok {
			t.Errorf("NextOffset(% x) = %d, %v; want %d, %v", c.set, next, ok, c.next, c.ok)
		}
	}
	bad := unhex(t, entryKHello)
	binary.BigEndian.PutUint32(bad[8:], 0xffffffff) // size -1
	if next, ok := NextOffset(bad); ok {
		t.Errorf("NextOffset with size -1 = %d, true; want none", next)
	}
}

func TestConvert08To07Bytes(t *testing.T) {
	out, n, err := Convert08To07(nil, unhex(t, entryKHello+entryNullHello))
	if err != nil || n != 2 {
		t.Fatalf("Convert08To07 = %d messages, %v", n, err)
	}
	if want := unhex(t, keyedV1+plainV1); !bytes.Equal(out, want) {
		t.Errorf("Convert08To07 =\n% x\nwant\n% x", out, want)
	}
	// And back: the log's messages as a fetch answer, numbered from 7.
	var a Appender
	a.Reset(7, 7, 1<<20)
	it := message.NewIterator(out, 0)
	for it.Next() {
		if _, err := a.Add(it.Message()); err != nil {
			t.Fatal(err)
		}
	}
	want := unhex(t, entryKHello+entryNullHello)
	copy(want[32:], []byte{0, 0, 0, 0, 0, 0, 0, 8}) // the second message is logical offset 8
	if !bytes.Equal(a.Set, want) {
		t.Errorf("Appender =\n% x\nwant\n% x", a.Set, want)
	}
}

// A compressed 0.8 message holds a whole 0.8 set; the log stores a 0.7
// wrapper of the same codec holding the converted messages.
func TestConvertWrapper(t *testing.T) {
	inner := unhex(t, entryKHello+entryNullHello)
	for _, codec := range []message.Codec{message.CodecGzip, message.CodecSnappy} {
		w, err := message.Compress(codec, inner) // a 0.7 wrapper; its payload is what 0.8 compresses
		if err != nil {
			t.Fatal(err)
		}
		set := appendEntry(nil, 1, byte(codec), nil, message.Message(w).Payload())
		out, n, err := Convert08To07(nil, set)
		if err != nil || n != 2 {
			t.Fatalf("%v: Convert08To07 = %d messages, %v", codec, n, err)
		}
		m := message.Message(out)
		if m.Codec() != codec || len(out) != m.Size() {
			t.Fatalf("%v: one %v wrapper of %d bytes, want one %v wrapper", codec, m.Codec(), len(out), codec)
		}
		got, err := message.Unpack(nil, m)
		if err != nil || !bytes.Equal(got, unhex(t, keyedV1+plainV1)) {
			t.Errorf("%v: wrapper holds\n% x (%v)\nwant\n% x", codec, got, err, unhex(t, keyedV1+plainV1))
		}
		// A fetch from the second inner message gets it alone, numbered.
		var a Appender
		a.Reset(11, 10, 1<<20)
		if _, err := a.Add(m); err != nil {
			t.Fatal(err)
		}
		var offs []int64
		Entries(a.Set, true, func(e Entry) error { offs = append(offs, e.Offset); return nil })
		if len(offs) != 1 || offs[0] != 11 || a.Next() != 12 {
			t.Errorf("%v: fetch from 11 of a wrapper holding 10, 11: offsets %v, next %d", codec, offs, a.Next())
		}
	}
}

func TestConvertRefusesBadMessages(t *testing.T) {
	good := unhex(t, entryKHello)
	for name, set := range map[string][]byte{
		"crc":                 func() []byte { b := bytes.Clone(good); b[31] ^= 1; return b }(),
		"magic 1":             func() []byte { b := bytes.Clone(good); b[16] = 1; return b }(),
		"key past the frame":  func() []byte { b := bytes.Clone(good); b[21] = 100; return fixCRC(b) }(),
		"truncated":           good[:30],
		"size below a header": func() []byte { b := bytes.Clone(good); b[11] = 3; return b }(),
	} {
		if _, _, err := Convert08To07(nil, set); !errors.Is(err, ErrCorruptMessage) {
			t.Errorf("%s: err %v, want ErrCorruptMessage", name, err)
		}
	}
}

func fixCRC(entry []byte) []byte {
	return recrc(entry)
}

// recrc recomputes the CRC of a one-entry set, so that a test can
// break what the CRC covers and still get past the CRC check.
func recrc(entry []byte) []byte {
	binary.BigEndian.PutUint32(entry[12:], crc32.ChecksumIEEE(entry[16:]))
	return entry
}

func TestHeaderBytes(t *testing.T) {
	// After the size and api_key 3 (Metadata):
	//   api_version 0            00 00
	//   correlation_id 42        00 00 00 2a
	//   client_id "kc"           00 02 6b 63
	//   body: 1 topic, "test"    00 00 00 01  00 04 74 65 73 74
	rest := unhex(t, "00 00  00 00 00 2a  00 02 6b 63  00 00 00 01 00 04 74 65 73 74")
	h, body, err := ParseHeader(KeyMetadata, rest)
	if err != nil || h.APIVersion != 0 || h.CorrelationID != 42 || h.ClientID != "kc" || h.ClientIDNull {
		t.Fatalf("ParseHeader = %+v, %v", h, err)
	}
	topics, err := DecodeMetadata(body)
	if err != nil || len(topics) != 1 || topics[0] != "test" {
		t.Errorf("DecodeMetadata = %q, %v", topics, err)
	}
	// client_id null (-1) is legal; a length of 32767 with two bytes after it is not.
	if h, _, err := ParseHeader(KeyMetadata, unhex(t, "00 00 00 00 00 01 ff ff")); err != nil || !h.ClientIDNull {
		t.Errorf("null client_id: %+v, %v", h, err)
	}
	for name, b := range map[string]string{
		"client_id 32767": "00 00 00 00 00 01 7f ff 6b 63",
		"client_id -2":    "00 00 00 00 00 01 ff fe",
		"no correlation":  "00 00 00 00",
		"nothing":         "",
	} {
		if _, _, err := ParseHeader(KeyMetadata, unhex(t, b)); !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func TestRequestBodies(t *testing.T) {
	// Produce v0: acks -1, timeout 1000 ms, 1 topic "test", 1 partition 0, a
	// 32-byte set (entryKHello).
	p, err := DecodeProduce(unhex(t, "ff ff  00 00 03 e8  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00 00 20"+entryKHello))
	if err != nil || p.Acks != -1 || p.TimeoutMs != 1000 || len(p.Parts) != 1 || p.Parts[0].Topic != "test" ||
		p.Parts[0].Partition != 0 || !bytes.Equal(p.Parts[0].Set, unhex(t, entryKHello)) {
		t.Errorf("DecodeProduce = %+v, %v", p, err)
	}
	// Fetch v0: replica -1, max_wait 500, min_bytes 1, "test" partition 0 from
	// offset 5, max_bytes 1 MiB = 0x100000.
	f, err := DecodeFetch(unhex(t, "ff ff ff ff  00 00 01 f4  00 00 00 01  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00 00 00 00 00 00 05  00 10 00 00"))
	if err != nil || f.ReplicaID != -1 || f.MaxWaitMs != 500 || f.MinBytes != 1 || len(f.Parts) != 1 ||
		f.Parts[0] != (FetchPart{"test", 0, 5, 1 << 20}) {
		t.Errorf("DecodeFetch = %+v, %v", f, err)
	}
	// Offsets v0: replica -1, "test" partition 0, time -2 (earliest), max 1.
	o, err := DecodeOffsets(unhex(t, "ff ff ff ff  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  ff ff ff ff ff ff ff fe  00 00 00 01"))
	if err != nil || len(o.Parts) != 1 || o.Parts[0] != (OffsetsPart{"test", 0, Earliest, 1}) {
		t.Errorf("DecodeOffsets = %+v, %v", o, err)
	}
	// OffsetCommit v0: group "g", "test" partition 0, offset 42, metadata "m".
	c, err := DecodeOffsetCommit(0, unhex(t, "00 01 67  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00 00 00 00 00 00 2a  00 01 6d"))
	if err != nil || c.Group != "g" || len(c.Parts) != 1 || c.Parts[0] != (CommitPart{"test", 0, 42, 0, "m"}) {
		t.Errorf("DecodeOffsetCommit v0 = %+v, %v", c, err)
	}
	// v1 adds generation -1 and consumer_id "" after the group, and a
	// timestamp (-1) before the metadata ("").
	c, err = DecodeOffsetCommit(1, unhex(t, "00 01 67  ff ff ff ff  00 00  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00 00 00 00 00 00 2a  ff ff ff ff ff ff ff ff  00 00"))
	if err != nil || c.Generation != -1 || len(c.Parts) != 1 || c.Parts[0] != (CommitPart{"test", 0, 42, -1, ""}) {
		t.Errorf("DecodeOffsetCommit v1 = %+v, %v", c, err)
	}
	// OffsetFetch: group "g", "test" partition 0.
	of, err := DecodeOffsetFetch(unhex(t, "00 01 67  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00"))
	if err != nil || of.Group != "g" || len(of.Parts) != 1 || of.Parts[0] != (TopicPartition{"test", 0}) {
		t.Errorf("DecodeOffsetFetch = %+v, %v", of, err)
	}
	if g, err := DecodeConsumerMetadata(unhex(t, "00 01 67")); err != nil || g != "g" {
		t.Errorf("DecodeConsumerMetadata = %q, %v", g, err)
	}
}

// Counts of -1 and 2^31-1, and a byte left over, are malformed.
func TestRequestBodiesRefuseBadCounts(t *testing.T) {
	for name, b := range map[string]string{
		"metadata count -1":         "ff ff ff ff",
		"metadata count 2^31-1":     "7f ff ff ff 00 04 74 65 73 74",
		"metadata trailing byte":    "00 00 00 00 00",
		"produce partitions 2^31-1": "00 01 00 00 03 e8 00 00 00 01 00 04 74 65 73 74 7f ff ff ff",
		"produce set size -1":       "00 01 00 00 03 e8 00 00 00 01 00 04 74 65 73 74 00 00 00 01 00 00 00 00 ff ff ff ff",
		"produce set past the body": "00 01 00 00 03 e8 00 00 00 01 00 04 74 65 73 74 00 00 00 01 00 00 00 00 00 00 00 20 00",
		"fetch topics -1":           "ff ff ff ff 00 00 01 f4 00 00 00 01 ff ff ff ff",
		"offsets topic null":        "ff ff ff ff 00 00 00 01 ff ff",
	} {
		var err error
		body := unhex(t, b)
		switch {
		case strings.HasPrefix(name, "metadata"):
			_, err = DecodeMetadata(body)
		case strings.HasPrefix(name, "produce"):
			_, err = DecodeProduce(body)
		case strings.HasPrefix(name, "fetch"):
			_, err = DecodeFetch(body)
		default:
			_, err = DecodeOffsets(body)
		}
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("%s: err %v, want ErrMalformed", name, err)
		}
	}
}

func TestResponseBytes(t *testing.T) {
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{{
		// size = 4 correlation + 2 error + 4 count + 8 × 6 = 58 = 0x3a
		"ApiVersions v0", AppendAPIVersionsResponse(nil, Header{APIKey: KeyAPIVersions, CorrelationID: 1}),
		"00 00 00 3a  00 00 00 01  00 00  00 00 00 08" +
			"  00 00 00 00 00 00  00 01 00 00 00 00  00 02 00 00 00 00  00 03 00 00 00 00" +
			"  00 08 00 00 00 01  00 09 00 00 00 01  00 0a 00 00 00 00  00 12 00 00 00 00",
	}, {
		// The same list under error 35 (0x23), UNSUPPORTED_VERSION, for ApiVersions v3.
		"ApiVersions v3", AppendAPIVersionsResponse(nil, Header{APIKey: KeyAPIVersions, APIVersion: 3, CorrelationID: 1}),
		"00 00 00 3a  00 00 00 01  00 23  00 00 00 08" +
			"  00 00 00 00 00 00  00 01 00 00 00 00  00 02 00 00 00 00  00 03 00 00 00 00" +
			"  00 08 00 00 00 01  00 09 00 00 00 01  00 0a 00 00 00 00  00 12 00 00 00 00",
	}, {
		// size = 4 correlation + 4 brokers + (4 id + 2+1 "h" + 4 port)
		//      + 4 topics + (2 error + 2+4 "test" + 4 partitions
		//        + (2 error + 4 partition + 4 leader + 4+4 replicas + 4+4 isr)) = 8 + 11 + 4 + 12 + 26 = 61 = 0x3d
		"Metadata v0", AppendMetadataResponse(nil, 2, []Broker{{0, "h", 9092}},
			[]TopicMetadata{{Topic: "test", Partitions: []PartitionMetadata{{Partition: 0, Leader: 0, Replicas: []int32{0}, ISR: []int32{0}}}}}),
		"00 00 00 3d  00 00 00 02  00 00 00 01  00 00 00 00 00 01 68 00 00 23 84" +
			"  00 00 00 01  00 00 00 04 74 65 73 74  00 00 00 01" +
			"  00 00  00 00 00 00  00 00 00 00  00 00 00 01 00 00 00 00  00 00 00 01 00 00 00 00",
	}, {
		// size = 4 + 4 topics + 6 "test" + 4 partitions + (4 + 2 + 8) = 32 = 0x20
		"Produce v0", AppendProduceResponse(nil, 3, []ProduceResult{{"test", 0, 0, 5}}),
		"00 00 00 20  00 00 00 03  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00  00 00 00 00 00 00 00 05",
	}, {
		// size = 4 + 4 + 6 + 4 + (4 partition + 2 error + 8 hw + 4 set size + 32 set) = 68 = 0x44
		"Fetch v0", AppendFetchResponse(nil, 4, []FetchResult{{"test", 0, 0, 8, unhex(t, entryKHello), 0}}),
		"00 00 00 44  00 00 00 04  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00  00 00 00 00 00 00 00 08  00 00 00 20" + entryKHello,
	}, {
		// size = 4 + 4 + 6 + 4 + (4 + 2 + 4 count + 2 × 8) = 44 = 0x2c
		"Offsets v0", AppendOffsetsResponse(nil, 5, []OffsetsResult{{"test", 0, 0, []int64{8, 0}}}),
		"00 00 00 2c  00 00 00 05  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00  00 00 00 02  00 00 00 00 00 00 00 08  00 00 00 00 00 00 00 00",
	}, {
		// size = 4 + 4 + 6 + 4 + (4 + 2) = 24 = 0x18
		"OffsetCommit", AppendOffsetCommitResponse(nil, 6, []PartitionError{{"test", 0, 0}}),
		"00 00 00 18  00 00 00 06  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00",
	}, {
		// size = 4 + 4 + 6 + 4 + (4 + 8 offset + 2+1 "m" + 2) = 35 = 0x23
		"OffsetFetch", AppendOffsetFetchResponse(nil, 7, []StoredOffset{{"test", 0, 42, "m", 0}}),
		"00 00 00 23  00 00 00 07  00 00 00 01 00 04 74 65 73 74  00 00 00 01  00 00 00 00  00 00 00 00 00 00 00 2a  00 01 6d  00 00",
	}, {
		// size = 4 + 2 error + 4 node + 2+1 "h" + 4 port = 17 = 0x11
		"ConsumerMetadata", AppendConsumerMetadataResponse(nil, 8, protocol.ErrNone, Broker{0, "h", 9092}),
		"00 00 00 11  00 00 00 08  00 00  00 00 00 00  00 01 68  00 00 23 84",
	}} {
		if want := unhex(t, c.want); !bytes.Equal(c.got, want) {
			t.Errorf("%s =\n% x\nwant\n% x", c.name, c.got, want)
		}
	}
}

// The first request of a connection decides its protocol (Is08).
func TestIs08(t *testing.T) {
	lai := protocol.LeaderAndISRRequest{ControllerID: 0, ControllerEpoch: 1, BrokerEpoch: 2}.AppendTo(nil)
	eeo := protocol.EpochEndOffsetRequest{ReplicaID: 0, Partitions: []protocol.EpochQuery{{Topic: "test", Partition: 0, Epoch: 1}}}.AppendTo(nil)
	produce07 := protocol.ProduceRequest{Topic: "test", Partition: 0, Messages: message.AppendV0(nil, []byte("x"))}.AppendTo(nil)
	for _, c := range []struct {
		name string
		id   int16
		rest []byte
		want bool
	}{
		{"ApiVersions v3", KeyAPIVersions, unhex(t, "00 03 00 00 00 01 00 00"), true},
		{"Metadata v0", KeyMetadata, unhex(t, "00 00 00 00 00 01 00 00 00 00 00 00"), true},
		{"Produce v0", KeyProduce, unhex(t, "00 00 00 00 00 01 00 00 00 01 00 00 03 e8 00 00 00 00"), true},
		{"ConsumerMetadata v0", KeyConsumerMetadata, unhex(t, "00 00 00 00 00 01 00 00 00 01 67"), true},
		{"OffsetFetch v1", KeyOffsetFetch, unhex(t, "00 01 00 00 00 01 00 00 00 01 67 00 00 00 00"), true},
		{"OffsetCommit v0", KeyOffsetCommit, unhex(t, "00 00 00 00 00 01 00 00 00 01 67 00 00 00 00"), true},
		{"0.7 PRODUCE", protocol.RequestProduce, produce07[6:], false},
		{"0.7 MULTIFETCH", protocol.RequestMultiFetch, unhex(t, "00 01 00 04 74 65 73 74 00 00 00 00 00 00 00 00 00 00 00 00 00 00 01 00"), false},
		{"LEADER_AND_ISR", protocol.RequestLeaderAndISR, lai[6:], false},
		{"EPOCH_END_OFFSET", protocol.RequestEpochEndOffset, eeo[6:], false},
	} {
		if got := Is08(c.id, c.rest); got != c.want {
			t.Errorf("%s: Is08 = %v, want %v", c.name, got, c.want)
		}
	}
}

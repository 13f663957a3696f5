package message_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/message"
	"github.com/kafkarepro/kafkarepro/kafka/message/messagetest"
)

// Every bad wrapper of messagetest fails Unpack with its reason, and fails
// ValidateWholeDeep (the broker's check, §3.3) naming the wrapper's offset
// in the set, while ValidateWhole, which does not unpack, passes it: its own
// CRC is right.
func TestUnpackRefusesBadWrappers(t *testing.T) {
	before := messagetest.PlainSet("a", 2)
	for _, c := range messagetest.BadWrappers() {
		if _, err := message.Unpack(nil, c.Message); !errors.Is(err, c.Want) {
			t.Errorf("%s: Unpack: %v, want %v", c.Name, err, c.Want)
		}
		set := append(bytes.Clone(before), c.Message...)
		if _, err := message.ValidateWhole(set); err != nil {
			t.Fatalf("%s: the fixture's own CRC must be right: %v", c.Name, err)
		}
		_, err := message.ValidateWholeDeep(set)
		if !errors.Is(err, c.Want) || !bytes.Contains([]byte(err.Error()), fmt.Appendf(nil, "wrapper at offset %d", len(before))) {
			t.Errorf("%s: ValidateWholeDeep: %v, want %v at offset %d", c.Name, err, c.Want, len(before))
		}
		t.Logf("%s: %v", c.Name, err)
	}
}

// Decompress leaves inner CRCs to the caller (dump-log-segments shows such
// messages); Unpack checks them.
func TestDecompressLeavesInnerCRCs(t *testing.T) {
	for _, c := range messagetest.BadWrappers() {
		if !errors.Is(c.Want, message.ErrChecksum) {
			continue
		}
		if _, err := message.Decompress(c.Message); err != nil {
			t.Errorf("%s: Decompress: %v", c.Name, err)
		}
	}
}

// ValidateWholeDeep agrees with ValidateWhole on sets without a bad wrapper.
func TestValidateWholeDeepGood(t *testing.T) {
	inner := messagetest.PlainSet("z", 3)
	gz, _ := message.Compress(message.CodecGzip, inner)
	sn, _ := message.Compress(message.CodecSnappy, inner)
	empty, _ := message.Compress(message.CodecGzip, nil)
	set := append(append(append(append(messagetest.PlainSet("a", 2), gz...), sn...), empty...), message.AppendV1(nil, message.CodecNone, []byte("v1"))...)
	for _, s := range [][]byte{nil, messagetest.PlainSet("b", 5), set} {
		n1, err1 := message.ValidateWhole(s)
		n2, err2 := message.ValidateWholeDeep(s)
		if err1 != nil || err2 != nil || n1 != n2 {
			t.Errorf("ValidateWhole %d %v, ValidateWholeDeep %d %v", n1, err1, n2, err2)
		}
	}
	// Framing, CRC and partial tails are refused as ValidateWhole refuses them.
	bad := messagetest.PlainSet("c", 3)
	bad[len(bad)-1] ^= 1
	for _, s := range [][]byte{bad, messagetest.PlainSet("d", 2)[:20], {0, 0, 0, 6, 9, 0, 0, 0, 0, 0}} {
		_, err1 := message.ValidateWhole(s)
		_, err2 := message.ValidateWholeDeep(s)
		if err1 == nil || err2 == nil || err1.Error() != err2.Error() {
			t.Errorf("ValidateWhole %v, ValidateWholeDeep %v", err1, err2)
		}
	}
}

// A consumer stream skips one bad message and goes on (SkipBad); a broken
// framing cannot be skipped.
func TestDeepIteratorSkipBad(t *testing.T) {
	good, _ := message.Compress(message.CodecSnappy, messagetest.PlainSet("w", 2))
	var set []byte
	set = message.AppendV0(set, []byte("a"))
	for _, c := range messagetest.BadWrappers()[:3] {
		set = append(set, c.Message...)
	}
	set = message.AppendV0(set, []byte("b"))
	set = append(set, good...)
	d := message.NewDeepIterator(set, 0)
	var got []string
	bad := 0
	for {
		if d.Next() {
			got = append(got, string(d.Message().Payload()))
			continue
		}
		if d.Err() == nil {
			break
		}
		bad++
		if !d.SkipBad() {
			t.Fatalf("SkipBad refused after %v", d.Err())
		}
	}
	if fmt.Sprint(got) != "[a b w0 w1]" || bad != 3 {
		t.Fatalf("got %v with %d bad, want [a b w0 w1] and 3", got, bad)
	}
	d = message.NewDeepIterator([]byte{0, 0, 0, 6, 9, 0, 0, 0, 0, 0}, 0)
	if d.Next() || d.Err() == nil || d.SkipBad() || d.Next() {
		t.Fatalf("a bad magic: err %v, yet SkipBad went on", d.Err())
	}
}

// The deep iterator unpacks into a buffer it keeps across Reset: once it
// has grown, walking gzip or snappy wrappers allocates nothing.
func TestDeepIteratorReusesBuffer(t *testing.T) {
	for _, codec := range []message.Codec{message.CodecGzip, message.CodecSnappy} {
		var set []byte
		for i := range 3 {
			set, _ = message.AppendCompressed(set, codec, messagetest.PlainSet(fmt.Sprint(i), 50))
		}
		var d message.DeepIterator
		n := 0
		allocs := testing.AllocsPerRun(100, func() {
			d.Reset(set, 0)
			for d.Next() {
				n++
			}
			if d.Err() != nil {
				t.Fatal(d.Err())
			}
		})
		if allocs != 0 && !raceEnabled || n != 101*150 {
			t.Errorf("%v: %.1f allocations per walk of 150 messages in 3 wrappers (%d messages seen)", codec, allocs, n)
		}
	}
}

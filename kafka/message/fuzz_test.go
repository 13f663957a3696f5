package message

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzMessageSet feeds arbitrary bytes to the parser: it must never panic,
// Validate and the Iterator must agree on where the good prefix ends, and
// every message it accepts must re-encode to the same bytes.
func FuzzMessageSet(f *testing.F) {
	f.Add(buildSet(3, 10))
	f.Add(AppendV1(AppendV0(nil, []byte("a")), CodecGzip, []byte("junk")))
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Add(fixtureSet(streamFixture()))
	f.Add(fixtureSet(rawBlockFixture()))
	f.Fuzz(func(t *testing.T, set []byte) {
		valid, count, err := Validate(set)
		if valid < 0 || valid > len(set) {
			t.Fatalf("valid %d of %d", valid, len(set))
		}
		it := NewIterator(set, 0)
		n := 0
		var re []byte
		for it.Next() && n < count {
			m := it.Message()
			keyOK := true
			switch {
			case m.Magic() == MagicV0:
				re = AppendV0(re[:0], m.Payload())
			case m.Keyed():
				k, v, err := m.KeyValue()
				keyOK = err == nil
				re = AppendKeyed(re[:0], k, v)
			default:
				re = AppendV1(re[:0], m.Codec(), m.Payload())
			}
			if a := m[LengthSize+1]; m.Magic() == MagicV1 && (a&^attrsKnown != 0 || a&AttrKeyed != 0 && a&codecMask != 0) {
				t.Fatalf("message %d has attributes %#02x beyond the codec's bits and the key's, or a key on a wrapper, yet iterated", n, a)
			}
			if m.Valid() && keyOK && !bytes.Equal(re, m) {
				t.Fatalf("message %d re-encodes differently", n)
			}
			n++
		}
		if n != count {
			t.Fatalf("iterator saw %d valid messages, Validate %d (err %v)", n, count, err)
		}
		d := NewDeepIterator(set, 0)
		for d.Next() {
			_ = d.Message().Payload()
		}
	})
}

// FuzzDecompress feeds arbitrary payloads to both decompressors (gzip, and
// snappy in both its stream format and raw blocks): they must never panic,
// never return more than MaxDecompressedSize, and whatever they accept must
// be a set of whole uncompressed messages that survives a round trip through
// our own compressor.
func FuzzDecompress(f *testing.F) {
	inner := fixtureInner()
	gz, _ := Compress(CodecGzip, inner)
	sn, _ := Compress(CodecSnappy, inner)
	f.Add(uint8(CodecGzip), Message(gz).Payload())
	f.Add(uint8(CodecSnappy), Message(sn).Payload())
	f.Add(uint8(CodecSnappy), rawBlockFixture())
	f.Add(uint8(CodecSnappy), streamFixture())
	f.Add(uint8(CodecSnappy), streamFixture()[:40])
	f.Add(uint8(CodecSnappy), binary.AppendUvarint(nil, 1<<31))
	f.Add(uint8(CodecGzip), []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff})
	f.Fuzz(func(t *testing.T, codec uint8, payload []byte) {
		c := Codec(codec % 3)
		w := AppendV1(nil, c, payload)
		if c != CodecNone { // the broker's check in pieces reaches Unpack's verdict
			_, uerr := Unpack(nil, Message(w))
			if cerr := checkWrapper(Message(w)); (cerr == nil) != (uerr == nil) {
				t.Fatalf("%v: checkWrapper %v, Unpack %v", c, cerr, uerr)
			}
		}
		set, err := Decompress(Message(w))
		if err != nil {
			return
		}
		if len(set) > MaxDecompressedSize {
			t.Fatalf("%v: %d bytes out, limit %d", c, len(set), MaxDecompressedSize)
		}
		if err := checkInner(set, false); err != nil {
			t.Fatalf("%v: accepted an inner set that fails its check: %v", c, err)
		}
		again, err := Compress(c, set)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decompress(Message(again))
		if err != nil || !bytes.Equal(back, set) {
			t.Fatalf("%v: our own round trip of %d bytes fails: %v", c, len(set), err)
		}
	})
}

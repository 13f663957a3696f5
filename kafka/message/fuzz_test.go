package message

import (
	"bytes"
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
			if m.Magic() == MagicV0 {
				re = AppendV0(re[:0], m.Payload())
			} else {
				re = AppendV1(re[:0], m.Codec(), m.Payload())
			}
			canonical := m.Magic() == MagicV0 || m[LengthSize+1]&^codecMask == 0
			if m.Valid() && canonical && !bytes.Equal(re, m) {
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

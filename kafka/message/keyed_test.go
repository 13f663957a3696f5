package message

import (
	"bytes"
	"errors"
	"hash/crc32"
	"testing"
)

// A keyed message (keyed.go) is 0.7's magic-1 frame with attribute bit 2:
//
//	N = 1 + 1 + 4 + 4 (key length) + 1 ("k") + 5 ("hello") = 16   00 00 00 10
//	magic 1, attributes 0x04                                       01 04
//	CRC-32 of 00 00 00 01 6b 68 65 6c 6c 6f = 0xd7fccdc0           d7 fc cd c0
//	key length 1, "k", "hello"                                     00 00 00 01 6b 68 65 6c 6c 6f
const keyedK = "00 00 00 10  01 04  d7 fc cd c0  00 00 00 01 6b  68 65 6c 6c 6f"

func TestKeyedBytes(t *testing.T) {
	m := AppendKeyed(nil, []byte("k"), []byte("hello"))
	if want := unhex(t, keyedK); !bytes.Equal(m, want) {
		t.Fatalf("AppendKeyed(k, hello) =\n% x\nwant\n% x", m, want)
	}
	if SizeKeyed([]byte("k"), []byte("hello")) != len(m) {
		t.Errorf("SizeKeyed = %d, want %d", SizeKeyed([]byte("k"), []byte("hello")), len(m))
	}
	k, v, err := Message(m).KeyValue()
	if err != nil || string(k) != "k" || string(v) != "hello" || !Message(m).Keyed() || !Message(m).Valid() {
		t.Errorf("KeyValue = %q, %q, %v (keyed %v, valid %v)", k, v, err, Message(m).Keyed(), Message(m).Valid())
	}
	if n, err := ValidateWholeDeep(m); n != 1 || err != nil {
		t.Errorf("ValidateWholeDeep = %d, %v", n, err)
	}
	// No key: 0.7's plain frame, 10 bytes of overhead; an empty key is a key.
	if plain := AppendKeyed(nil, nil, []byte("hello")); !bytes.Equal(plain, AppendV1(nil, CodecNone, []byte("hello"))) || Message(plain).Keyed() {
		t.Errorf("AppendKeyed(nil key) = % x, want the plain magic-1 message", plain)
	}
	if k, v, err := Message(AppendKeyed(nil, []byte{}, []byte("v"))).KeyValue(); err != nil || k == nil || len(k) != 0 || string(v) != "v" {
		t.Errorf("empty key: %q %q %v", k, v, err)
	}
}

// A key length that does not fit, or a key on a compressed wrapper, is refused as the log validates.
func TestKeyedCorrupt(t *testing.T) {
	withCRC := func(m []byte) []byte {
		byteOrder.PutUint32(m[6:], crc32.ChecksumIEEE(m[10:]))
		return m
	}
	long := unhex(t, keyedK)
	long[13] = 100 // key length 100 in a 10-byte payload
	if _, err := ValidateWholeDeep(withCRC(long)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("key past the payload: %v, want ErrCorrupt", err)
	}
	neg := unhex(t, keyedK)
	neg[10] = 0xff // key length -2^24…: negative
	if _, err := ValidateWholeDeep(withCRC(neg)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("negative key length: %v, want ErrCorrupt", err)
	}
	w, err := Compress(CodecGzip, AppendV0(nil, []byte("x")))
	if err != nil {
		t.Fatal(err)
	}
	w[5] |= AttrKeyed
	if _, err := ValidateWholeDeep(w); !errors.Is(err, ErrCorrupt) {
		t.Errorf("a keyed wrapper: %v, want ErrCorrupt", err)
	}
	other := unhex(t, keyedK)
	other[5] = 0x08 // a bit neither the codec's nor the key's
	if _, err := ValidateWholeDeep(other); !errors.Is(err, ErrCorrupt) {
		t.Errorf("attribute bit 3: %v, want ErrCorrupt", err)
	}
}

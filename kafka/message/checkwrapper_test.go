package message

import (
	"errors"
	"runtime"
	"testing"
)

// innerCheck, fed an inner set in pieces of any size, reaches checkInner's verdict on the whole set
// (checkInner(set, true): whole messages, none compressed, every CRC right), with the same sentinel.
func TestInnerCheckInPiecesAgreesWithCheckInner(t *testing.T) {
	good := fixtureInner()
	good = AppendV0(good, nil)            // an empty magic-0 message: a header and no payload
	good = AppendV1(good, CodecNone, nil) // an empty magic-1 one
	good = AppendV0(good, []byte("after the empty ones"))
	badCRC := AppendV0(nil, []byte("hello"))
	badCRC[5] ^= 0xff
	sets := map[string][]byte{
		"good":                good,
		"empty":               nil,
		"partial header":      good[:len(good)-len("after the empty ones")-7],
		"partial payload":     good[:len(good)-3],
		"bad CRC after good":  append(AppendV0(nil, []byte("first")), badCRC...),
		"nested wrapper":      append(AppendV0(nil, []byte("x")), AppendV1(nil, CodecGzip, []byte("y"))...),
		"unknown magic":       append(AppendV0(nil, []byte("x")), 0, 0, 0, 5, 7, 0, 0, 0, 0),
		"length too short":    {0, 0, 0, 4, 0, 0, 0, 0, 0},
		"v1 length too short": {0, 0, 0, 5, 1, 0, 0, 0, 0, 0},
	}
	for name, set := range sets {
		want := checkInner(set, true)
		for size := 1; size <= max(len(set), 1); size++ {
			var c innerCheck
			var got error
			for rest := set; len(rest) > 0 && got == nil; {
				n := min(size, len(rest))
				got = c.write(rest[:n])
				rest = rest[n:]
			}
			if got == nil {
				got = c.end()
			}
			if (got == nil) != (want == nil) || !sameSentinel(got, want) {
				t.Errorf("%s in pieces of %d: %v; checkInner: %v", name, size, got, want)
				break
			}
		}
	}
}

// sameSentinel reports whether two errors wrap the same one of the package's sentinels (or are both nil).
func sameSentinel(a, b error) bool {
	for _, s := range []error{ErrBadPayload, ErrChecksum, ErrNestedWrapper, ErrTooLarge} {
		if errors.Is(a, s) != errors.Is(b, s) {
			return false
		}
	}
	return true
}

// checkWrapper reaches Unpack's verdict on whole wrappers of both codecs and both snappy framings.
func TestCheckWrapperAgreesWithUnpack(t *testing.T) {
	inner := fixtureInner()
	gz, _ := Compress(CodecGzip, inner)
	sn, _ := Compress(CodecSnappy, inner)
	badInner := append(fixtureInner(), 0, 0, 0, 9)
	gzBad, _ := Compress(CodecGzip, badInner)
	snBad, _ := Compress(CodecSnappy, badInner)
	for name, m := range map[string]Message{
		"gzip": gz, "snappy stream": sn, "snappy raw block": AppendV1(nil, CodecSnappy, rawBlockFixture()),
		"snappy stream fixture": AppendV1(nil, CodecSnappy, streamFixture()),
		"gzip, partial inner":   gzBad, "snappy, partial inner": snBad,
		"snappy stream cut": AppendV1(nil, CodecSnappy, streamFixture()[:40]),
	} {
		_, want := Unpack(nil, m)
		got := checkWrapper(m)
		if (got == nil) != (want == nil) || !sameSentinel(got, want) {
			t.Errorf("%s: checkWrapper %v, Unpack %v", name, got, want)
		}
	}
}

// The point of checking in pieces: a wrapper that inflates to 60 MiB of valid messages is checked with a
// few tens of KiB, not 60 MiB (Unpack allocates the whole inner set).
func TestCheckWrapperHoldsNoInnerSet(t *testing.T) {
	big := make([]byte, 0, 60<<20)
	for m := AppendV0(nil, make([]byte, 1000)); len(big)+len(m) <= 60<<20; {
		big = append(big, m...)
	}
	w, err := Compress(CodecGzip, big)
	if err != nil {
		t.Fatal(err)
	}
	big = nil
	if err := checkWrapper(w); err != nil { // warms the pool
		t.Fatal(err)
	}
	allocated := testingAllocated(func() {
		if err := checkWrapper(w); err != nil {
			t.Fatal(err)
		}
	})
	if allocated > 1<<20 {
		t.Errorf("checking a %d-byte gzip wrapper of 60 MiB allocated %d bytes, want under 1 MiB", len(w), allocated)
	}
	t.Logf("a %d-byte gzip wrapper inflating to 60 MiB checked with %d bytes allocated", len(w), allocated)
}

// testingAllocated is the bytes the heap handed out while f ran.
func testingAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

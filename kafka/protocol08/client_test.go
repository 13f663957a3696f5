package protocol08

import (
	"bytes"
	"errors"
	"testing"
)

// Responses read one after another into one buffer: the buffer grows for
// the larger, is kept for the smaller, and a size outside [4, maxSize] is
// refused before anything is read into it.
func TestReadResponseInto(t *testing.T) {
	var stream bytes.Buffer
	// size 8 = correlation id 4 bytes + body "abcd"; size 6 = 4 + "xy".
	stream.Write([]byte{0, 0, 0, 8, 0, 0, 0, 7, 'a', 'b', 'c', 'd'})
	stream.Write([]byte{0, 0, 0, 6, 0, 0, 0, 9, 'x', 'y'})
	stream.Write([]byte{0, 0, 0, 3}) // below the correlation id's 4 bytes
	buf := make([]byte, 2)
	corr, body, buf, err := ReadResponseInto(&stream, buf, 100)
	if err != nil || corr != 7 || string(body) != "abcd" || cap(buf) < 8 {
		t.Fatalf("first: %d %q cap %d %v", corr, body, cap(buf), err)
	}
	first := &buf[0]
	corr, body, buf, err = ReadResponseInto(&stream, buf, 100)
	if err != nil || corr != 9 || string(body) != "xy" || &buf[0] != first {
		t.Fatalf("second: %d %q %v (buffer reused: %v)", corr, body, err, &buf[0] == first)
	}
	if _, _, _, err = ReadResponseInto(&stream, buf, 100); !errors.Is(err, ErrMalformed) {
		t.Errorf("size 3: %v, want ErrMalformed", err)
	}
	big := bytes.NewReader([]byte{0, 0, 1, 0}) // 256 > maxSize 100
	if _, _, _, err = ReadResponseInto(big, nil, 100); !errors.Is(err, ErrMalformed) {
		t.Errorf("size 256 over 100: %v, want ErrMalformed", err)
	}
}

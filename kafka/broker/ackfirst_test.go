package broker

import (
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/coalesce"
)

// ackFirst asks for the delayed acknowledgement before a wait once
// ackNowBytes have been read since the last, except before a sleep with a
// mark that follows one with a mark that bytes ended.
func TestAckFirst(t *testing.T) {
	for _, c := range []struct {
		name    string
		sockOK  bool
		unacked int
		mark    int
		byBytes bool
		want    bool
	}{
		{"ordinary read after 536 bytes", true, 536, coalesce.Off, false, true},
		{"ordinary read after 535 bytes", true, 535, coalesce.Off, false, false},
		{"ordinary read, coalescing off (zero state)", true, 4096, 0, false, true},
		{"ordinary read after a sleep bytes ended", true, 4096, coalesce.Off, true, true},
		{"sleep with a mark after one with none, or one the bound ended", true, 4096, 8192, false, true},
		{"sleep with a mark after one bytes ended", true, 8192, 8192, true, false},
		{"socket options cannot be set", false, 4096, coalesce.Off, false, false},
	} {
		co := coalescer{sockOK: c.sockOK, unacked: c.unacked, byBytes: c.byBytes}
		co.st = coalesce.State{Mark: c.mark}
		if got := co.ackFirst(); got != c.want {
			t.Errorf("%s: ackFirst() = %v, want %v", c.name, got, c.want)
		}
	}
}

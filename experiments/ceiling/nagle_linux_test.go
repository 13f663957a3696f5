package ceiling

import (
	"net"
	"testing"

	"github.com/kafkarepro/kafkarepro/internal/sockopt"
)

// TestSenderNagle: a producer probe's sender keeps Nagle's algorithm on, as
// our producer does where nothing is answered, and the consumer probe's
// keeps Go's TCP_NODELAY (dialSender).
func TestSenderNagle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tc := range []struct {
		job         sendJob
		wantNoDelay bool
	}{
		{sendJob{batch: 1}, false},
		{sendJob{batch: 50}, false},
		{sendJob{file: "messages.log"}, true},
	} {
		tc.job.addr = ln.Addr().String()
		c, err := dialSender(tc.job)
		if err != nil {
			t.Fatal(err)
		}
		noDelay, err := sockopt.NoDelay(c)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		if noDelay != tc.wantNoDelay {
			t.Errorf("job %+v: TCP_NODELAY %v, want %v", tc.job, noDelay, tc.wantNoDelay)
		}
	}
}

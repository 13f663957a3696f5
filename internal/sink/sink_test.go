package sink_test

import (
	"context"
	"net"
	"os"
	"testing"

	"github.com/kafkarepro/kafkarepro/internal/sink"
)

// TestMain lets this test binary be the sink it starts.
func TestMain(m *testing.M) {
	sink.ServeIfAsked()
	os.Exit(m.Run())
}

// TestStartWriteStop: a sink started from this binary takes 4 MiB on each
// of two connections and exits cleanly when stopped.
func TestStartWriteStop(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := sink.Start(context.Background(), self)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4<<20)
	for range 2 {
		c, err := net.Dial("tcp", p.Addr)
		if err != nil {
			t.Fatalf("dial the sink at %s: %v", p.Addr, err)
		}
		if _, err := c.Write(buf); err != nil {
			t.Fatalf("write 4 MiB to the sink: %v", err)
		}
		c.Close()
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("the sink did not exit cleanly: %v", err)
	}
}

// TestStartFailsOnANonSink: a binary that is no sink says no address, and
// Start says so rather than hang.
func TestStartFailsOnANonSink(t *testing.T) {
	if _, err := sink.Start(context.Background(), "/bin/true"); err == nil {
		t.Fatal("Start of /bin/true returned no error")
	}
}

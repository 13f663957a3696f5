package stomp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kafkarepro/kafkarepro/internal/localsvc"
)

// TestIntegration_ActiveMQ talks to a real ActiveMQ through scripts/activemq.sh: CONNECT, SEND with
// receipts, SUBSCRIBE with ack:auto and a prefetch, MESSAGE bodies holding NULs, and an ERROR frame.
func TestIntegration_ActiveMQ(t *testing.T) {
	srv := localsvc.StartT(t, "activemq")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	addr := fmt.Sprintf("127.0.0.1:%d", srv.Port)

	c, err := Dial(ctx, addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Version() != "1.2" || !strings.HasPrefix(c.Server(), "ActiveMQ/") {
		t.Fatalf("CONNECTED version %q server %q, want 1.2 and ActiveMQ/...", c.Version(), c.Server())
	}
	const n = 100
	body := []byte("a\x00b:c\nd") // NUL and STOMP specials in the body need content-length, not escaping
	send := Frame{Command: CmdSend, Headers: []Header{{HdrDestination, "/queue/stomp-it"}, {HdrPersistent, "true"}, {"x-key", "a:b\\c"}}, Body: body}
	for i := range n {
		if i == n-1 {
			send.Set(HdrReceipt, "last")
		}
		if err := c.Send(&send); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.AwaitReceipt("last"); err != nil {
		t.Fatal(err)
	}

	if err := c.Subscribe("0", "/queue/stomp-it", "auto", Header{HdrActiveMQPrefetch, "10"}); err != nil {
		t.Fatal(err)
	}
	_ = c.NetConn().SetReadDeadline(time.Now().Add(30 * time.Second))
	for i := range n {
		f, err := c.ReadFrame()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if f.Command != CmdMessage || !bytes.Equal(f.Body, body) {
			t.Fatalf("message %d: %s with body %q, want MESSAGE %q", i, f.Command, f.Body, body)
		}
		if v, _ := f.Get("x-key"); v != "a:b\\c" {
			t.Fatalf("message %d: x-key = %q, want the escaped header back as a:b\\c", i, v)
		}
		if s, _ := f.Get(HdrSubscription); s != "0" {
			t.Fatalf("message %d: subscription %q", i, s)
		}
	}
	if err := c.Unsubscribe("0"); err != nil {
		t.Fatal(err)
	}
	if err := c.Disconnect(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	// A frame ActiveMQ rejects: SEND without a destination is answered by ERROR.
	c, err = Dial(ctx, addr, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Send(&Frame{Command: CmdSend, Headers: []Header{{HdrReceipt, "x"}}, Body: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	_ = c.NetConn().SetReadDeadline(time.Now().Add(30 * time.Second))
	err = c.AwaitReceipt("x")
	var se *ServerError
	if !errors.As(err, &se) || !errors.Is(err, ErrServer) {
		t.Fatalf("SEND without destination: err = %v, want a *ServerError", err)
	}
	t.Logf("ActiveMQ's ERROR: %v", se)
}

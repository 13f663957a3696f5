package producer

import (
	"net"
	"testing"

	"github.com/kafkarepro/kafkarepro/internal/sockopt"
	"github.com/kafkarepro/kafkarepro/kafka/protocol"
)

// noDelay reads TCP_NODELAY off a producer's connection: true when Nagle's
// algorithm is off.
func noDelay(t *testing.T, c net.Conn) bool {
	t.Helper()
	on, err := sockopt.NoDelay(c.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	return on
}

// Config.NagleDisable: a connection that carries only unanswered produces
// keeps Nagle's algorithm on unless socket.nagle.disable is true, as 0.7's
// SyncProducer left it; one that waits for answers always turns it off.
func TestNagleIsOnOnlyWhereNothingIsAnswered(t *testing.T) {
	for _, tc := range []struct {
		props       map[string]string
		wantNoDelay bool
	}{
		{nil, false},
		{map[string]string{"socket.nagle.disable": "false"}, false},
		{map[string]string{"socket.nagle.disable": "true"}, true},
	} {
		cfg := DefaultConfig()
		cfg.BrokerList = brokerList(0, fakeBroker(t, nil))
		for k, v := range tc.props {
			if err := cfg.Set(k, v); err != nil {
				t.Fatal(err)
			}
		}
		p, err := NewSync(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Send("clicks", 0, []byte("a")); err != nil {
			t.Fatal(err)
		}
		if got := noDelay(t, (*p.pool.conns.Load())[0].conn); got != tc.wantNoDelay {
			t.Errorf("acks 0 with %v: TCP_NODELAY %v, want %v", tc.props, got, tc.wantNoDelay)
		}
		p.Close()
	}

	f := startFakeLeader(t, func(string, int) protocol.ErrorCode { return protocol.ErrNone })
	cfg := DefaultConfig()
	cfg.MetadataBrokerList = "7:" + f.ln.Addr().String()
	cfg.RequiredAcks = 1
	p, err := NewSync(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.Send("seven", 0, []byte("a")); err != nil {
		t.Fatal(err)
	}
	conns := p.leaders.all()
	if len(conns) == 0 {
		t.Fatal("acks 1: no leader connection")
	}
	for _, c := range conns {
		if !noDelay(t, c.conn) {
			t.Errorf("acks 1 to %s: TCP_NODELAY off, want on (answers are waited for)", c.broker.Addr())
		}
	}
}

func TestSetRefusesUnknownAndBadValues(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Set("socket.nagle.disable", "maybe"); err == nil {
		t.Error("socket.nagle.disable=maybe: no error")
	}
	if err := cfg.Set("socket.nagel.disable", "true"); err == nil {
		t.Error("an unknown key: no error")
	}
	if err := cfg.Set("socket.nagle.disable", "true"); err != nil || !cfg.NagleDisable {
		t.Errorf("socket.nagle.disable=true: %v, NagleDisable %v", err, cfg.NagleDisable)
	}
}

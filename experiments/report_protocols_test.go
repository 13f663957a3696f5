package experiments

import (
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/experiments/protocols"
)

func TestProtocolBound(t *testing.T) {
	for _, c := range []struct {
		p    protocols.Phase
		want string
	}{
		// 1,000,000 msg/s at 0.95 µs/msg of client CPU: 0.95 of a core, 0.5 for the broker.
		{protocols.Phase{MsgPerS: 1e6, ClientCPUus: 0.95, BrokerCPUus: 0.5, CPUMeasured: true}, "the client (client 0.95, broker 0.50 cores)"},
		{protocols.Phase{MsgPerS: 1e6, ClientCPUus: 0.3, BrokerCPUus: 0.92, CPUMeasured: true}, "the broker (client 0.30, broker 0.92 cores)"},
		// 0.95 + 0.9 = 1.85 of 2 cores ≥ 90% of the machine.
		{protocols.Phase{MsgPerS: 1e6, ClientCPUus: 0.95, BrokerCPUus: 0.9, CPUMeasured: true}, "the machine's 2 cores (client 0.95, broker 0.90 cores)"},
		// 200,000 msg/s at 2 µs and 1 µs: 0.4 and 0.2 of a core.
		{protocols.Phase{MsgPerS: 2e5, ClientCPUus: 2, BrokerCPUus: 1, CPUMeasured: true}, "neither side at a core (client 0.40, broker 0.20 cores)"},
		{protocols.Phase{MsgPerS: 2e5, ClientCPUus: 5}, "n/a (no schedstat)"},
	} {
		if got := protocolBound(c.p, 2); got != c.want {
			t.Errorf("protocolBound(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}

func TestProtocolsSection(t *testing.T) {
	if protocolsSection(nil) != "" {
		t.Error("a run without the experiment has a section")
	}
	ph := func(rate float64) *protocols.Phase { return &protocols.Phase{Messages: 1000, MsgPerS: rate} }
	r := &protocols.Result{Messages: 1000, Size: 200, Cores: 2, Paths: []protocols.Path{
		{Name: protocols.Name07, Topic: protocols.Topic07, Producer: ph(4e6), Consumer: ph(8e6)},
		{Name: protocols.NameFranz, Topic: protocols.Topic08, Producer: ph(1e6), Consumer: ph(2e6)},
		{Name: protocols.NameRaw08, Topic: protocols.Topic08, Consumer: ph(6e6)},
	}}
	s := protocolsSection(r)
	for _, want := range []string{
		"| " + protocols.NameFranz + ", consume | protocols-08 | 2,000,000 | n/a | n/a | n/a (no schedstat) |",
		"- " + protocols.NameRaw08 + " reading protocols-08: 75% of the paper's protocol's fetch rate.", // 6e6 / 8e6
		"- " + protocols.NameFranz + " reading protocols-08: 25% of the paper's protocol's fetch rate.", // 2e6 / 8e6
		"- " + protocols.NameFranz + " writing protocols-08: 25% of our 0.7 producer's rate.",           // 1e6 / 4e6
	} {
		if !strings.Contains(s, want) {
			t.Errorf("section lacks %q:\n%s", want, s)
		}
	}
	r.Error, r.Paths = "protocolspeed: exit status 1", nil
	if s := protocolsSection(r); !strings.Contains(s, "The experiment failed: protocolspeed: exit status 1") {
		t.Errorf("failed run's section: %s", s)
	}
}

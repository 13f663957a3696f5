package experiments

import (
	"fmt"
	"strings"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/ours"
	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/link"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
)

// Network is the path between the clients and the servers of a run
// (summary.json "network"): this machine's loopback, or the two-host link
// of package experiments/link, with what that link can carry of each of
// our tests (its ceiling, from its rate and the bytes each message takes).
type Network struct {
	Value string `json:"value"` // the NETWORK value: "loopback", "1gbit"
	Setup string `json:"setup"` // for tables: "loopback", "1 Gb/s link"
	// Hosts is the machine table's "machines" row: "one machine", or "two
	// network namespaces on one 2-core VM, 1 Gb/s shaped link".
	Hosts string `json:"hosts"`
	// Path says what joins clients and servers, names and addresses included.
	Path       string `json:"path"`
	BitsPerSec int64  `json:"bits_per_s,omitempty"`
	// Framing and StreamBytesPerSec: what TCP/IP adds on the link, and the
	// bytes of a TCP stream it carries per second one way.
	Framing           link.Framing `json:"framing"`
	StreamBytesPerSec float64      `json:"stream_bytes_per_s,omitempty"`
	Ceilings          []Ceiling    `json:"ceilings,omitempty"`
}

// Ceiling is the most one of our tests can move over the link: the stream
// bytes per second over the bytes one message takes on the stream.
type Ceiling struct {
	Test  string `json:"test"` // "producer" or "consumer"
	Batch int    `json:"batch,omitempty"`
	// StreamBytes is what one message takes on the TCP stream, and How says
	// how that is counted.
	StreamBytes float64 `json:"stream_bytes_per_message"`
	How         string  `json:"how"`
	MsgPerS     float64 `json:"msg_per_s"`
}

// LoopbackNetwork is the set-up of every run without a link.
func LoopbackNetwork() *Network {
	return &Network{Value: link.Loopback, Setup: link.Loopback, Hosts: "one machine",
		Path: "loopback (client and servers on this one machine)"}
}

// LinkNetwork describes a run over l on a machine of cores cores, with the
// ceilings of our producer tests (cfg's batch sizes) and consumer test.
func LinkNetwork(l *link.Link, cores int, cfg Config) *Network {
	n := &Network{Value: l.Spec.Name, Setup: l.Spec.String() + " link", Hosts: l.Describe(cores),
		Path: fmt.Sprintf("veth pair %s (servers, namespace %s) – %s (clients, namespace %s), tc tbf rate %s burst %d bytes on both ends",
			l.Server.Addr, l.Server.Netns, l.Client.Addr, l.Client.Netns, l.Spec.TC(), l.BurstBytes),
		BitsPerSec: l.Spec.BitsPerSec, Framing: l.Framing, StreamBytesPerSec: l.Framing.StreamBytesPerSec(l.Spec.BitsPerSec)}
	batches := cfg.Batches[compare.Ours]
	if len(batches) == 0 {
		batches = []int{1}
	}
	for _, b := range batches {
		bytes, how := ours.ProduceStreamBytes(ProducerTopic(b), cfg.MessageSize, b)
		n.Ceilings = append(n.Ceilings, Ceiling{Test: "producer", Batch: b, StreamBytes: bytes, How: how, MsgPerS: l.Capacity(bytes)})
	}
	bytes, how := ours.FetchStreamBytes(cfg.MessageSize)
	n.Ceilings = append(n.Ceilings, Ceiling{Test: "consumer", StreamBytes: bytes, How: how, MsgPerS: l.Capacity(bytes)})
	return n
}

// network is the run's path (loopback for runs made before it was recorded).
func (s *Summary) network() *Network {
	if s.Network == nil {
		return LoopbackNetwork()
	}
	return s.Network
}

// titleSuffix names the path in a figure's title: ", over a 1 Gb/s link".
func (n *Network) titleSuffix() string {
	if !n.IsLink() {
		return ", loopback"
	}
	return ", over a " + n.Setup
}

// IsLink reports whether the run went over a shaped link.
func (n *Network) IsLink() bool { return n.BitsPerSec > 0 }

// Ceiling is the link's ceiling for one of our tests.
func (n *Network) Ceiling(test string, batch int) (Ceiling, bool) {
	for _, c := range n.Ceilings {
		if c.Test == test && (test != "producer" || c.Batch == batch) {
			return c, true
		}
	}
	return Ceiling{}, false
}

// Limits are the lines figures 4 and 5 draw for the link: the ceiling of
// each of our producer tests, or of our consumer.
func (n *Network) Limits(test string) []Limit {
	if n == nil || !n.IsLink() {
		return nil
	}
	var out []Limit
	for _, c := range n.Ceilings {
		if c.Test != test {
			continue
		}
		what := "consumer"
		if test == "producer" {
			what = fmt.Sprintf("batch %d", c.Batch)
		}
		out = append(out, Limit{MsgPerS: c.MsgPerS,
			Label: fmt.Sprintf("%s carries %s msg/s (%s)", n.Setup, figure.Commas(c.MsgPerS), what),
			Note:  fmt.Sprintf("%s: %s msg/s of %.2f stream bytes a message (%s)", what, figure.Commas(c.MsgPerS), c.StreamBytes, c.How)})
	}
	if len(out) > 0 {
		out[0].Note = fmt.Sprintf("Dotted: what the %s carries of our messages, %s bytes of TCP stream per second (%s), %s",
			n.Setup, figure.Commas(n.StreamBytesPerSec), framingText(n), out[0].Note)
	}
	return out
}

// framingText is the arithmetic of the link's stream rate.
func framingText(n *Network) string {
	f := n.Framing
	ts := ""
	if f.Timestamps {
		ts = fmt.Sprintf(" + %d TCP timestamps", link.TimestampOption)
	}
	return fmt.Sprintf("%s bytes/s × %d / %d: each full segment carries %d stream bytes%s + %d TCP + %d IPv4 + %d Ethernet header = %d bytes on the link, MTU %d",
		figure.Commas(float64(n.BitsPerSec)/8), f.SegmentPayload(), f.FrameBytes(), f.SegmentPayload(), ts,
		link.TCPHeader, link.IPv4Header, link.EthernetHeader, f.FrameBytes(), f.MTU)
}

// networkReason is the first reason in "Why the numbers differ".
func networkReason(s *Summary) string {
	n := s.network()
	if !n.IsLink() {
		return fmt.Sprintf("- **One machine, loopback.** The paper used two machines and a 1 Gb link; its batch-50 producer \"nearly saturated\" that link (400,000 × 209 bytes ≈ 84 MB/s ≈ 0.67 Gb/s of payload plus TCP). Here client and server share one machine over loopback: no link cap, but client and broker compete for the same %d cores (the paper had 8 cores on each side), and loopback runs the receiver's TCP work inside the sender's write, so a batch-1 producer pays both sides' system-call cost on every message. `NETWORK=1gbit` runs the same experiments over a shaped link between two namespaces.\n", s.Machine.Cores)
	}
	return fmt.Sprintf("- **Two namespaces, one machine.** As in the paper, the servers and the clients are two hosts joined by a %s (%s); unlike the paper, both hosts share this machine's %d cores, so a test the link does not bound is bound by CPU shared with the other side. The link's ceilings are in \"The link\" below.\n", n.Setup, n.Hosts, s.Machine.Cores)
}

// writeNetwork writes REPORT.md's sections on the link (when there is one)
// and on which claims hold over which path.
func writeNetwork(w func(string, ...any), s *Summary) {
	n := s.network()
	if n.IsLink() {
		w("\n## The link\n\n")
		w("Servers ran on one host and clients on the other: %s. What the link carries of a TCP stream, one way: %s bytes/s (%s).\n\n",
			n.Path, figure.Commas(n.StreamBytesPerSec), framingText(n))
		w("| test | stream bytes per message | link ceiling msg/s | this run msg/s | of the ceiling |\n|---|---|---|---|---|\n")
		for _, r := range s.Systems {
			for _, t := range r.Tests() {
				c, ok := n.Ceiling(t.Test, t.Batch)
				if r.Name != compare.Ours || !ok {
					mb := t.MsgPerS * float64(s.MessageSize)
					w("| %s | more than %d (its protocol's framing is not counted) | — | %s | its payload alone is %.1f%% of the link |\n",
						testName(t), s.MessageSize, figure.Commas(t.MsgPerS), 100*mb/n.StreamBytesPerSec)
					continue
				}
				w("| %s | %.2f = %s | %s | %s | %.1f%% |\n", testName(t), c.StreamBytes, c.How, figure.Commas(c.MsgPerS), figure.Commas(t.MsgPerS), 100*t.MsgPerS/c.MsgPerS)
			}
		}
		w("\nThe producer's ceiling counts client → server bytes only (the broker sends nothing back to a producer but TCP acknowledgements, which go the other way on their own shaped end); the consumer's counts server → client bytes (its FETCH requests go the other way).\n")
	}
	writeClaimsByPath(w, s)
}

// testName is "kafka producer (batch 50)" or "kafka consumer".
func testName(t measure.Result) string {
	if t.Test == "producer" {
		return fmt.Sprintf("%s producer (batch %d)", t.System, t.Batch)
	}
	return t.System + " " + t.Test
}

// boundCell is the ratio table's "bounded by" cell: the loopback probes'
// ceilings (ceilingNote), and over a link the link's ceilings for our
// tests of the ratio first, since those bound what the run measured.
func boundCell(s *Summary, r RatioResult) string {
	probes := ceilingNote(s, r.Name)
	n := s.network()
	if !n.IsLink() {
		return probes
	}
	var parts []string
	for _, m := range []Measured{r.Of, r.Over} {
		test := strings.TrimSuffix(m.Test, " (client send)")
		if c, ok := n.Ceiling(test, m.Batch); ok && m.System == compare.Ours && m.Value > 0 {
			what := test
			if test == "producer" {
				what = fmt.Sprintf("batch-%d", m.Batch)
			}
			parts = append(parts, fmt.Sprintf("%s link ceiling %s msg/s, ours %.0f%% of it", what, figure.Commas(c.MsgPerS), 100*m.Value/c.MsgPerS))
		}
	}
	cell := strings.Join(parts, "; ")
	if probes != "" {
		if cell != "" {
			cell += "; "
		}
		cell += "loopback probes (not this run's path): " + probes
	}
	return cell
}

// probeCeiling is the loopback ceiling probe (ceiling_report.go) of this
// run for one test of ours, if it ran.
func probeCeiling(s *Summary, m Measured) (float64, bool) {
	test := strings.TrimSuffix(m.Test, " (client send)")
	for _, r := range s.Ceiling {
		if t, ok := ceilingTests[r.Probe]; ok && t.test == test && t.batch == m.Batch && r.MsgPerS > 0 {
			return r.MsgPerS, true
		}
	}
	return 0, false
}

// bound says what bounded one side of a ratio in run s: for a test of ours,
// its share of the link's ceiling (over a link) and of the loopback ceiling
// the probe measured in the same run; for another system, the share of the
// link its payload alone takes.
func bound(s *Summary, m Measured) string {
	n := s.network()
	what := m.System + " " + m.Test
	if m.Batch > 0 {
		what = fmt.Sprintf("%s %s batch %d", m.System, m.Test, m.Batch)
	}
	var parts []string
	if m.System == compare.Ours {
		test, send := strings.CutSuffix(m.Test, " (client send)")
		if c, ok := n.Ceiling(test, m.Batch); ok && n.IsLink() {
			f := m.Value / c.MsgPerS
			switch {
			case send && f > 1:
				parts = append(parts, fmt.Sprintf("%.0f%% of the link's %s msg/s, the link (the client's clock stops when its last write returns; socket buffers and tbf's queue still hold the last bytes)", 100*f, figure.Commas(c.MsgPerS)))
			case f >= 0.9:
				parts = append(parts, fmt.Sprintf("%.0f%% of the link's %s msg/s: the link", 100*f, figure.Commas(c.MsgPerS)))
			default:
				parts = append(parts, fmt.Sprintf("%.0f%% of the link's %s msg/s: not the link", 100*f, figure.Commas(c.MsgPerS)))
			}
		}
		if p, ok := probeCeiling(s, m); ok {
			parts = append(parts, fmt.Sprintf("%.0f%% of the loopback ceiling probe's %s msg/s", 100*m.Value/p, figure.Commas(p)))
		}
		if len(parts) == 0 && !n.IsLink() {
			parts = append(parts, "no link: its own CPU work per message on the shared cores (no ceiling probe in this run)")
		}
	} else if n.IsLink() {
		parts = append(parts, fmt.Sprintf("payload %.1f%% of the link: not the link, its own cost per message", 100*m.Value*float64(s.MessageSize)/n.StreamBytesPerSec))
	} else {
		parts = append(parts, "no link: its own CPU work per message on the shared cores")
	}
	return what + ": " + strings.Join(parts, "; ")
}

// writeClaimsByPath writes, for every ratio of the paper, whether it holds
// in this run and in the run beside it, and what bounded each side here.
func writeClaimsByPath(w func(string, ...any), s *Summary) {
	n := s.network()
	w("\n## Which claims hold over loopback and which over the link\n\n")
	head := "| ratio | paper's least value | " + n.Setup + " (this run) |"
	sep := "|---|---|---|"
	var other map[string]RatioResult
	if s.Beside != nil {
		head += " " + s.Beside.Setup + " (run " + s.Beside.Run + ") |"
		sep += "---|"
		other = map[string]RatioResult{}
		for _, r := range s.Beside.Ratios {
			other[r.Name] = r
		}
	}
	w("%s what bounded each side here (ceilings of each path, this run) |\n%s---|\n", head, sep)
	verdict := func(r RatioResult) string {
		switch {
		case r.PaperMin == 0:
			return fmt.Sprintf("%.2f", r.Value)
		case r.Holds:
			return fmt.Sprintf("%.2f, holds", r.Value)
		}
		return fmt.Sprintf("%.2f, **does not hold**", r.Value)
	}
	for _, r := range s.Ratios {
		if r.PaperMin == 0 && r.Of.Test == "storage" {
			continue
		}
		row := fmt.Sprintf("| %s | %.2g | %s |", r.Name, r.PaperMin, verdict(r))
		if other != nil {
			if o, ok := other[r.Name]; ok {
				row += " " + verdict(o) + " |"
			} else {
				row += " not measured |"
			}
		}
		why := "bytes on disk: the same whatever the path"
		if r.Of.Test != "storage" {
			why = bound(s, r.Of) + " — " + bound(s, r.Over)
			if most := linkMost(n, r); most > 0 {
				why += fmt.Sprintf("; on this link the ratio can be at most %.2f", most)
			}
		}
		w("%s %s |\n", row, why)
	}
	if s.Beside == nil {
		w("\n(No run over the other path was set beside this one: `reproduce --replot DIR --beside OTHER` adds its column.)\n")
	}
	if !n.IsLink() {
		w("\nOn loopback no test is bound by a link: each is bound by its own CPU work per message on cores it shares with the other side, and the receiver's TCP work runs inside the sender's write. So a batch-1 producer's rate is set by this machine's cost of a system call, and a claim that compares it with another system (\"orders of magnitude above ActiveMQ\") depends on that cost as much as on the design.\n")
		return
	}
	w("\nOver the link, a test of ours that reaches 90%% of its ceiling is bound by the link, as the paper's batch-50 producer was (\"almost saturated the 1Gb link\"). A ratio between two such tests is the ratio of their ceilings whatever the CPU cost of each, and a ratio against a system far below the link measures that system's own cost per message against the link.")
	if k, ok := find(s.Systems, compare.Ours); ok {
		c1, ok1 := n.Ceiling("producer", 1)
		c50, ok50 := n.Ceiling("producer", 50)
		if r1 := k.ProducerRate(1); ok1 && ok50 && r1 >= 0.9*c1.MsgPerS {
			w(" Our batch-1 producer reached %.0f%% of its ceiling here, where the paper's (50,000 msg/s) was far below its link: so batch 50 can gain at most %.2f× over batch 1 on this link (%s / %s msg/s), and the paper's \"almost an order of magnitude\" cannot show over it: that claim rests on a batch-1 producer bound by its cost per request, not by the link.",
				100*r1/c1.MsgPerS, c50.MsgPerS/r1, figure.Commas(c50.MsgPerS), figure.Commas(r1))
		}
	}
	w("\n")
}

// linkMost is the largest value ratio r could have taken on the link with
// its second side as measured, when its first side is one of our tests:
// that test's ceiling over the second side's rate.
func linkMost(n *Network, r RatioResult) float64 {
	if !n.IsLink() || r.Of.System != compare.Ours || r.Of.Test != "producer" && r.Of.Test != "consumer" {
		return 0
	}
	c, ok := n.Ceiling(r.Of.Test, r.Of.Batch)
	if !ok || r.Over.Value <= 0 {
		return 0
	}
	return c.MsgPerS / r.Over.Value
}

// Beside is a run over the other path, for REPORT.md's comparison.
type Beside struct {
	Run    string        `json:"run"`
	Setup  string        `json:"setup"`
	Hosts  string        `json:"hosts"`
	Ratios []RatioResult `json:"ratios"`
}

// BesideOf summarises a run to set beside another.
func BesideOf(s *Summary) *Beside {
	n := s.network()
	return &Beside{Run: s.Run, Setup: n.Setup, Hosts: n.Hosts, Ratios: s.Ratios}
}

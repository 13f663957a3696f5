package experiments

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/link"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
	"github.com/kafkarepro/kafkarepro/paper"
)

// testLink is the paper's 1 Gb/s link as Create describes it on a veth.
func testLink() *link.Link {
	s, c := link.Names("7")
	return &link.Link{Spec: link.Spec{Name: "1gbit", BitsPerSec: 1e9}, ID: "7", Server: s, Client: c,
		Framing: link.Framing{MTU: 1500, Timestamps: true}, BurstBytes: 131000}
}

// A run's link and its ceilings: 119,550,858.65 stream bytes/s over 232
// (batch 1), 209.48 (batch 50) and 307,206 / 1,469 (consumer) bytes a message.
func TestLinkNetworkCeilings(t *testing.T) {
	n := LinkNetwork(testLink(), 2, DefaultConfig())
	if n.Setup != "1 Gb/s link" || n.Hosts != "two network namespaces on one 2-core VM, 1 Gb/s shaped link" || !n.IsLink() ||
		!strings.Contains(n.Path, "tc tbf rate 1000000000bit burst 131000") {
		t.Errorf("network = %+v", n)
	}
	for _, c := range []struct {
		test  string
		batch int
		want  float64
	}{
		{"producer", 1, 119_550_858.65 / 232},
		{"producer", 50, 119_550_858.65 / 209.48},
		{"consumer", 0, 119_550_858.65 * 1469 / 307_206},
	} {
		got, ok := n.Ceiling(c.test, c.batch)
		if !ok || math.Abs(got.MsgPerS-c.want) > 0.01 {
			t.Errorf("%s batch %d: ceiling %+v, want %.2f msg/s", c.test, c.batch, got, c.want)
		}
	}
	if l := n.Limits("producer"); len(l) != 2 || !strings.Contains(l[0].Note, "1448 / 1514") || !strings.Contains(l[1].Label, "570,703") {
		t.Errorf("producer limits = %+v", l)
	}
	if LoopbackNetwork().IsLink() || LoopbackNetwork().Limits("producer") != nil {
		t.Error("loopback has a link")
	}
}

// REPORT.md and the figures of a run over the link say so; a run without
// a recorded network (older runs) reads as loopback.
func TestReportStatesNetwork(t *testing.T) {
	fig, err := paper.Load()
	if err != nil {
		t.Fatal(err)
	}
	mk := func(b int, rate float64) measure.Result {
		test := "producer"
		if b == 0 {
			test = "consumer"
		}
		return measure.Result{System: compare.Ours, Test: test, Batch: b, Msgs: 1000, MBSent: 0.2, Seconds: 1000 / rate, MsgPerS: rate,
			Series: []measure.Point{{Seconds: 0.25, MB: 0.1, MsgPerS: rate}, {Seconds: 0.5, MB: 0.2, MsgPerS: rate}}}
	}
	kafka := SystemReport{Name: compare.Ours, Settings: map[string]string{},
		Producer: []measure.Result{mk(1, 502_424), mk(50, 570_644)}}
	cons := mk(0, 571_042)
	kafka.Consumer = &cons
	amq := SystemReport{Name: "activemq", Settings: map[string]string{},
		Producer: []measure.Result{{System: "activemq", Test: "producer", Batch: 1, Msgs: 1000, MBSent: 0.2, Seconds: 0.07, MsgPerS: 14_000}}}
	cfg := DefaultConfig()
	cfg.Messages = 1000
	s := NewSummary(cfg, []SystemReport{kafka, amq}, fig)
	s.Machine.Cores = 2
	s.Network = LinkNetwork(testLink(), 2, cfg)
	AttachCeiling(s, []CeilingRow{{Probe: "producer-batch50", MsgPerS: 2_900_000, Seconds: 1}})
	s.Beside = &Beside{Run: "reference", Setup: "loopback", Ratios: []RatioResult{{Name: "kafka_producer_b50_over_b1", Value: 5.84, PaperMin: 8}}}
	dir := t.TempDir()
	if err := Write(dir, s, fig); err != nil {
		t.Fatal(err)
	}
	report, _ := os.ReadFile(filepath.Join(dir, "REPORT.md"))
	for _, want := range []string{
		"| machines | two Linux machines, one broker machine and one client machine | two network namespaces on one 2-core VM, 1 Gb/s shaped link |",
		"| holds here | bounded by (this run's ceiling) | measured over |",
		"| 1 Gb/s link |",
		"| kafka producer (batch 50) | 209.48 = 209 + 24 (PRODUCE header of topic perf-b50) / 50 | 570,703 | 570,644 | 100.0% |",
		"| kafka producer (batch 1) | 232.00 = 209 + 23 (PRODUCE header of topic perf-b1) / 1 | 515,305 | 502,424 | 97.5% |",
		"| activemq producer (batch 1) | more than 200",
		"| kafka_producer_b50_over_b1 | 8 | 1.14, **does not hold** | 5.84, **does not hold** |",
		"on this link the ratio can be at most 1.14",
		"kafka_producer_b50_over_activemq | 10 | 40.76, holds | not measured | kafka producer batch 50: 100% of the link's 570,703 msg/s: the link; 20% of the loopback ceiling probe's 2,900,000 msg/s — activemq producer batch 1: payload 2.3% of the link: not the link, its own cost per message",
		"**Two namespaces, one machine.**",
	} {
		if !strings.Contains(string(report), want) {
			t.Errorf("REPORT.md lacks %q", want)
		}
	}
	checkPNG(t, filepath.Join(dir, "fig4_producer.png"))

	s.Network, s.Beside, s.Ceiling = nil, nil, nil
	if err := WriteReport(filepath.Join(dir, "loopback.md"), s, fig); err != nil {
		t.Fatal(err)
	}
	report, _ = os.ReadFile(filepath.Join(dir, "loopback.md"))
	for _, want := range []string{"| machines | two Linux machines, one broker machine and one client machine | one machine |",
		"**One machine, loopback.**", "| loopback |", "no link: its own CPU work per message"} {
		if !strings.Contains(string(report), want) {
			t.Errorf("loopback REPORT.md lacks %q", want)
		}
	}
	if strings.Contains(string(report), "## The link") {
		t.Error("a loopback report has a link section")
	}
}

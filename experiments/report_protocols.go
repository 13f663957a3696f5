package experiments

import (
	"fmt"
	"strings"

	"github.com/kafkarepro/kafkarepro/experiments/figure"
	"github.com/kafkarepro/kafkarepro/experiments/protocols"
)

// busy is the share of a core above which a side counts as the one that
// bounded a phase: it was running for (nearly) the whole phase.
const busy = 0.9

// protocolBound says which side kept a core busy through phase p on a machine of
// cores cores: the client, the broker, both (the machine), or neither (each
// waited on the other or on the kernel), with the cores each kept busy.
func protocolBound(p protocols.Phase, cores int) string {
	if !p.CPUMeasured {
		return "n/a (no schedstat)"
	}
	c, b := p.ClientCores(), p.BrokerCores()
	nums := fmt.Sprintf("client %.2f, broker %.2f cores", c, b)
	switch {
	case cores > 0 && c+b >= busy*float64(cores):
		return fmt.Sprintf("the machine's %d cores (%s)", cores, nums)
	case c >= busy:
		return "the client (" + nums + ")"
	case b >= busy:
		return "the broker (" + nums + ")"
	default:
		return "neither side at a core (" + nums + ")"
	}
}

// protocolsSection is REPORT.md's section on the protocols experiment.
func protocolsSection(r *protocols.Result) string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString("## The Kafka protocol beside the paper's (not in the paper)\n\n")
	if r.Error != "" {
		fmt.Fprintf(&b, "The experiment failed: %s\n\n", r.Error)
	}
	if len(r.Paths) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "%s messages of %d bytes written to one broker process (%s), each topic one partition, "+
		"then read back from the page cache; the producers wait for no answer and compress nothing (franz-go with acks=0 and no codec), a producer's time "+
		"runs until its last message can be read. Every reader asks for %d KiB per request and sends its next request before it checks the answer it holds (one answer ahead: the broker builds the next while the reader checks; where neither kept a core busy, each still waited for the other part of the time), and checks every CRC. "+
		"CPU is schedstat run time summed over each process's threads; a side that kept %.0f%% of a core busy through a phase bounded it.\n\n",
		figure.Commas(float64(r.Messages)), r.Size, r.BrokerSettings, protocols.FetchBytes>>10, busy*100)
	b.WriteString("| path | topic | msg/s | client CPU µs/msg | broker CPU µs/msg | bounded by |\n|---|---|---|---|---|---|\n")
	row := func(name, topic, what string, p *protocols.Phase) {
		if p == nil {
			return
		}
		cell := func(v float64) string {
			if !p.CPUMeasured {
				return "n/a"
			}
			return fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(&b, "| %s, %s | %s | %s | %s | %s | %s |\n", name, what, topic, figure.Commas(p.MsgPerS),
			cell(p.ClientCPUus), cell(p.BrokerCPUus), protocolBound(*p, r.Cores))
	}
	for _, p := range r.Paths {
		row(p.Name, p.Topic, "produce", p.Producer)
	}
	for _, p := range r.Paths {
		row(p.Name, p.Topic, "consume", p.Consumer)
	}
	b.WriteString("\n")
	if base := findPath(r, protocols.Name07, protocols.Topic07); base != nil && base.Consumer != nil && base.Consumer.MsgPerS > 0 {
		for _, p := range r.Paths {
			if p.Consumer == nil || p.Name == protocols.Name07 {
				continue
			}
			fmt.Fprintf(&b, "- %s reading %s: %.0f%% of the paper's protocol's fetch rate.\n", p.Name, p.Topic,
				100*p.Consumer.MsgPerS/base.Consumer.MsgPerS)
		}
		if base.Producer != nil && base.Producer.MsgPerS > 0 {
			for _, p := range r.Paths {
				if p.Producer != nil && p.Name != protocols.Name07 {
					fmt.Fprintf(&b, "- %s writing %s: %.0f%% of our 0.7 producer's rate.\n", p.Name, p.Topic,
						100*p.Producer.MsgPerS/base.Producer.MsgPerS)
				}
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "Machine during the run: %s (%d cores). The paper's protocol sends the log's bytes with sendfile. "+
		"The Kafka protocol's fetch of %s, written through the Kafka protocol, sends the 0.8 entries the broker kept beside "+
		"the log as they arrived (a view, kafka/log/view.go), with sendfile too; of %s, written through the paper's protocol, "+
		"it re-frames every message (reads it into memory and writes it out with 0.8's header and a CRC over it).\n\n",
		r.Load, r.Cores, protocols.Topic08, protocols.Topic07)
	return b.String()
}

func findPath(r *protocols.Result, name, topic string) *protocols.Path {
	for i := range r.Paths {
		if r.Paths[i].Name == name && r.Paths[i].Topic == topic {
			return &r.Paths[i]
		}
	}
	return nil
}

package experiments

import (
	"fmt"
	"slices"
	"time"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/experiments/compression"
	"github.com/kafkarepro/kafkarepro/experiments/latency"
	"github.com/kafkarepro/kafkarepro/experiments/machine"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
	"github.com/kafkarepro/kafkarepro/experiments/protocols"
	"github.com/kafkarepro/kafkarepro/experiments/replication"
	"github.com/kafkarepro/kafkarepro/paper"
)

// Summary is summary.json: the whole run in one document.
type Summary struct {
	Run         string        `json:"run"`
	Started     time.Time     `json:"started"`
	Finished    time.Time     `json:"finished"`
	Seconds     float64       `json:"seconds"`
	Command     string        `json:"command,omitempty"`
	Services    string        `json:"services"`               // local or containers
	ServicesWhy string        `json:"services_why,omitempty"` // how the provider was chosen (and the images made)
	LoadAtStart *machine.Load `json:"load_at_start,omitempty"`
	LoadAtEnd   *machine.Load `json:"load_at_end,omitempty"`
	// FreePages is the guest's free page reporting during the run (nil in
	// runs made before the harness looked at it; package machine).
	FreePages        *machine.FreePageReporting `json:"free_page_reporting,omitempty"`
	Messages         int                        `json:"messages"`
	MessageSize      int                        `json:"message_size"`
	PrefetchMessages int                        `json:"prefetch_messages"`
	PrefetchBytes    int                        `json:"prefetch_bytes"`
	Machine          machine.Machine            `json:"machine"`
	// Network is how the clients reached the servers (nil in runs made
	// before the harness could use a link: loopback); Beside is a run of
	// the same experiments over the other path, set beside this one in
	// REPORT.md (see network.go).
	Network  *Network       `json:"network,omitempty"`
	Beside   *Beside        `json:"beside,omitempty"`
	Averages []Average      `json:"averages"`
	Ratios   []RatioResult  `json:"ratios"`
	Systems  []SystemReport `json:"systems"`
	Errors   []string       `json:"errors"`
	// Compression is the compression experiment (package compression), when run.
	Compression *compression.Result `json:"compression,omitempty"`
	// Ceiling is the machine's ceiling measured in this run (ceiling_report.go).
	Ceiling []CeilingRow `json:"ceiling,omitempty"`
	// Latency is figure 7's experiment (package latency), when run.
	Latency *latency.Result `json:"latency,omitempty"`
	// Replication is figure 6's experiment (package replication), when run.
	Replication *replication.Result `json:"replication,omitempty"`
	// Protocols is the Kafka protocol beside the paper's (package protocols), when run.
	Protocols *protocols.Result `json:"protocols,omitempty"`
}

// Average is one test's average throughput, flat for quick reading.
type Average struct {
	System  string  `json:"system"`
	Test    string  `json:"test"`
	Batch   int     `json:"batch"`
	MsgPerS float64 `json:"msg_per_s"`
	MBPerS  float64 `json:"mb_per_s"`
	OK      bool    `json:"ok"`
}

// RatioResult is one ratio measured in this run, beside the paper's.
type RatioResult struct {
	Name      string  `json:"name"`
	Value     float64 `json:"value"`
	PaperName string  `json:"paper_name,omitempty"`
	PaperMin  float64 `json:"paper_min,omitempty"`
	PaperText string  `json:"paper_text,omitempty"`
	Holds     bool    `json:"holds"` // Value >= PaperMin
	// Of and Over are the two measurements the ratio divides (Value =
	// Of.Value / Over.Value), so a report can say what bounded each.
	Of   Measured `json:"of"`
	Over Measured `json:"over"`
}

// Measured is one side of a ratio: a test's rate in msg/s, or (Test
// "storage") a store's bytes per message.
type Measured struct {
	System string  `json:"system"`
	Test   string  `json:"test"`            // "producer", "producer (client send)", "consumer" or "storage"
	Batch  int     `json:"batch,omitempty"` // a producer's
	Value  float64 `json:"value"`
}

// NewSummary assembles the summary of a run from the system reports.
func NewSummary(cfg Config, reports []SystemReport, fig *paper.Figures) *Summary {
	s := &Summary{Messages: cfg.Messages, MessageSize: cfg.MessageSize,
		PrefetchMessages: cfg.PrefetchMessages, PrefetchBytes: cfg.PrefetchBytes,
		Systems: reports, Errors: []string{}}
	for _, r := range reports {
		for _, t := range r.Tests() {
			s.Averages = append(s.Averages, Average{System: t.System, Test: t.Test, Batch: t.Batch,
				MsgPerS: t.MsgPerS, MBPerS: t.MsgPerS * float64(cfg.MessageSize) / 1e6, OK: t.OK()})
		}
		s.Errors = append(s.Errors, r.Errors...)
	}
	s.Ratios = Ratios(reports, cfg.MessageSize, fig)
	return s
}

// Tests lists the report's producer tests and its consumer test.
func (r SystemReport) Tests() []measure.Result {
	out := slices.Clone(r.Producer)
	if r.Consumer != nil {
		out = append(out, *r.Consumer)
	}
	return out
}

// ProducerRate is the average of a completed producer test, or 0.
func (r SystemReport) ProducerRate(batch int) float64 {
	for _, p := range r.Producer {
		if p.Batch == batch && p.OK() {
			return p.MsgPerS
		}
	}
	return 0
}

func (r SystemReport) sendRate(batch int) float64 {
	for _, p := range r.Producer {
		if p.Batch == batch && p.OK() {
			return p.SendMsgPerS
		}
	}
	return 0
}

// ConsumerRate is the average of a completed consumer test, or 0.
func (r SystemReport) ConsumerRate() float64 {
	if r.Consumer != nil && r.Consumer.OK() {
		return r.Consumer.MsgPerS
	}
	return 0
}

// MainStorage is the storage measured after the producer test of the
// largest batch that completed (the data the consumer test reads).
func (r SystemReport) MainStorage() (Storage, bool) {
	for i := len(r.Storage) - 1; i >= 0; i-- {
		if r.Storage[i].Error == "" && r.Storage[i].Messages > 0 {
			return r.Storage[i], true
		}
	}
	return Storage{}, false
}

func find(reports []SystemReport, name string) (SystemReport, bool) {
	for _, r := range reports {
		if r.Name == name {
			return r, true
		}
	}
	return SystemReport{}, false
}

// Ratios computes the paper's ratios from what this run measured; a ratio
// whose two sides were not both measured is left out.
func Ratios(reports []SystemReport, size int, fig *paper.Figures) []RatioResult {
	var out []RatioResult
	add := func(name, paperName string, of, over Measured) {
		if of.Value <= 0 || over.Value <= 0 {
			return
		}
		r := RatioResult{Name: name, Value: of.Value / over.Value, PaperName: paperName, Of: of, Over: over}
		if fig != nil {
			if p, err := fig.Ratio(paperName); err == nil {
				r.PaperMin, r.PaperText = p.Min, p.Text
				r.Holds = r.Value >= p.Min
			}
		}
		out = append(out, r)
	}
	ours, ok := find(reports, compare.Ours)
	if !ok {
		return out
	}
	producer := func(r SystemReport, b int) Measured { return Measured{r.Name, "producer", b, r.ProducerRate(b)} }
	consumer := func(r SystemReport) Measured { return Measured{r.Name, "consumer", 0, r.ConsumerRate()} }
	add("kafka_producer_b50_over_b1", "kafka_producer_b50_over_b1", producer(ours, 50), producer(ours, 1))
	// The same on the client's send rate alone, without the final flush
	// wait (which dominates a short run).
	add("kafka_producer_b50_over_b1_client_send", "kafka_producer_b50_over_b1",
		Measured{compare.Ours, "producer (client send)", 50, ours.sendRate(50)}, Measured{compare.Ours, "producer (client send)", 1, ours.sendRate(1)})
	for _, other := range reports {
		if other.Name == compare.Ours {
			continue
		}
		o := other.Name
		for _, b := range []int{1, 50} {
			add(fmt.Sprintf("kafka_producer_b%d_over_%s", b, o), "kafka_producer_over_"+o, producer(ours, b), producer(other, 1))
		}
		add("kafka_consumer_over_"+o, "kafka_consumer_over_"+o, consumer(ours), consumer(other))
		ks, ok1 := ours.MainStorage()
		ots, ok2 := other.MainStorage()
		if ok1 && ok2 {
			add(o+"_space_over_kafka", o+"_space_over_kafka",
				Measured{o, "storage", ots.Batch, ots.BytesPerMessage}, Measured{compare.Ours, "storage", ks.Batch, ks.BytesPerMessage})
		}
	}
	return out
}

// CheckRatio checks that our batch-50 producer and our consumer are at least
// r times faster than every other system measured in the same run. It
// returns one line per comparison and whether all of them passed; a
// comparison that could not be made (a test failed or did not run) fails.
func CheckRatio(reports []SystemReport, r float64) (lines []string, ok bool) {
	ok = true
	ours, found := find(reports, compare.Ours)
	if !found {
		return []string{"check-ratio: our system (kafka) was not measured"}, false
	}
	for _, other := range reports {
		if other.Name == compare.Ours {
			continue
		}
		for _, c := range []struct {
			what     string
			us, them float64
		}{
			{"producer (ours batch 50 vs " + other.Name + " batch 1)", ours.ProducerRate(50), other.ProducerRate(1)},
			{"consumer", ours.ConsumerRate(), other.ConsumerRate()},
		} {
			switch {
			case c.us <= 0:
				lines = append(lines, fmt.Sprintf("FAIL %s: ours was not measured (test failed or did not run)", c.what))
				ok = false
			case c.them <= 0:
				lines = append(lines, fmt.Sprintf("FAIL %s: %s was not measured (test failed or did not run)", c.what, other.Name))
				ok = false
			case c.us < r*c.them:
				lines = append(lines, fmt.Sprintf("FAIL %s: %.0f msg/s is %.2fx %s's %.0f msg/s, less than the required %.2fx",
					c.what, c.us, c.us/c.them, other.Name, c.them, r))
				ok = false
			default:
				lines = append(lines, fmt.Sprintf("ok   %s: %.0f msg/s is %.2fx %s's %.0f msg/s (>= %.2fx)",
					c.what, c.us, c.us/c.them, other.Name, c.them, r))
			}
		}
	}
	if len(lines) == 0 {
		lines = append(lines, "check-ratio: no other system in this run; nothing to compare")
	}
	return lines, ok
}

// Package paper holds the numbers the NetDB'11 Kafka paper reports in its
// §5 experiments, so the reproduction harness can set each measured number
// beside the paper's own.
//
// The numbers live in figures.json (embedded at build time). Those stated in
// the text (Kafka's 50,000 and 400,000 msg/s producer, 22,000 msg/s consumer,
// 9 vs 144 bytes of overhead, 70% more space) are exact; those only drawn in
// figures 4 and 5 (ActiveMQ and RabbitMQ throughput) are not in our copy of
// the paper, so figures.json holds the upper bound the text implies for each
// (UpperBound), and the report compares ratios rather than those values.
package paper

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
)

//go:embed figures.json
var figuresJSON []byte

// ErrNotFound is returned when the paper gives no number for a system.
var ErrNotFound = errors.New("paper: no such number")

// Setup is the paper's test bed (§5, second paragraph).
type Setup struct {
	Machines         string            `json:"machines"`
	CPU              string            `json:"cpu"`
	Memory           string            `json:"memory"`
	Disk             string            `json:"disk"`
	Network          string            `json:"network"`
	Messages         int               `json:"messages"`
	MessageSize      int               `json:"message_size"`
	Flush            string            `json:"flush"`
	ConsumerPrefetch string            `json:"consumer_prefetch"`
	AckMode          string            `json:"ack_mode"`
	Versions         map[string]string `json:"versions"`
}

// Throughput is one average throughput of figure 4 or 5.
type Throughput struct {
	System     string  `json:"system"`
	Batch      int     `json:"batch"` // producer batch size; 0 for the consumer
	MsgPerS    float64 `json:"msg_per_s"`
	UpperBound bool    `json:"upper_bound"` // not stated: the most the text allows
	Source     string  `json:"source"`
}

// Storage is the paper's storage comparison (§5, "more efficient storage
// format").
type Storage struct {
	KafkaOverheadBytes       float64 `json:"kafka_overhead_bytes"`
	ActiveMQOverheadBytes    float64 `json:"activemq_overhead_bytes"`
	ActiveMQMoreSpacePercent float64 `json:"activemq_more_space_percent"`
	Source                   string  `json:"source"`
}

// Ratio is one ratio the paper states; Min is the least value the text
// allows ("at least 2 times", "more than 4 times").
type Ratio struct {
	Name string  `json:"name"`
	Min  float64 `json:"min"`
	Text string  `json:"text"`
}

// Figures is everything in figures.json.
type Figures struct {
	Title    string       `json:"title"`
	Setup    Setup        `json:"setup"`
	Producer []Throughput `json:"producer"`
	Consumer []Throughput `json:"consumer"`
	Storage  Storage      `json:"storage"`
	Ratios   []Ratio      `json:"ratios"`
}

// Load parses the embedded figures.json.
func Load() (*Figures, error) { return Parse(figuresJSON) }

// Parse parses a figures.json document.
func Parse(data []byte) (*Figures, error) {
	var f Figures
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("paper: parse figures.json: %w", err)
	}
	if len(f.Producer) == 0 || len(f.Consumer) == 0 {
		return nil, fmt.Errorf("paper: figures.json has no producer or consumer numbers")
	}
	return &f, nil
}

// ProducerRate is the paper's average producer throughput for a system and
// batch size.
func (f *Figures) ProducerRate(system string, batch int) (Throughput, error) {
	for _, t := range f.Producer {
		if t.System == system && t.Batch == batch {
			return t, nil
		}
	}
	return Throughput{}, fmt.Errorf("producer %s batch %d: %w", system, batch, ErrNotFound)
}

// ConsumerRate is the paper's average consumer throughput for a system.
func (f *Figures) ConsumerRate(system string) (Throughput, error) {
	for _, t := range f.Consumer {
		if t.System == system {
			return t, nil
		}
	}
	return Throughput{}, fmt.Errorf("consumer %s: %w", system, ErrNotFound)
}

// OverheadBytes is the paper's per-message storage overhead for a system
// (only Kafka and ActiveMQ are given).
func (f *Figures) OverheadBytes(system string) (float64, error) {
	switch system {
	case "kafka":
		return f.Storage.KafkaOverheadBytes, nil
	case "activemq":
		return f.Storage.ActiveMQOverheadBytes, nil
	}
	return 0, fmt.Errorf("storage overhead %s: %w", system, ErrNotFound)
}

// Ratio returns the named ratio.
func (f *Figures) Ratio(name string) (Ratio, error) {
	for _, r := range f.Ratios {
		if r.Name == name {
			return r, nil
		}
	}
	return Ratio{}, fmt.Errorf("ratio %s: %w", name, ErrNotFound)
}

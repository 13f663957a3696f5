package experiments

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kafkarepro/kafkarepro/experiments/compression"
	"github.com/kafkarepro/kafkarepro/experiments/latency"
	"github.com/kafkarepro/kafkarepro/experiments/measure"
	"github.com/kafkarepro/kafkarepro/experiments/replication"
	"github.com/kafkarepro/kafkarepro/paper"
)

// Write writes every output of a run into dir: producer.csv, consumer.csv,
// series.csv, summary.json, the three figures and REPORT.md. It writes as
// much as it can and returns the joined errors.
func Write(dir string, s *Summary, fig *paper.Figures) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("experiments: create output dir %s: %w", dir, err)
	}
	var prod, cons []measure.Result
	for _, r := range s.Systems {
		prod = append(prod, r.Producer...)
		if r.Consumer != nil {
			cons = append(cons, *r.Consumer)
		}
	}
	return errors.Join(
		writeCSV(filepath.Join(dir, "producer.csv"), prod, false),
		writeCSV(filepath.Join(dir, "consumer.csv"), cons, true),
		writeSeriesCSV(filepath.Join(dir, "series.csv"), append(prod, cons...)),
		writeJSON(filepath.Join(dir, "summary.json"), s),
		PlotThroughput(filepath.Join(dir, "fig4_producer.png"), "Producer performance (paper figure 4)"+s.network().titleSuffix(), prod, s.network().Limits("producer")...),
		PlotThroughput(filepath.Join(dir, "fig5_consumer.png"), "Consumer performance (paper figure 5)"+s.network().titleSuffix(), cons, s.network().Limits("consumer")...),
		PlotStorage(filepath.Join(dir, "fig_storage.png"), s, fig),
		compression.Plot(filepath.Join(dir, "fig_compression.png"), s.Compression),
		latency.Plot(filepath.Join(dir, "fig7_latency.png"), s.Latency),
		replication.Plot(filepath.Join(dir, "fig6_replication.png"), s.Replication),
		WriteReport(filepath.Join(dir, "REPORT.md"), s, fig),
	)
}

// CSVHeader is the header of producer.csv and consumer.csv.
// send_seconds and send_msg_per_s time the client side alone (see
// measure.Result.SendSeconds).
var CSVHeader = []string{"system", "batch", "seconds", "mb_sent", "msgs", "msg_per_s", "error", "send_seconds", "send_msg_per_s"}

// ConsumerCSVHeader is the header of consumer.csv: CSVHeader plus the bytes
// the server processes wrote during the test, to storage (write_bytes) and
// through any write call, sockets included (wchar), or "not measured"
// (see ServerIO).
var ConsumerCSVHeader = append(CSVHeader[:len(CSVHeader):len(CSVHeader)], "server_write_bytes", "server_wchar")

func writeCSV(path string, tests []measure.Result, serverIO bool) error {
	header := CSVHeader
	if serverIO {
		header = ConsumerCSVHeader
	}
	rows := [][]string{header}
	for _, t := range tests {
		row := []string{t.System, strconv.Itoa(t.Batch),
			strconv.FormatFloat(t.Seconds, 'f', 3, 64), strconv.FormatFloat(t.MBSent, 'f', 3, 64),
			strconv.FormatInt(t.Msgs, 10), strconv.FormatFloat(t.MsgPerS, 'f', 1, 64), t.Error,
			strconv.FormatFloat(t.SendSeconds, 'f', 3, 64), strconv.FormatFloat(t.SendMsgPerS, 'f', 1, 64)}
		if serverIO {
			c := t.ServerIO.Cells()
			row = append(row, c[0], c[1])
		}
		rows = append(rows, row)
	}
	return writeRows(path, rows)
}

// writeSeriesCSV writes every sample: the data behind figures 4 and 5.
func writeSeriesCSV(path string, tests []measure.Result) error {
	rows := [][]string{{"system", "test", "batch", "seconds", "mb_sent", "msg_per_s"}}
	for _, t := range tests {
		for _, p := range t.Series {
			rows = append(rows, []string{t.System, t.Test, strconv.Itoa(t.Batch),
				strconv.FormatFloat(p.Seconds, 'f', 3, 64), strconv.FormatFloat(p.MB, 'f', 3, 64),
				strconv.FormatFloat(p.MsgPerS, 'f', 1, 64)})
		}
	}
	return writeRows(path, rows)
}

func writeRows(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("experiments: create %s: %w", path, err)
	}
	w := csv.NewWriter(f)
	err = w.WriteAll(rows)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("experiments: write %s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("experiments: encode %s: %w", path, err)
	}
	if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("experiments: write %s: %w", path, err)
	}
	return nil
}

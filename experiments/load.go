package experiments

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kafkarepro/kafkarepro/experiments/measure"
)

// Load reads a run folder written by Write back into a Summary: summary.json
// plus the samples of series.csv, so figures and REPORT.md can be drawn again
// (reproduce --replot) without running anything.
func Load(dir string) (*Summary, error) {
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return nil, fmt.Errorf("experiments: load run %s: %w", dir, err)
	}
	var s Summary
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("experiments: parse %s/summary.json: %w", dir, err)
	}
	f, err := os.Open(filepath.Join(dir, "series.csv"))
	if err != nil {
		return nil, fmt.Errorf("experiments: load run %s: %w", dir, err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("experiments: parse %s/series.csv: %w", dir, err)
	}
	for i, row := range rows {
		if i == 0 {
			continue // header: system,test,batch,seconds,mb_sent,msg_per_s
		}
		if len(row) != 6 {
			return nil, fmt.Errorf("experiments: %s/series.csv line %d has %d fields, want 6", dir, i+1, len(row))
		}
		batch, e1 := strconv.Atoi(row[2])
		sec, e2 := strconv.ParseFloat(row[3], 64)
		mb, e3 := strconv.ParseFloat(row[4], 64)
		rate, e4 := strconv.ParseFloat(row[5], 64)
		if e1 != nil || e2 != nil || e3 != nil || e4 != nil {
			return nil, fmt.Errorf("experiments: %s/series.csv line %d: bad number in %q", dir, i+1, row)
		}
		if t := s.test(row[0], row[1], batch); t != nil {
			t.Series = append(t.Series, measure.Point{Seconds: sec, MB: mb, MsgPerS: rate})
		}
	}
	return &s, nil
}

// test finds one test of the summary.
func (s *Summary) test(system, test string, batch int) *measure.Result {
	for i := range s.Systems {
		r := &s.Systems[i]
		if r.Name != system {
			continue
		}
		if test == "consumer" {
			return r.Consumer
		}
		for j := range r.Producer {
			if r.Producer[j].Batch == batch {
				return &r.Producer[j]
			}
		}
	}
	return nil
}

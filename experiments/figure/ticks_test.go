package figure

import "testing"

func TestLogTicksAndCommas(t *testing.T) {
	ticks := LogTicks{LabelAll: true}.Ticks(1000, 500000)
	labels := map[string]bool{}
	for _, tk := range ticks {
		if tk.Label != "" {
			labels[tk.Label] = true
		}
	}
	for _, want := range []string{"1,000", "2,000", "5,000", "100,000", "500,000"} {
		if !labels[want] {
			t.Errorf("tick %s missing from %v", want, labels)
		}
	}
	if Commas(1234567.4) != "1,234,567" || Commas(999) != "999" {
		t.Errorf("commas: %s %s", Commas(1234567.4), Commas(999))
	}
}

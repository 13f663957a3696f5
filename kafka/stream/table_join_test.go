package stream

import (
	"errors"
	"strings"
	"testing"
)

// mapTable is a TableLookup in memory.
type mapTable map[string]string

func (m mapTable) AppendValue(dst, key []byte) ([]byte, bool) {
	v, ok := m[string(key)]
	return append(dst, v...), ok
}

// §6's stream–table join: each click is published again with its item's row of the table; with Inner a click
// whose item has no row is a counted skip (its reason names the key), without it the click goes out with "-".
func TestTableJoinEnrichesEachMessage(t *testing.T) {
	items := mapTable{"item-a": "item-a red shoes", "item-b": "item-b hat"}
	for _, inner := range []bool{false, true} {
		f, err := TableJoin(TableJoinConfig{Table: items, Key: KeyField(' ', 2), Output: "clicks-named", Inner: inner})
		if err != nil {
			t.Fatal(err)
		}
		out := &MemoryEmitter{}
		task, err := NewTask(Stage{Input: "clicks", Key: CTRKey, Time: CTRTime, Processors: []ProcessorFactory{f}}, "0-0", out)
		if err != nil {
			t.Fatal(err)
		}
		in := []string{"click i1 item-a 1000", "click i2 item-z 1001", "click i3 item-b 1002", "click i4"}
		for i, l := range in {
			if err := task.Process(int64(i), int64(i+1), []byte(l)); err != nil {
				t.Fatal(err)
			}
		}
		var got []string
		for _, e := range out.Out {
			if e.Topic != "clicks-named" {
				t.Errorf("published to %q", e.Topic)
			}
			got = append(got, string(e.Key)+"|"+string(e.Value))
		}
		want := []string{"i1|click i1 item-a 1000 item-a red shoes", "i2|click i2 item-z 1001 -", "i3|click i3 item-b 1002 item-b hat"}
		rep := task.Report()
		if inner {
			want = []string{want[0], want[2]}
			if rep.Skipped != 1 || !strings.Contains(strings.Join(rep.Reasons, ";"), `"item-z"`) {
				t.Errorf("inner join: report %+v, want item-z's click skipped with its key named", rep)
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("inner %v: published\n%s\nwant\n%s", inner, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if rep.Skips() != 1+btoi(inner) || rep.Emitted != int64(len(want)) {
			t.Errorf("inner %v: report %v", inner, rep)
		}
	}
	if _, err := TableJoin(TableJoinConfig{Output: "x"}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("no table: %v", err)
	}
	if _, err := TableJoin(TableJoinConfig{Table: items, Output: "a/b"}); !errors.Is(err, ErrBadConfig) {
		t.Errorf("hostile output: %v", err)
	}
}

func btoi(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

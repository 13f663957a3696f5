package broker_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// viewEntries08 is n keyed entries from first: key "k%03d", a 100-byte
// value. Each is 8 (offset) + 4 (size) + 4 (CRC) + 1 (magic) + 1
// (attributes) + 4 + 4 (key) + 4 + 100 (value) = 130 bytes.
func viewEntries08(first, n int) []byte {
	var kvs []string
	for i := first; i < first+n; i++ {
		kvs = append(kvs, fmt.Sprintf("k%03d", i), fmt.Sprintf("v%03d%s", i, strings.Repeat("x", 96)))
	}
	return entries08(0, kvs...)
}

const viewEntrySize = 130

func checkRun(t *testing.T, got []kv, from, to int) {
	t.Helper()
	if len(got) != to-from {
		t.Fatalf("%d entries, want %d (%d..%d)", len(got), to-from, from, to-1)
	}
	for i, e := range got {
		n := from + i
		if e.off != int64(n) || e.key != fmt.Sprintf("k%03d", n) || !strings.HasPrefix(e.value, fmt.Sprintf("v%03d", n)) || len(e.value) != 100 {
			t.Fatalf("entry %d: offset %d key %q value %q…, want offset %d key k%03d", i, e.off, e.key, e.value[:min(8, len(e.value))], n, n)
		}
	}
}

// What is produced through the Kafka protocol is fetched from the log's view
// (log/view.go): the entries as kept, from the offset asked, max_bytes of
// them, the last possibly cut short as 0.8's broker sent it. After a
// restart the views are gone and the same fetches are built from the log,
// whole entries only; an append after it starts a new view.
func TestKafka08FetchFromView(t *testing.T) {
	tb := startBroker(t, map[string]string{"num.partitions": "1"})
	cl := dial08(t, tb.Addr())
	for i := 0; i < 200; i += 10 {
		if r := cl.produce(1, "v", viewEntries08(i, 10)); r.Error != 0 || r.Offset != int64(i) {
			t.Fatalf("Produce of %d..%d: %+v", i, i+9, r)
		}
	}
	tb.Flush("v", 0)
	if views, _ := filepath.Glob(filepath.Join(tb.Dir, "v-0", "*.view")); len(views) != 1 {
		t.Fatalf("view files %v, want one beside the segment", views)
	}

	_, got := cl.fetch("v", 0, 1<<20)
	checkRun(t, got, 0, 200)
	_, got = cl.fetch("v", 137, 1<<20)
	checkRun(t, got, 137, 200)
	res, got := cl.fetch("v", 50, viewEntrySize+10)
	if len(res.Set) != viewEntrySize+10 {
		t.Errorf("Fetch of %d bytes from the view: a set of %d bytes, want one entry and 10 bytes of the next", viewEntrySize+10, len(res.Set))
	}
	checkRun(t, got, 50, 51)
	res, got = cl.fetch("v", 199, 5)
	if len(res.Set) != viewEntrySize {
		t.Errorf("Fetch of 5 bytes: a set of %d bytes, want the first entry whole (%d)", len(res.Set), viewEntrySize)
	}
	checkRun(t, got, 199, 200)

	if err := tb.Stop(); err != nil {
		t.Fatal(err)
	}
	tb.Restart()
	cl = dial08(t, tb.Addr())
	_, got = cl.fetch("v", 0, 1<<20)
	checkRun(t, got, 0, 200)
	if views, _ := filepath.Glob(filepath.Join(tb.Dir, "v-0", "*.view")); len(views) != 0 {
		t.Fatalf("view files %v after a restart, want none (dropped as the log opens)", views)
	}
	if res, _ := cl.fetch("v", 50, viewEntrySize+10); len(res.Set) != viewEntrySize {
		t.Errorf("Fetch of %d bytes built from the log: a set of %d bytes, want the one whole entry", viewEntrySize+10, len(res.Set))
	}
	if r := cl.produce(1, "v", viewEntries08(200, 10)); r.Error != 0 || r.Offset != 200 {
		t.Fatalf("Produce of 200..209 after the restart: %+v", r)
	}
	tb.Flush("v", 0)
	_, got = cl.fetch("v", 195, 1<<20)
	checkRun(t, got, 195, 210)
	if res, _ := cl.fetch("v", 201, viewEntrySize+10); len(res.Set) != viewEntrySize+10 {
		t.Errorf("Fetch of %d bytes after the restart's append: a set of %d bytes, want it from a new view", viewEntrySize+10, len(res.Set))
	}
}

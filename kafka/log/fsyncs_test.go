package log

import "testing"

// The flusher's fsyncs are counted and timed: one flush of an active
// segment with new bytes is one fsync; a flush with nothing new is none.
func TestFsyncStats(t *testing.T) {
	l := openLog(t, t.TempDir(), testConfig(), false)
	if st := l.Fsyncs(); st.Count != 0 {
		t.Fatalf("a fresh log has %+v", st)
	}
	mustAppend(t, l, makeSet(0, 5, 200))
	mustFlush(t, l)
	mustFlush(t, l) // nothing new: no fsync
	st := l.Fsyncs()
	if st.Count != 1 || st.Total <= 0 || st.Max <= 0 || st.Max > st.Total {
		t.Fatalf("after one flush of new bytes: %+v, want one fsync with its time", st)
	}
}

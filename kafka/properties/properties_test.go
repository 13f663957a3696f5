package properties

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// The format of java.util.Properties: separators '=', ':' or whitespace,
// CRLF line ends, an escaped separator inside a key, \t and \uXXXX escapes,
// a lone backslash line, continuation lines, a key without a value.
func TestParse(t *testing.T) {
	props := Parse("a=1\r\n  b : two words \nc\\=d=e\\tf\n\\\n\nkey\\u0041=x\ncont=1,\\\n  2,\\\n  3\nempty\n# comment\n! comment\n")
	got := map[string]string{}
	lines := map[string]int{}
	for _, p := range props {
		got[p.Key] = p.Value
		lines[p.Key] = p.Line
	}
	want := map[string]string{"a": "1", "b": "two words ", "c=d": "e\tf", "keyA": "x", "cont": "1,2,3", "empty": ""}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	// A continued value is reported at the line it starts on.
	if lines["a"] != 1 || lines["keyA"] != 6 || lines["cont"] != 7 || lines["empty"] != 10 {
		t.Fatalf("lines %v", lines)
	}
}

func TestLoadLaterKeyWins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "consumer.config")
	if err := os.WriteFile(path, []byte("groupid=a\nfetch.size=1\ngroupid=b\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(path)
	if err != nil || !reflect.DeepEqual(m, map[string]string{"groupid": "b", "fetch.size": "1"}) {
		t.Fatalf("%v, %v", m, err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("a missing file loaded")
	}
}

func TestSet(t *testing.T) {
	var c struct {
		n    int
		n64  int64
		b    bool
		s    string
		wait time.Duration
	}
	fields := map[string]Field{
		"n": Int(&c.n), "n64": Int64(&c.n64), "b": Bool(&c.b), "s": String(&c.s), "wait.ms": Millis(&c.wait),
	}
	for k, v := range map[string]string{"n": " 7 ", "n64": "8589934592", "b": "true", "s": "x y", "wait.ms": "250"} {
		if known, err := Set(fields, k, v); !known || err != nil {
			t.Fatalf("%s=%q: known %v, %v", k, v, known, err)
		}
	}
	if c.n != 7 || c.n64 != 1<<33 || !c.b || c.s != "x y" || c.wait != 250*time.Millisecond {
		t.Fatalf("%+v", c)
	}
	if known, err := Set(fields, "unknown", "1"); known || err != nil {
		t.Fatalf("unknown key: known %v, %v", known, err)
	}
	for k, v := range map[string]string{"n": "seven", "n64": "1.5", "b": "yes", "wait.ms": "1s"} {
		if _, err := Set(fields, k, v); !errors.Is(err, ErrValue) {
			t.Errorf("%s=%q: %v, want ErrValue", k, v, err)
		}
	}
}

func TestNearest(t *testing.T) {
	var a, b, c int
	fields := map[string]Field{"broker.id": Int(&a), "brokerid": Int(&b), "log.dirs": Int(&c)}
	for key, want := range map[string]string{
		"broker.idd": "broker.id", // one insertion
		"borker.id":  "broker.id", // two substitutions
		"log.dir.s":  "log.dirs",
		"log.dir":    "log.dirs",
		"port":       "", // nothing near
		"brokerid2":  "brokerid",
		"x":          "", // one edit is a third of a short name: no guess
	} {
		if got := Nearest(fields, key); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", key, got, want)
		}
	}
}
func TestParseList(t *testing.T) {
	m, err := ParseList(" produce.coalesce.max.us=0 , producer:socket.nagle.disable=true,empty=")
	if err != nil || len(m) != 3 || m["produce.coalesce.max.us"] != "0" || m["producer:socket.nagle.disable"] != "true" || m["empty"] != "" {
		t.Errorf("ParseList: %v, %v", m, err)
	}
	if m, err := ParseList("  "); m != nil || err != nil {
		t.Errorf("an empty list: %v, %v, want nil, nil", m, err)
	}
	for _, bad := range []string{"novalue", "a=1,,b=2", "=1"} {
		if _, err := ParseList(bad); !errors.Is(err, ErrValue) {
			t.Errorf("ParseList(%q): %v, want ErrValue", bad, err)
		}
	}
}

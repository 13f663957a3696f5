package audit

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The envelope's bytes, field by field as the package doc draws them.
func TestEnvelopeLayout(t *testing.T) {
	at := time.UnixMilli(0x0102030405).UTC()
	got := AppendEnvelope(nil, Envelope{Time: at, Host: "web", Producer: 0xA1B2C3D4, Seq: 7, Payload: []byte("hi")})
	want := []byte{
		0xA7, 1, // magic, version
		0, 0, 0, 0x01, 0x02, 0x03, 0x04, 0x05, // time in ms
		0xA1, 0xB2, 0xC3, 0xD4, // producer
		0, 0, 0, 7, // seq
		0, 3, 'w', 'e', 'b', // host
		'h', 'i', // the application's bytes
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("envelope\n got %x\nwant %x", got, want)
	}
	e, err := OpenEnvelope(got)
	if err != nil || !e.Time.Equal(at) || e.Host != "web" || e.Producer != 0xA1B2C3D4 || e.Seq != 7 || string(e.Payload) != "hi" {
		t.Fatalf("opened %+v, %v", e, err)
	}
	for _, bad := range [][]byte{nil, []byte("plain text message"), want[:19], append([]byte{0xA7, 2}, want[2:]...),
		append(append([]byte{}, want[:18]...), 0, 99, 'x')} {
		if _, err := OpenEnvelope(bad); !errors.Is(err, ErrNotEnvelope) {
			t.Errorf("%q: err %v", bad, err)
		}
	}
}

// An audit event that is not one gets a clear error naming what is wrong.
func TestParseEventRefusesWhatIsNotAnEvent(t *testing.T) {
	good := Event{Type: "produced", Host: "h", Producer: "00000001", Topic: "t", Window: 120000, WindowMs: 60000, Count: 3}
	if e, err := ParseEvent(good.Marshal()); err != nil || e != good {
		t.Fatalf("good event: %+v %v", e, err)
	}
	for _, bad := range []string{
		"not json at all",
		`{"type":"consumed","producer":"1","topic":"t","window":0,"window_ms":1,"count":1}`,
		`{"type":"produced","producer":"1","topic":"t","window":5,"window_ms":60000,"count":1}`,
		`{"type":"produced","producer":"1","topic":"t","window":0,"window_ms":60000,"count":-1}`,
		`{"type":"produced","topic":"t","window":0,"window_ms":60000,"count":1}`,
		`{"type":"produced","producer":"1","topic":"t","window":0,"window_ms":60000,"count":1,"extra":true}`,
	} {
		_, err := ParseEvent([]byte(bad))
		if !errors.Is(err, ErrNotEvent) {
			t.Errorf("%s: err %v", bad, err)
		} else {
			t.Log(err)
		}
	}
}

type fakeSender struct {
	mu   sync.Mutex
	sent map[string][][]byte
	fail bool
}

func (f *fakeSender) Send(topic string, _ int32, msgs ...[]byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail {
		return errors.New("broker down")
	}
	for _, m := range msgs {
		f.sent[topic] = append(f.sent[topic], bytes.Clone(m))
	}
	return nil
}

// A producer's events count what it sent per window; the tally checks the
// messages found against them, telling missing from duplicated.
func TestProducerEventsAndTally(t *testing.T) {
	f := &fakeSender{sent: map[string][][]byte{}}
	now := time.UnixMilli(10_000).UTC()
	p, err := NewProducer(f, Config{Window: 10 * time.Second, PublishInterval: time.Hour, Host: "h1", Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		p.Send("clicks", 0, []byte("a"), []byte("b")) // 10 in window 10 s
	}
	now = now.Add(12 * time.Second)
	p.Send("clicks", 0, []byte("c"), []byte("d"), []byte("e")) // 3 in window 20 s
	p.Send("other", 0, []byte("z"))
	f.fail = true
	if err := p.Send("clicks", 0, []byte("lost")); err == nil {
		t.Fatal("failed send reported no error")
	}
	f.fail = false
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(f.sent["audit"]); n != 3 {
		t.Fatalf("%d events, want 3 (clicks×2 windows, other)", n)
	}
	tl := NewTally("clicks")
	for _, e := range append(f.sent["audit"], f.sent["audit"][0]) { // an event seen twice counts once
		if err := tl.AddEvent(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := tl.AddEvent([]byte("garbage")); !errors.Is(err, ErrNotEvent) || tl.BadEvents != 1 {
		t.Fatalf("garbage event: %v, bad %d", err, tl.BadEvents)
	}
	msgs := f.sent["clicks"]
	// Window 10 s: drop 2, duplicate 1; window 20 s: all, one twice.
	found := append(append([][]byte{}, msgs[2:10]...), msgs[4], msgs[10], msgs[11], msgs[12], msgs[12], []byte("no envelope"))
	for _, m := range found {
		tl.AddMessage(m)
	}
	rows := tl.Rows()
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(r.Window.Format("15:04:05 "))
		b.WriteString(strings.Join([]string{itoa(r.Produced), itoa(r.Consumed), itoa(r.Missing), itoa(r.Duplicated)}, " "))
		b.WriteString("\n")
	}
	if want := "00:00:10 10 8 2 1\n00:00:20 3 3 0 1\n"; b.String() != want || tl.NotAudited != 1 {
		t.Fatalf("rows\n%swant\n%s(not audited %d)", b.String(), want, tl.NotAudited)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestWindowOf(t *testing.T) {
	w := time.Minute
	for _, c := range []struct{ ms, want int64 }{{0, 0}, {59999, 0}, {60000, 60000}, {-1, -60000}} {
		if got := WindowOf(time.UnixMilli(c.ms), w); got != c.want {
			t.Errorf("WindowOf(%d) = %d, want %d", c.ms, got, c.want)
		}
	}
}

package link

import (
	"errors"
	"math"
	"os"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		bits int64
		text string
	}{
		{"", 0, "loopback"},
		{"loopback", 0, "loopback"},
		{" LoopBack ", 0, "loopback"},
		{"1gbit", 1_000_000_000, "1 Gb/s"},
		{"1Gbit", 1_000_000_000, "1 Gb/s"},
		{"10gbit", 10_000_000_000, "10 Gb/s"},
		{"2.5gbit", 2_500_000_000, "2.5 Gb/s"},
		{"100mbit", 100_000_000, "100 Mb/s"},
		{"640kbit", 640_000, "640 kb/s"},
		{"1gibit", 1 << 30, "1.073741824 Gb/s"},
		{"8bit", 8, "8 b/s"},
		{"1bit", 1, "1 b/s"}, // parsed; tc refuses it (less than a byte per second): see TestIntegration_RateTCRefuses
	} {
		s, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if s.BitsPerSec != c.bits || s.String() != c.text || s.IsLoopback() != (c.bits == 0) {
			t.Errorf("Parse(%q) = %+v (%s), want %d bit/s (%s)", c.in, s, s, c.bits, c.text)
		}
	}
	if s, _ := Parse("1gbit"); s.TC() != "1000000000bit" {
		t.Errorf("TC() = %q", s.TC())
	}
	for _, bad := range []string{"fast", "1gbps", "125MBps", "gbit", "-1gbit", "0gbit", "1e9bit", "inf", "nangbit", "0.5bit", "1 gbit", "10", "1gb"} {
		_, err := Parse(bad)
		if !errors.Is(err, ErrUnknownNetwork) || !strings.Contains(err.Error(), bad) {
			t.Errorf("Parse(%q) = %v, want ErrUnknownNetwork quoting the value", bad, err)
		}
	}
	if _, err := Parse("1gbps"); err == nil || !strings.Contains(err.Error(), "bytes per second") {
		t.Errorf("Parse(1gbps) = %v, want it to say tc reads bps as bytes", err)
	}
}

// The capacity of the paper's link in messages per second, with every
// byte tbf counts written out.
func TestCapacity(t *testing.T) {
	f := Framing{MTU: 1500, Timestamps: true}
	// 1500 - 20 (IPv4) - 20 (TCP) - 12 (timestamps) = 1448 bytes of stream
	// per segment; 1500 + 14 (Ethernet) = 1514 bytes on the link.
	if f.SegmentPayload() != 1448 || f.FrameBytes() != 1514 {
		t.Fatalf("segment %d of %d bytes, want 1448 of 1514", f.SegmentPayload(), f.FrameBytes())
	}
	// 10^9 / 8 = 125,000,000 bytes/s; × 1448 / 1514 = 119,550,858.65.
	if got := f.StreamBytesPerSec(1e9); math.Abs(got-119_550_858.65) > 0.01 {
		t.Errorf("StreamBytesPerSec(1 Gb/s) = %.2f, want 119,550,858.65", got)
	}
	l := &Link{Spec: Spec{BitsPerSec: 1e9}, Framing: f}
	for _, c := range []struct {
		what   string
		stream float64
		want   float64
	}{
		// A consumer's fetch: 200 payload + 9 header = 209 bytes a message.
		{"209-byte messages", 209, 119_550_858.65 / 209}, // 572,013
		// Batch 50: a 24-byte PRODUCE header (4 size + 2 id + 2+8 "perf-b50"
		// + 4 partition + 4 set size) shared by 50 messages: 209.48.
		{"batch 50", 209 + 24.0/50, 119_550_858.65 / 209.48}, // 570,703
		// Batch 1: the 23-byte header of "perf-b1" on every message: 232.
		{"batch 1", 209 + 23, 119_550_858.65 / 232}, // 515,306
	} {
		if got := l.Capacity(c.stream); math.Abs(got-c.want) > 0.01 {
			t.Errorf("%s: Capacity(%.2f) = %.2f, want %.2f", c.what, c.stream, got, c.want)
		}
	}
	if got := (Framing{MTU: 1500}).SegmentPayload(); got != 1460 {
		t.Errorf("without timestamps: %d bytes of stream per segment, want 1460", got)
	}
	if l.Capacity(0) != 0 || (&Link{}).Capacity(209) != 0 {
		t.Error("a capacity without a message size or a link is not 0")
	}
}

func TestCheckMissingTools(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	err := Check()
	if !errors.Is(err, ErrMissingTool) {
		t.Fatalf("Check() = %v, want ErrMissingTool", err)
	}
	for _, want := range []string{"ip and tc", "iproute2"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check() = %q, want it to name %q", err, want)
		}
	}
	// Create stops at the same check, before making anything.
	if _, err := Create(t.Context(), Spec{Name: "1gbit", BitsPerSec: 1e9}, Options{ID: "nocheck"}); !errors.Is(err, ErrMissingTool) {
		t.Errorf("Create without ip and tc = %v, want ErrMissingTool", err)
	}
}

func TestCheckNotRoot(t *testing.T) {
	err := check(1000)
	if !errors.Is(err, ErrNeedsRoot) || !strings.Contains(err.Error(), "uid 1000") || !strings.Contains(err.Error(), "run as root") {
		t.Errorf("check(uid 1000) = %v, want ErrNeedsRoot saying to run as root", err)
	}
	if os.Geteuid() != 0 {
		if _, err := Create(t.Context(), Spec{Name: "1gbit", BitsPerSec: 1e9}, Options{}); !errors.Is(err, ErrNeedsRoot) {
			t.Errorf("Create as uid %d = %v, want ErrNeedsRoot", os.Geteuid(), err)
		}
	}
}

func TestNames(t *testing.T) {
	s, c := Names("4194304") // the largest pid Linux hands out
	for _, iface := range []string{s.Iface, c.Iface} {
		if len(iface) > 15 || !strings.HasPrefix(iface, Prefix) {
			t.Errorf("interface %q: want the prefix %q and at most 15 bytes (IFNAMSIZ)", iface, Prefix)
		}
	}
	if s.Netns != "krnet-4194304-srv" || c.Netns != "krnet-4194304-cli" || s.Addr == c.Addr {
		t.Errorf("names %+v %+v", s, c)
	}
	if _, err := Create(t.Context(), Spec{Name: "1gbit", BitsPerSec: 1e9}, Options{ID: "Bad-ID"}); !errors.Is(err, ErrSetup) {
		t.Errorf("Create with id Bad-ID = %v, want ErrSetup", err)
	}
	if _, err := Create(t.Context(), Spec{Name: "loopback"}, Options{}); !errors.Is(err, ErrUnknownNetwork) {
		t.Errorf("Create(loopback) = %v, want ErrUnknownNetwork", err)
	}
}

func TestEncodeDecode(t *testing.T) {
	s, c := Names("123")
	l := &Link{Spec: Spec{Name: "1gbit", BitsPerSec: 1e9}, ID: "123", Server: s, Client: c,
		Framing: Framing{MTU: 1500, Timestamps: true}, BurstBytes: 131072}
	got, err := Decode(l.Encode())
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec != l.Spec || got.ID != l.ID || got.Server != l.Server || got.Client != l.Client || got.Framing != l.Framing || got.BurstBytes != l.BurstBytes {
		t.Errorf("Decode(Encode()) = %+v, want %+v", got, l)
	}
	if err := got.Close(); err == nil {
		t.Error("a decoded link's Close removed the namespaces of its parent")
	}
	for _, bad := range []string{"", "{}", `{"id":"123"}`, "not json"} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q) succeeded", bad)
		}
	}
	if d := l.Describe(2); d != "two network namespaces on one 2-core VM, 1 Gb/s shaped link" {
		t.Errorf("Describe = %q", d)
	}
}

package zk

import (
	"errors"
	"testing"
)

func TestPaths(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{BrokerIDsPath, "/brokers/ids"},
		{BrokerIDPath(3), "/brokers/ids/3"},
		{BrokerTopicsPath, "/brokers/topics"},
		{BrokerTopicPath("t1"), "/brokers/topics/t1"},
		{BrokerTopicBrokerPath("t1", 3), "/brokers/topics/t1/3"},
		{ConsumersPath, "/consumers"},
		{ConsumerIDsPath("g"), "/consumers/g/ids"},
		{ConsumerIDPath("g", "g_h-1-2"), "/consumers/g/ids/g_h-1-2"},
		{OwnersPath("g", "t1"), "/consumers/g/owners/t1"},
		{OwnerPath("g", "t1", PartitionName(1, 10)), "/consumers/g/owners/t1/1-10"},
		{OffsetsPath("g", "t1"), "/consumers/g/offsets/t1"},
		{OffsetPath("g", "t1", "2-0"), "/consumers/g/offsets/t1/2-0"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestParsePartitionName(t *testing.T) {
	b, p, err := ParsePartitionName("12-7")
	if err != nil || b != 12 || p != 7 {
		t.Fatalf("ParsePartitionName(12-7) = %d, %d, %v", b, p, err)
	}
	for _, bad := range []string{"", "1", "-1", "1-", "a-1", "1-b", "1--2"} {
		if _, _, err := ParsePartitionName(bad); !errors.Is(err, ErrBadPath) {
			t.Errorf("ParsePartitionName(%q) err = %v, want ErrBadPath", bad, err)
		}
	}
}

func TestParseConnect(t *testing.T) {
	s, root, err := ParseConnect("a:1,b:2/kafka/x/")
	if err != nil || len(s) != 2 || s[0] != "a:1" || s[1] != "b:2" || root != "/kafka/x" {
		t.Fatalf("ParseConnect = %v %q %v", s, root, err)
	}
	if _, root, _ := ParseConnect("a:1/"); root != "" {
		t.Errorf("chroot of a:1/ = %q, want none", root)
	}
	for _, bad := range []string{"", "/chroot", "a:1/x//y", "a:1/../x"} {
		if _, _, err := ParseConnect(bad); !errors.Is(err, ErrBadConnect) {
			t.Errorf("ParseConnect(%q) err = %v, want ErrBadConnect", bad, err)
		}
	}
}

package mirror

import (
	"errors"
	"testing"

	"github.com/kafkarepro/kafkarepro/kafka/consumer"
	"github.com/kafkarepro/kafkarepro/kafka/producer"
)

// The filter matches whole topic names; a whitelist or blacklist that is not
// a valid expression, or both or neither, is a clear configuration error.
func TestFilter(t *testing.T) {
	keep, err := Filter("clicks|views.*", "")
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]bool{"clicks": true, "views-eu": true, "clicks2": false, "myclicks": false} {
		if keep(topic) != want {
			t.Errorf("whitelist: %s kept=%v, want %v", topic, !want, want)
		}
	}
	list, err := Filter("events,clicks", "") // 0.7.0's comma list
	if err != nil || !list("events") || !list("clicks") || list("events,clicks") {
		t.Errorf("comma list: %v", err)
	}
	drop, err := Filter("", "audit|tmp.*")
	if err != nil {
		t.Fatal(err)
	}
	if drop("audit") || drop("tmp1") || !drop("clicks") {
		t.Errorf("blacklist kept the wrong topics")
	}
	for _, c := range [][2]string{{"clicks[", ""}, {"", "(a"}, {"a", "b"}, {"", ""}} {
		if _, err := Filter(c[0], c[1]); !errors.Is(err, ErrBadConfig) {
			t.Errorf("whitelist %q blacklist %q: err %v", c[0], c[1], err)
		} else {
			t.Log(err)
		}
	}
}

func TestNewChecksConfig(t *testing.T) {
	gc := consumer.DefaultGroupConfig()
	pc := producer.DefaultConfig()
	pc.BrokerList = "0:127.0.0.1:1"
	for _, c := range []Config{
		{Target: pc, Whitelist: ".*", NumStreams: 1, NumProducers: 1},                                      // no source
		{Sources: []consumer.GroupConfig{gc}, Target: pc, Whitelist: ".*", NumStreams: 1, NumProducers: 1}, // no groupid
		{Sources: []consumer.GroupConfig{gc}, Target: pc, Whitelist: ".*", NumStreams: 0, NumProducers: 1},
	} {
		if _, err := New(c); !errors.Is(err, ErrBadConfig) {
			t.Errorf("%+v: err %v", c, err)
		}
	}
}

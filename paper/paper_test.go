package paper

import (
	"errors"
	"testing"
)

func TestLoadStatedNumbers(t *testing.T) {
	f, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		batch int
		want  float64
	}{{1, 50000}, {50, 400000}}
	for _, c := range cases {
		got, err := f.ProducerRate("kafka", c.batch)
		if err != nil || got.MsgPerS != c.want || got.UpperBound {
			t.Errorf("kafka producer batch %d = %+v, %v; want %v stated exactly", c.batch, got, err, c.want)
		}
	}
	c, err := f.ConsumerRate("kafka")
	if err != nil || c.MsgPerS != 22000 {
		t.Errorf("kafka consumer = %+v, %v; want 22000", c, err)
	}
	if k, _ := f.OverheadBytes("kafka"); k != 9 {
		t.Errorf("kafka overhead = %v, want 9", k)
	}
	if a, _ := f.OverheadBytes("activemq"); a != 144 {
		t.Errorf("activemq overhead = %v, want 144", a)
	}
	if f.Storage.ActiveMQMoreSpacePercent != 70 {
		t.Errorf("more space = %v, want 70", f.Storage.ActiveMQMoreSpacePercent)
	}
	if f.Setup.Messages != 10000000 || f.Setup.MessageSize != 200 {
		t.Errorf("setup = %+v", f.Setup)
	}
}

// The numbers read off figures 4 and 5 must respect the bounds the text states.
func TestUpperBoundsRespectText(t *testing.T) {
	f, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	k1, _ := f.ProducerRate("kafka", 1)
	k50, _ := f.ProducerRate("kafka", 50)
	kc, _ := f.ConsumerRate("kafka")
	for _, other := range []string{"activemq", "rabbitmq"} {
		p, err := f.ProducerRate(other, 1)
		if err != nil || !p.UpperBound {
			t.Fatalf("%s producer = %+v, %v; want an upper bound", other, p, err)
		}
		r, _ := f.Ratio("kafka_producer_over_" + other)
		if k1.MsgPerS/p.MsgPerS < r.Min || k50.MsgPerS/p.MsgPerS < r.Min {
			t.Errorf("%s producer %v breaks the paper's ratio %s >= %v", other, p.MsgPerS, r.Name, r.Min)
		}
		c, err := f.ConsumerRate(other)
		if err != nil || !c.UpperBound {
			t.Fatalf("%s consumer = %+v, %v", other, c, err)
		}
		rc, _ := f.Ratio("kafka_consumer_over_" + other)
		if kc.MsgPerS/c.MsgPerS < rc.Min {
			t.Errorf("%s consumer %v breaks %s >= %v", other, c.MsgPerS, rc.Name, rc.Min)
		}
	}
}

func TestNotFound(t *testing.T) {
	f, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ProducerRate("kafka", 7); !errors.Is(err, ErrNotFound) {
		t.Errorf("batch 7: err = %v, want ErrNotFound", err)
	}
	if _, err := f.OverheadBytes("rabbitmq"); !errors.Is(err, ErrNotFound) {
		t.Errorf("rabbitmq overhead: err = %v, want ErrNotFound", err)
	}
	if _, err := Parse([]byte(`{"producer":[]}`)); err == nil {
		t.Error("Parse of an empty document succeeded")
	}
}

package replication

import (
	"errors"
	"reflect"
	"testing"
)

func TestAssignSpreadsLeadersAndFollowers(t *testing.T) {
	// The textbook's topic: three brokers, one partition, three replicas, start 1: "Replicas: 1,2,0".
	a, err := Assign([]int32{0, 1, 2}, 1, 3, 1, 0)
	if err != nil || !reflect.DeepEqual(a, Assignment{{1, 2, 0}}) {
		t.Fatalf("Assign = %v, %v; want [[1 2 0]]", a, err)
	}
	// Six partitions on three brokers: each broker leads two, and no partition has a broker twice.
	a, err = Assign([]int32{0, 1, 2}, 6, 2, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	leads := map[int32]int{}
	for p, rs := range a {
		leads[rs[0]]++
		if rs[0] == rs[1] {
			t.Errorf("partition %d: %v", p, rs)
		}
	}
	if !reflect.DeepEqual(leads, map[int32]int{0: 2, 1: 2, 2: 2}) {
		t.Errorf("leaders %v, want two each", leads)
	}
}

func TestAssignRefusesTooHighAReplicationFactor(t *testing.T) {
	if _, err := Assign([]int32{0, 1}, 1, 3, -1, -1); !errors.Is(err, ErrBadAssignment) {
		t.Fatalf("err = %v, want ErrBadAssignment", err)
	}
}

func TestParseAssignmentFlag(t *testing.T) {
	a, err := ParseAssignmentFlag("1:2:0,2:0:1")
	if err != nil || !reflect.DeepEqual(a, Assignment{{1, 2, 0}, {2, 0, 1}}) {
		t.Fatalf("got %v, %v", a, err)
	}
	for _, bad := range []string{"1:1", "1:2,3", "a:b", "", "1:-2"} {
		if _, err := ParseAssignmentFlag(bad); !errors.Is(err, ErrBadAssignment) {
			t.Errorf("%q: err = %v, want ErrBadAssignment", bad, err)
		}
	}
}

func TestZooKeeperJSON(t *testing.T) {
	a := Assignment{{1, 2, 0}, {2, 0, 1}}
	data := MarshalAssignment(a)
	if string(data) != `{"version":1,"partitions":{"0":[1,2,0],"1":[2,0,1]}}` {
		t.Errorf("assignment JSON %s", data)
	}
	if back, err := ParseAssignment("t", data); err != nil || !reflect.DeepEqual(back, a) {
		t.Errorf("ParseAssignment: %v, %v", back, err)
	}
	if _, err := ParseAssignment("t", nil); !errors.Is(err, ErrNotReplicated) {
		t.Errorf("empty data (a 0.7 topic): err = %v, want ErrNotReplicated", err)
	}
	s := State{ControllerEpoch: 3, Leader: 1, LeaderEpoch: 7, ISR: []int32{1, 2, 0}}
	if got := string(s.Marshal()); got != `{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2,0]}` {
		t.Errorf("state JSON %s", got)
	}
	if back, err := ParseState(s.Marshal(), 4); err != nil || back.ZKVersion != 4 || back.Leader != 1 || len(back.ISR) != 3 {
		t.Errorf("ParseState: %+v, %v", back, err)
	}
	if got := string(MarshalElection([]TopicPartition{{"t", 0}})); got != `{"partitions":[{"topic":"t","partition":0}]}` {
		t.Errorf("election JSON %s", got)
	}
}

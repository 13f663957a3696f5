package replication

import (
	"reflect"
	"strings"
	"testing"
)

// The controller's rules (Decide), each sentence of the package doc's controller section and of
// docs/PROTOCOL.md §10 "broker epochs" as a case: what the controller knows, what it must decide.
func TestDecide(t *testing.T) {
	replicas := []int32{0, 1, 2}
	// Broker epochs as the state node recorded them (the czxids of the registrations the ISR was in
	// sync in), and the same brokers registered again (a restart or a new session: a larger czxid).
	recorded := map[int32]int64{0: 100, 1: 101, 2: 102}
	again := map[int32]int64{0: 200, 1: 201, 2: 202}
	state := func(leader, epoch int32, isr []int32, epochs map[int32]int64) State {
		return State{ControllerEpoch: 1, Leader: leader, Version: 1, LeaderEpoch: epoch, ISR: isr, BrokerEpochs: epochs, ZKVersion: 4}
	}
	live := func(ids ...int32) map[int32]int64 {
		out := map[int32]int64{}
		for _, id := range ids {
			out[id] = recorded[id]
		}
		return out
	}
	restarted := func(m map[int32]int64, ids ...int32) map[int32]int64 {
		for _, id := range ids {
			m[id] = again[id]
		}
		return m
	}
	pick := func(ids ...int32) map[int32]int64 {
		out := map[int32]int64{}
		for _, id := range ids {
			out[id] = recorded[id]
		}
		return out
	}
	pickAgain := func(ids ...int32) map[int32]int64 {
		out := map[int32]int64{}
		for _, id := range ids {
			out[id] = again[id]
		}
		return out
	}
	cases := []struct {
		name    string
		f       Facts
		change  bool
		want    State // when change
		ask     []int32
		why     string // a part of Decision.Why
		deposed bool
	}{
		{
			name:   "a new partition: the first live replica leads, the live replicas are the ISR, with their epochs",
			f:      Facts{Replicas: replicas, Live: live(1, 2)},
			change: true, want: State{Leader: 1, ISR: []int32{1, 2}, BrokerEpochs: pick(1, 2), ZKVersion: -1},
		},
		{
			name:   "a new partition with no live replica: offline, every replica counts as in sync",
			f:      Facts{Replicas: replicas, Live: live()},
			change: true, want: State{Leader: -1, ISR: []int32{0, 1, 2}, ZKVersion: -1},
		},
		{
			name: "nothing changed: nothing written",
			f:    Facts{Exists: true, State: state(0, 3, []int32{0, 1, 2}, recorded), Replicas: replicas, Live: live(0, 1, 2)},
		},
		{
			name:   "a broker dies: the first live ISR member in assignment order leads, epoch + 1, the dead one leaves the ISR",
			f:      Facts{Exists: true, State: state(0, 3, []int32{0, 1, 2}, recorded), Replicas: replicas, Live: live(1, 2)},
			change: true, want: state(1, 4, []int32{1, 2}, pick(1, 2)), why: "leader election",
		},
		{
			name:   "a follower dies: it leaves the ISR, the leader and its epoch stay",
			f:      Facts{Exists: true, State: state(0, 3, []int32{0, 1, 2}, recorded), Replicas: replicas, Live: live(0, 1)},
			change: true, want: state(0, 3, []int32{0, 1}, pick(0, 1)), why: "leave the ISR",
		},
		{
			// The lost-acknowledged-writes case: the leader's machine lost its unflushed end and the broker
			// registered again before the controller saw it gone. It must not go on leading in the same epoch.
			name:   "the leader registered again (a restart the controller did not see): another ISR member leads, epoch + 1",
			f:      Facts{Exists: true, State: state(0, 0, []int32{0, 1, 2}, recorded), Replicas: replicas, Live: restarted(live(0, 1, 2), 0)},
			change: true, want: state(1, 1, []int32{1, 2}, pick(1, 2)), why: "broker 0 registered again",
		},
		{
			name:   "a follower registered again: it leaves the ISR until its leader takes it back",
			f:      Facts{Exists: true, State: state(0, 2, []int32{0, 1, 2}, recorded), Replicas: replicas, Live: restarted(live(0, 1, 2), 2)},
			change: true, want: state(0, 2, []int32{0, 1}, pick(0, 1)), why: "registered-again brokers leave the ISR",
		},
		{
			name: "every ISR member registered again, one not yet: offline, the ISR and its epochs kept",
			f: Facts{Exists: true, State: state(0, 0, []int32{0, 1, 2}, recorded), Replicas: replicas,
				Live: pickAgain(0, 1)},
			change: true, want: state(-1, 0, []int32{0, 1, 2}, recorded), why: "offline",
		},
		{
			name: "already offline and still waiting: nothing written",
			f: Facts{Exists: true, State: state(-1, 0, []int32{0, 1, 2}, recorded), Replicas: replicas,
				Live: pickAgain(0, 1)},
		},
		{
			name: "every ISR member registered again, all back: ask each where its log ends",
			f: Facts{Exists: true, State: state(-1, 0, []int32{0, 1, 2}, recorded), Replicas: replicas,
				Live: pickAgain(0, 1, 2)},
			ask: []int32{0, 1, 2},
		},
		{
			name: "every ISR member registered again, some answered: ask the rest",
			f: Facts{Exists: true, State: state(-1, 0, []int32{0, 1, 2}, recorded), Replicas: replicas,
				Live: pickAgain(0, 1, 2), LogEnds: map[int32]LogEnd{1: {0, 900}}},
			ask: []int32{0, 2},
		},
		{
			// The whole cluster lost power: 0 and 1 lost their unflushed ends, 2 nothing. The longest log
			// holds every committed message any of them holds; it leads alone until the others catch up.
			name: "every ISR member answered: the longest log leads in a new epoch, with an ISR of itself",
			f: Facts{Exists: true, State: state(0, 0, []int32{0, 1, 2}, recorded), Replicas: replicas,
				Live: pickAgain(0, 1, 2), LogEnds: map[int32]LogEnd{0: {0, 9000}, 1: {0, 8000}, 2: {0, 17000}}},
			change: true, want: state(2, 1, []int32{2}, pickAgain(2)), why: "the longest log (broker 2",
		},
		{
			name: "a newer epoch beats a longer log (its extra bytes may be an old leader's uncommitted tail)",
			f: Facts{Exists: true, State: state(-1, 4, []int32{0, 1}, recorded), Replicas: replicas,
				Live: pickAgain(0, 1), LogEnds: map[int32]LogEnd{0: {3, 9000}, 1: {4, 5000}}},
			change: true, want: state(1, 5, []int32{1}, pickAgain(1)),
		},
		{
			name: "equal logs: assignment order decides",
			f: Facts{Exists: true, State: state(-1, 4, []int32{2, 1}, recorded), Replicas: replicas,
				Live: pickAgain(1, 2), LogEnds: map[int32]LogEnd{1: {4, 5000}, 2: {4, 5000}}},
			change: true, want: state(1, 5, []int32{1}, pickAgain(1)),
		},
		{
			name: "no live ISR member, unclean election off: offline",
			f: Facts{Exists: true, State: state(0, 3, []int32{0}, pick(0)), Replicas: replicas,
				Live: live(1, 2)},
			change: true, want: state(-1, 3, []int32{0}, pick(0)), why: "offline",
		},
		{
			name: "no live ISR member, unclean election on: the first live replica leads with an ISR of itself",
			f: Facts{Exists: true, State: state(0, 3, []int32{0}, pick(0)), Replicas: replicas,
				Live: live(1, 2), Unclean: true},
			change: true, want: state(1, 4, []int32{1}, pick(1)), why: "UNCLEAN",
		},
		{
			name: "unclean election also covers every ISR member having registered again: no waiting",
			f: Facts{Exists: true, State: state(0, 3, []int32{0, 1}, recorded), Replicas: replicas,
				Live: pickAgain(0, 1), Unclean: true},
			change: true, want: state(0, 4, []int32{0}, pickAgain(0)), why: "UNCLEAN",
		},
		{
			name: "an offline partition whose ISR member returns in the same life: it leads",
			f: Facts{Exists: true, State: state(-1, 3, []int32{0}, pick(0)), Replicas: replicas,
				Live: live(0, 1)},
			change: true, want: state(0, 4, []int32{0}, pick(0)), why: "leader election",
		},
		{
			name: "preferred replica election: the preferred replica, in the ISR, leads in a new epoch",
			f: Facts{Exists: true, State: state(1, 3, []int32{1, 0, 2}, recorded), Replicas: replicas,
				Live: live(0, 1, 2), Preferred: true},
			change: true, want: state(0, 4, []int32{1, 0, 2}, recorded), why: "preferred",
		},
		{
			name: "preferred replica election with the preferred replica outside the ISR: nothing",
			f: Facts{Exists: true, State: state(1, 3, []int32{1, 2}, pick(1, 2)), Replicas: replicas,
				Live: live(0, 1, 2), Preferred: true},
		},
		{
			name: "a deposed controller: the state node was written by a newer one, nothing is decided",
			f: Facts{Exists: true, State: State{ControllerEpoch: 2, Leader: 0, LeaderEpoch: 3, ISR: []int32{0, 1, 2}, BrokerEpochs: recorded},
				Replicas: replicas, Live: live(1, 2)},
			deposed: true,
		},
		{
			name: "a state node without broker epochs (written before they existed): members count as unchanged, epochs recorded",
			f: Facts{Exists: true, State: state(0, 3, []int32{0, 1, 2}, nil), Replicas: replicas,
				Live: pickAgain(0, 1, 2)},
			change: true, want: state(0, 3, []int32{0, 1, 2}, again), why: "broker epochs recorded",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.f.ControllerEpoch = 1 // the states above were written by this controller
			d := Decide(c.f)
			if d.Deposed != c.deposed {
				t.Fatalf("deposed = %v, want %v", d.Deposed, c.deposed)
			}
			if !reflect.DeepEqual(d.Ask, c.ask) {
				t.Fatalf("asks %v, want %v", d.Ask, c.ask)
			}
			if d.Change != c.change {
				t.Fatalf("change = %v (%s, state %+v), want %v", d.Change, d.Why, d.State, c.change)
			}
			if !c.change {
				if !reflect.DeepEqual(d.State, c.f.State) {
					t.Errorf("unchanged decision returns %+v, want the state as read %+v", d.State, c.f.State)
				}
				return
			}
			got := d.State
			got.ControllerEpoch, got.Version = c.want.ControllerEpoch, c.want.Version // set by the I/O layer
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("state\n got  %+v\n want %+v", got, c.want)
			}
			if !strings.Contains(d.Why, c.why) {
				t.Errorf("why %q does not say %q", d.Why, c.why)
			}
		})
	}
}

// A written state round-trips through its JSON with the broker epochs, and a node written by 0.8 (no
// broker_epochs) parses with none.
func TestStateBrokerEpochsJSON(t *testing.T) {
	s := State{ControllerEpoch: 3, Leader: 1, LeaderEpoch: 7, ISR: []int32{1, 2}, BrokerEpochs: map[int32]int64{1: 4294967339, 2: 4294967352}}
	data := s.Marshal()
	want := `{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2],"broker_epochs":{"1":4294967339,"2":4294967352}}`
	if string(data) != want {
		t.Fatalf("Marshal = %s\nwant      %s", data, want)
	}
	got, err := ParseState(data, 5)
	if err != nil {
		t.Fatal(err)
	}
	s.Version, s.ZKVersion = 1, 5
	if !reflect.DeepEqual(got, s) {
		t.Errorf("ParseState(Marshal) = %+v, want %+v", got, s)
	}
	old, err := ParseState([]byte(`{"controller_epoch":3,"leader":1,"version":1,"leader_epoch":7,"isr":[1,2]}`), 0)
	if err != nil || old.BrokerEpochs != nil {
		t.Errorf("0.8's node: %+v, %v; want no broker epochs", old, err)
	}
}

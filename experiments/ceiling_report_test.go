package experiments

import (
	"strings"
	"testing"

	"github.com/kafkarepro/kafkarepro/compare"
)

// A probe run in turns with our test repeated is set beside the medians
// of its rounds, and the figure's own pass is named beside the probe's
// median: rounds (probe, ours) 10 M/9 M, 12 M/8 M, 11 M/10 M have the
// medians 11 M and 9 M, 82 %; the figure's pass of 7.7 M is 70 % of 11 M.
// A probe that ran once bounds the test's own rate, and the report says
// that ratio is one reading of each side.
func TestAttachCeilingRounds(t *testing.T) {
	s := &Summary{Averages: []Average{
		{System: compare.Ours, Test: "consumer", MsgPerS: 7_700_000, OK: true},
		{System: compare.Ours, Test: "producer", Batch: 50, MsgPerS: 3_000_000, OK: true},
	}}
	AttachCeiling(s, []CeilingRow{
		{Probe: "consumer", MsgPerS: 11_000_000, OursMsgPerS: 9_000_000, Seconds: 0.9, Rounds: []CeilingRound{
			{10_000_000, 9_000_000}, {12_000_000, 8_000_000}, {11_000_000, 10_000_000}}},
		{Probe: "producer-batch50", MsgPerS: 4_000_000, Seconds: 2.5},
	})
	c, b50 := s.Ceiling[0], s.Ceiling[1]
	if c.TestMsgPerS != 7_700_000 || c.OursMsgPerS != 9_000_000 || c.Fraction != 9.0/11 {
		t.Errorf("consumer row = %+v, want the test 7.7 M beside ours 9 M, 9/11 of the probe", c)
	}
	if b50.TestMsgPerS != 3_000_000 || b50.OursMsgPerS != 3_000_000 || b50.Fraction != 0.75 {
		t.Errorf("batch-50 row = %+v, want ours = the test, 3 M / 4 M", b50)
	}
	sec := ceilingSection(s)
	for _, want := range []string{
		"| consumer | 11,000,000 | 0.90 | 0 MB | kafka consumer | 9,000,000 | 82% |",
		"| producer-batch50 | 4,000,000 | 2.50 | 0 MB | kafka producer, batch 50 | 3,000,000 | 75% |",
		"**consumer, in turns**",
		"round 1 probe 10,000,000, ours 9,000,000 (90%); round 2 probe 12,000,000, ours 8,000,000 (67%); round 3 probe 11,000,000, ours 10,000,000 (91%);",
		"the figure's own pass 7,700,000 msg/s, 70% of the probe's median.",
		// The consumer, run in turns, is not among the probes read once.
		"**Once each**: producer-batch50 ran once, beside the figure's one pass,",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("ceiling section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Count(sec, "in turns") != 1 {
		t.Errorf("only the consumer ran in turns:\n%s", sec)
	}
}

// A median of ours above the probe's is said to be at the ceiling, with the
// spread of the turns: rounds 9.4 M/10.3 M (109 %), 14.9 M/9.2 M (61 %),
// 9.7 M/11.0 M (113 %), medians 9.7 M and 10.3 M, 106 %.
func TestCeilingRoundsAboveTheProbe(t *testing.T) {
	s := &Summary{Averages: []Average{{System: compare.Ours, Test: "consumer", MsgPerS: 8_400_000, OK: true}}}
	AttachCeiling(s, []CeilingRow{{Probe: "consumer", MsgPerS: 9_700_000, OursMsgPerS: 10_300_000, Seconds: 1, Rounds: []CeilingRound{
		{9_400_000, 10_300_000}, {14_900_000, 9_200_000}, {9_700_000, 11_000_000}}}})
	sec := ceilingSection(s)
	for _, want := range []string{
		"**consumer: ours is above the probe** (106% on the medians of 3 turns, 62–113% turn by turn): within the spread of the turns",
		"the figure's own pass 8,400,000 msg/s, 87% of the probe's median.",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("ceiling section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "a probe lasting") {
		t.Errorf("a probe run in turns is not a single reading:\n%s", sec)
	}
	if strings.Contains(sec, "Once each") {
		t.Errorf("no probe ran once here:\n%s", sec)
	}
}

package consumer

import (
	"fmt"
	"reflect"
	"testing"
)

func TestAssignRange(t *testing.T) {
	cases := []struct {
		name       string
		partitions []string
		streams    []string
		want       map[string][]string
	}{
		{
			// Sorted as strings: 1-0, 1-1, 1-10, 1-2 — "1-10" comes before "1-2".
			name:       "string order 1-10 before 1-2",
			partitions: []string{"1-2", "1-0", "1-10", "1-1"},
			streams:    []string{"c-1", "c-0"},
			want:       map[string][]string{"c-0": {"1-0", "1-1"}, "c-1": {"1-10", "1-2"}},
		},
		{
			name:       "remainder goes to the first streams",
			partitions: []string{"0-0", "0-1", "0-2", "0-3", "1-0", "1-1", "1-2", "1-3"},
			streams:    []string{"a-0", "b-0", "c-0"},
			want: map[string][]string{
				"a-0": {"0-0", "0-1", "0-2"},
				"b-0": {"0-3", "1-0", "1-1"},
				"c-0": {"1-2", "1-3"},
			},
		},
		{
			name:       "more streams than partitions",
			partitions: []string{"1-1", "1-0"},
			streams:    []string{"s-3", "s-2", "s-1", "s-0"},
			want:       map[string][]string{"s-0": {"1-0"}, "s-1": {"1-1"}, "s-2": {}, "s-3": {}},
		},
		{
			name:       "equal numbers",
			partitions: []string{"2-0", "1-0", "3-0"},
			streams:    []string{"z", "x", "y"},
			want:       map[string][]string{"x": {"1-0"}, "y": {"2-0"}, "z": {"3-0"}},
		},
		{
			name:       "one stream takes everything",
			partitions: []string{"1-2", "1-10", "0-0"},
			streams:    []string{"only-0"},
			want:       map[string][]string{"only-0": {"0-0", "1-10", "1-2"}},
		},
		{
			name:       "stream ids sorted as strings too",
			partitions: []string{"0-0", "0-1", "0-2"},
			streams:    []string{"g_h-2", "g_h-10", "g_h-1"},
			want:       map[string][]string{"g_h-1": {"0-0"}, "g_h-10": {"0-1"}, "g_h-2": {"0-2"}},
		},
		{
			name:       "no partitions",
			partitions: nil,
			streams:    []string{"a", "b"},
			want:       map[string][]string{"a": {}, "b": {}},
		},
		{
			name:       "no streams",
			partitions: []string{"0-0"},
			streams:    nil,
			want:       map[string][]string{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := append([]string(nil), tc.partitions...)
			got := map[string][]string{}
			for _, a := range AssignRange(tc.partitions, tc.streams) {
				got[a.Stream] = append([]string{}, a.Partitions...)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("AssignRange(%q, %q) = %v, want %v", tc.partitions, tc.streams, got, tc.want)
			}
			if !reflect.DeepEqual(in, tc.partitions) {
				t.Fatalf("AssignRange modified its input: %q became %q", in, tc.partitions)
			}
		})
	}
}

// TestAssignRangeCoversEveryPartitionOnce checks the property the group relies on: for any P and C every
// partition has exactly one owner and shares differ by at most one.
func TestAssignRangeCoversEveryPartitionOnce(t *testing.T) {
	for p := 0; p <= 13; p++ {
		for c := 1; c <= 6; c++ {
			var parts, streams []string
			for i := 0; i < p; i++ {
				parts = append(parts, fmt.Sprintf("%d-%d", i%3, i))
			}
			for i := 0; i < c; i++ {
				streams = append(streams, fmt.Sprintf("g_host-%d", i))
			}
			owner := map[string]string{}
			lo, hi := p, 0
			for _, a := range AssignRange(parts, streams) {
				lo, hi = min(lo, len(a.Partitions)), max(hi, len(a.Partitions))
				for _, x := range a.Partitions {
					if prev, dup := owner[x]; dup {
						t.Fatalf("P=%d C=%d: %s owned by %s and %s", p, c, x, prev, a.Stream)
					}
					owner[x] = a.Stream
				}
			}
			if len(owner) != p {
				t.Fatalf("P=%d C=%d: %d partitions owned, want %d", p, c, len(owner), p)
			}
			if hi-lo > 1 {
				t.Fatalf("P=%d C=%d: shares range from %d to %d", p, c, lo, hi)
			}
		}
	}
}

func TestPartitionsFor(t *testing.T) {
	parts := []string{"1-0", "1-1", "1-2"}
	streams := []string{"b-0", "a-0"}
	if got := PartitionsFor("a-0", parts, streams); !reflect.DeepEqual(got, []string{"1-0", "1-1"}) {
		t.Fatalf("PartitionsFor(a-0) = %q", got)
	}
	if got := PartitionsFor("b-0", parts, streams); !reflect.DeepEqual(got, []string{"1-2"}) {
		t.Fatalf("PartitionsFor(b-0) = %q", got)
	}
	if got := PartitionsFor("nobody", parts, streams); got != nil {
		t.Fatalf("PartitionsFor(nobody) = %q, want nil", got)
	}
}

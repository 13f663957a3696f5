package main

import (
	"errors"
	"testing"

	"github.com/kafkarepro/kafkarepro/compare"
)

type fakeServer struct{ io *compare.IOCounters }

func (fakeServer) Endpoint() compare.Endpoint { return compare.Endpoint{} }
func (fakeServer) Stop() error                { return nil }

type localServer struct{ fakeServer }

func (s localServer) IOCounters() (compare.IOCounters, error) { return *s.io, nil }

// The harness reads the server's I/O counters through the wrapped system:
// a local server's are passed on, a container's are not available.
func TestWithEndpointPassesIOCounters(t *testing.T) {
	want := compare.IOCounters{WriteBytes: 7, WChar: 9, Processes: 1}
	var sys compare.System = withEndpoint{srv: localServer{fakeServer{&want}}, provider: "local"}
	got, err := sys.(compare.ProcessIO).IOCounters()
	if err != nil || got != want {
		t.Errorf("local server: IOCounters = %+v, %v; want %+v", got, err, want)
	}
	sys = withEndpoint{srv: fakeServer{}, provider: "containers"}
	if _, err := sys.(compare.ProcessIO).IOCounters(); !errors.Is(err, compare.ErrNoProcessIO) {
		t.Errorf("container: err = %v, want compare.ErrNoProcessIO", err)
	}
}

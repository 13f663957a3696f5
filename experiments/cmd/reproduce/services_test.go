package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
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

// fakeContainers stands in for the containers provider.
type fakeContainers struct{}

func (fakeContainers) Name() string     { return "containers" }
func (fakeContainers) DataRoot() string { return "" }
func (fakeContainers) Close() error     { return nil }
func (fakeContainers) Start(context.Context, string) (compare.Server, error) {
	return nil, errors.New("fake")
}

// --services auto takes containers whenever a Docker engine answers and the
// images can be made, and says why; otherwise local, saying why not.
// containers asked for fails when the images cannot be made.
func TestProviderChoice(t *testing.T) {
	savedNew, savedVersion, savedImages := newContainersProvider, dockerVersion, ensureImages
	defer func() { newContainersProvider, dockerVersion, ensureImages = savedNew, savedVersion, savedImages }()
	newContainersProvider = func(options) (provider, error) { return fakeContainers{}, nil }
	noDocker := func(context.Context) (string, error) { return "", errors.New("cannot connect") }
	docker := func(context.Context) (string, error) { return "99.1", nil }
	imagesOK := func(_ context.Context, w io.Writer) (string, error) {
		fmt.Fprintln(w, "building...")
		return "scripts/build-images.sh, 0.7 s: zookeeper:3.8 reused", nil
	}
	imagesFail := func(context.Context, io.Writer) (string, error) { return "", errors.New("debootstrap missing") }
	for _, tc := range []struct {
		services        string
		version         func(context.Context) (string, error)
		images          func(context.Context, io.Writer) (string, error)
		want, why       string
		wantErr, output bool
	}{
		{"auto", docker, imagesOK, "containers", "auto: Docker 99.1 answered; images: scripts/build-images.sh, 0.7 s: zookeeper:3.8 reused", false, true},
		{"auto", noDocker, imagesOK, "local", "auto: no Docker engine answered (cannot connect), so the local servers", false, false},
		{"auto", docker, imagesFail, "local", "auto: Docker 99.1 answered, but the containers could not be had (debootstrap missing), so the local servers", false, false},
		{"containers", docker, imagesOK, "containers", "asked for (--services containers); images: scripts/build-images.sh", false, true},
		{"containers", docker, imagesFail, "", "", true, false},
		{"local", docker, imagesOK, "local", "asked for (--services local)", false, false},
	} {
		dockerVersion, ensureImages = tc.version, tc.images
		var progress bytes.Buffer
		p, why, err := newProvider(context.Background(), options{services: tc.services}, slog.New(slog.DiscardHandler), &progress)
		name := tc.services + " with " + tc.want
		if tc.wantErr {
			if err == nil {
				t.Errorf("%s: no error, want one", tc.services)
				p.Close()
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if p.Name() != tc.want || !strings.HasPrefix(why, tc.why) {
			t.Errorf("%s: provider %s, why %q; want %s, %q...", name, p.Name(), why, tc.want, tc.why)
		}
		if got := progress.Len() > 0; got != tc.output {
			t.Errorf("%s: image progress shown %v, want %v", name, got, tc.output)
		}
		p.Close()
	}
}

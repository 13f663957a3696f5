package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/kafkarepro/kafkarepro/compare"
	"github.com/kafkarepro/kafkarepro/compare/local"
	"github.com/kafkarepro/kafkarepro/compare/ours"
	"github.com/kafkarepro/kafkarepro/experiments"
)

// provider is a compare.Provider that this command can also clean up.
type provider interface {
	compare.Provider
	DataRoot() string // where servers keep data on the host ("" if not there)
	Close() error
}

type localProvider struct{ *local.Provider }

func (p localProvider) DataRoot() string { return p.Root() }

// The containers provider (compare/containers) and what choosing it needs;
// containers.go sets them. Without that file (nil hooks) --services
// containers fails with ErrNoContainers and auto takes the local provider.
var (
	// newContainersProvider starts servers in Docker through testcontainers-go.
	newContainersProvider func(o options) (provider, error)
	// dockerVersion returns the Docker engine's version if one answers.
	dockerVersion func(ctx context.Context) (string, error)
	// ensureImages makes the images exist (reused, pulled, or built as
	// stand-ins by scripts/build-images.sh) and says what it did and how long
	// it took; the script's progress goes to progress.
	ensureImages func(ctx context.Context, progress io.Writer) (string, error)
)

// newProvider returns the provider o.services asks for and a sentence on
// why it is the one, for the start of the run and REPORT.md:
//   - local: the Debian packages on this machine (scripts/<svc>.sh);
//   - containers: Docker, with the images made first (an error if they
//     cannot be);
//   - auto, the default: containers whenever a Docker engine answers and the
//     images can be made, local otherwise.
func newProvider(ctx context.Context, o options, logger *slog.Logger, progress io.Writer) (provider, string, error) {
	switch o.services {
	case "containers":
		if newContainersProvider == nil {
			return nil, "", fmt.Errorf("%w: compare/containers is not wired into experiments/cmd/reproduce yet (see services.go)", ErrNoContainers)
		}
		images, err := ensureImages(ctx, progress)
		if err != nil {
			return nil, "", err
		}
		p, err := newContainersProvider(o)
		return p, "asked for (--services containers); images: " + images, err
	case "auto":
		p, why := autoContainers(ctx, o, logger, progress)
		if p != nil {
			return p, why, nil
		}
		lp, err := newLocalProvider(o, logger)
		return lp, why + ", so the local servers (Debian packages, scripts/<service>.sh)", err
	}
	p, err := newLocalProvider(o, logger)
	return p, "asked for (--services local): the Debian packages on this machine (scripts/<service>.sh)", err
}

// autoContainers is --services auto's try of the containers provider: it
// returns it when a Docker engine answers and the images can be made, and
// otherwise nil and why not.
func autoContainers(ctx context.Context, o options, logger *slog.Logger, progress io.Writer) (provider, string) {
	if newContainersProvider == nil {
		return nil, "auto: this build has no containers provider"
	}
	version, err := dockerVersion(ctx)
	if err != nil {
		return nil, fmt.Sprintf("auto: no Docker engine answered (%v)", err)
	}
	images, err := ensureImages(ctx, progress)
	if err == nil {
		var p provider
		if p, err = newContainersProvider(o); err == nil {
			return p, fmt.Sprintf("auto: Docker %s answered; images: %s", version, images)
		}
	}
	logger.Warn("containers provider unavailable, using local", "error", err)
	return nil, fmt.Sprintf("auto: Docker %s answered, but the containers could not be had (%v)", version, err)
}

func newLocalProvider(o options, logger *slog.Logger) (provider, error) {
	p, err := local.New(local.Options{Keep: o.keep, Log: logger, Root: o.root, Host: o.host})
	if err != nil {
		return nil, err
	}
	return localProvider{p}, nil
}

// adapters maps each system to the function that connects its adapter to a
// started server. ActiveMQ and RabbitMQ are registered in adapters_others.go.
var adapters = map[string]func(srv compare.Server) (compare.System, error){
	"kafka": func(srv compare.Server) (compare.System, error) {
		var props map[string]string
		if p, ok := srv.(interface{ Properties() map[string]string }); ok {
			props = p.Properties()
		}
		return ours.New(srv.Endpoint(), ours.Options{ServerProperties: props})
	},
}

// target starts the system's server with the provider and connects its
// adapter; the returned stop function stops the server.
func target(prov compare.Provider, name string) experiments.Target {
	return experiments.Target{Name: name, Open: func(ctx context.Context) (compare.System, func() error, error) {
		connect, ok := adapters[name]
		if !ok {
			return nil, nil, fmt.Errorf("reproduce: no adapter for %s is built into this command yet", name)
		}
		srv, err := prov.Start(ctx, name)
		if err != nil {
			return nil, nil, err
		}
		sys, err := connect(srv)
		if err != nil {
			return nil, nil, errors.Join(err, srv.Stop())
		}
		return withEndpoint{System: sys, srv: srv, ep: srv.Endpoint(), provider: prov.Name()}, srv.Stop, nil
	}}
}

// withEndpoint adds what the provider knows about the server (version,
// where it ran) to the adapter's settings, so every result names them, and
// passes on the server's process I/O counters where the provider has them.
type withEndpoint struct {
	compare.System
	srv      compare.Server
	ep       compare.Endpoint
	provider string
}

// IOCounters implements compare.ProcessIO for the harness: the local
// provider's servers are processes on this machine; a container is not
// (compare.ErrNoProcessIO).
func (w withEndpoint) IOCounters() (compare.IOCounters, error) {
	if p, ok := w.srv.(compare.ProcessIO); ok {
		return p.IOCounters()
	}
	return compare.IOCounters{}, fmt.Errorf("%w: %s provider", compare.ErrNoProcessIO, w.provider)
}

func (w withEndpoint) Settings() map[string]string {
	m := map[string]string{}
	for k, v := range w.System.Settings() {
		m[k] = v
	}
	if m["server_version"] == "" && w.ep.Version != "" {
		m["server_version"] = w.ep.Version
	}
	m["server_started_by"] = fmt.Sprintf("%s provider, %s:%d, log %s", w.provider, w.ep.Host, w.ep.Port, w.ep.LogPath)
	return m
}

package main

import (
	"context"
	"errors"
	"fmt"
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

// newContainersProvider starts servers in Docker through testcontainers-go
// and containersAvailable tells whether it can run here; containers.go sets
// both from compare/containers. Without that file (nil hooks) --services
// containers fails with ErrNoContainers and auto falls back to local.
var (
	newContainersProvider func(o options) (provider, error)
	containersAvailable   func() bool
)

func newProvider(o options, logger *slog.Logger) (provider, error) {
	switch o.services {
	case "containers":
		if newContainersProvider == nil {
			return nil, fmt.Errorf("%w: compare/containers is not wired into experiments/cmd/reproduce yet (see services.go)", ErrNoContainers)
		}
		return newContainersProvider(o)
	case "auto":
		if newContainersProvider != nil && containersAvailable != nil && containersAvailable() {
			p, err := newContainersProvider(o)
			if err == nil {
				return p, nil
			}
			logger.Warn("containers provider failed, using local", "error", err)
		}
	}
	p, err := local.New(local.Options{Keep: o.keep, Log: logger})
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

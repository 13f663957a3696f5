package main

import (
	"context"
	"time"

	"github.com/kafkarepro/kafkarepro/compare/containers"
)

// The containers provider (compare/containers): the same servers and
// settings as the local path, in Docker containers through
// testcontainers-go. --services auto uses it when containers.Available says
// Docker and every image are there.
func init() {
	newContainersProvider = func(o options) (provider, error) {
		return containers.NewProvider(containers.Options{Keep: o.keep})
	}
	containersAvailable = func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return containers.Available(ctx) == nil
	}
}

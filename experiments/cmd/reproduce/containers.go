package main

import (
	"context"
	"io"
	"time"

	"github.com/kafkarepro/kafkarepro/compare/containers"
	"github.com/kafkarepro/kafkarepro/compare/local"
)

// The containers provider (compare/containers): the same servers and
// settings as the local path, in Docker containers through
// testcontainers-go. --services auto (the default) uses it whenever a Docker
// engine answers and the images can be made.
func init() {
	newContainersProvider = func(o options) (provider, error) {
		return containers.NewProvider(containers.Options{Keep: o.keep})
	}
	dockerVersion = func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return containers.DockerVersion(ctx)
	}
	ensureImages = func(ctx context.Context, progress io.Writer) (string, error) {
		repo, err := local.FindRepo()
		if err != nil {
			return "", err
		}
		r, err := containers.EnsureImages(ctx, repo, progress)
		return r.String(), err
	}
}

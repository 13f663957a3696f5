package containers

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
)

// DockerVersion returns the version of the Docker engine when one answers
// (a ping and its server version), and ErrNoDocker otherwise. It does not
// look at images: see EnsureImages and Available.
func DockerVersion(ctx context.Context) (string, error) {
	setup()
	cli, err := testcontainers.NewDockerClientWithOpts(ctx, client.WithAPIVersionNegotiation())
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	defer cli.Close()
	if _, err := cli.Ping(ctx, client.PingOptions{NegotiateAPIVersion: true}); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoDocker, err)
	}
	return v.Version, nil
}

// ImagesReport is what EnsureImages did.
type ImagesReport struct {
	// Notes are scripts/build-images.sh's lines, one per image:
	// "zookeeper:3.8 reused", "... pulled in 12s", "... built in 40s".
	Notes []string
	// Took is how long the script ran.
	Took time.Duration
}

// String is "scripts/build-images.sh, 0.7 s: zookeeper:3.8 reused; ...".
func (r ImagesReport) String() string {
	return fmt.Sprintf("scripts/build-images.sh, %.1f s: %s", r.Took.Seconds(), strings.Join(r.Notes, "; "))
}

// EnsureImages makes every image of DefaultImages exist with
// scripts/build-images.sh of repoDir: it reuses an image that is there, else
// pulls it, else builds a stand-in under the same name (our broker's image
// whenever the freshly built binary differs), and then checks them with
// Available. The script's progress goes to progress as it runs.
func EnsureImages(ctx context.Context, repoDir string, progress io.Writer) (ImagesReport, error) {
	start := time.Now()
	script := filepath.Join(repoDir, "scripts", "build-images.sh")
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = repoDir
	var notes bytes.Buffer
	cmd.Stdout = io.MultiWriter(&notes, progress)
	cmd.Stderr = progress
	err := cmd.Run()
	r := ImagesReport{Took: time.Since(start)}
	for _, l := range strings.Split(strings.TrimSpace(notes.String()), "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			r.Notes = append(r.Notes, strings.Join(f, " "))
		}
	}
	if err != nil {
		return r, fmt.Errorf("%w: %s failed after %.0f s: %v", ErrNoImage, script, r.Took.Seconds(), err)
	}
	if err := Available(ctx); err != nil {
		return r, fmt.Errorf("after %s: %w", script, err)
	}
	return r, nil
}

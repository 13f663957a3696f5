package perfcheck

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// ProfileTime is how long each side's benchmark of a failing path runs
// under the CPU profiler.
const ProfileTime = "2s"

// diffProfile profiles path's benchmark in both trees and returns the top
// of `go tool pprof -top -diff_base=base head`: what the head spends more
// (or less) on. The profiles and the whole listing stay in cfg.ProfileDir.
func diffProfile(ctx context.Context, cfg Config, trees map[string]*tree, path string) (string, error) {
	if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
		return "", err
	}
	slug := strings.ReplaceAll(path, "/", "_")
	profs := map[string]string{}
	for _, side := range []string{"base", "head"} {
		t := trees[side]
		prof := filepath.Join(cfg.ProfileDir, slug+"."+side+".prof")
		cmd := exec.CommandContext(ctx, t.bin, "-test.run=^$", "-test.bench="+benchPattern([]string{path}),
			"-test.benchtime="+ProfileTime, "-test.count=1", "-test.cpuprofile="+prof)
		cmd.Dir = t.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("profiling %s in %s: %v\n%s", path, side, err, tail(string(out), 2000))
		}
		profs[side] = prof
	}
	cmd := exec.CommandContext(ctx, "go", "tool", "pprof", "-top", "-nodecount=25", "-diff_base="+profs["base"], trees["head"].bin, profs["head"])
	cmd.Dir = cfg.Head
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go tool pprof -diff_base: %v: %s", err, stderr.String())
	}
	listing := filepath.Join(cfg.ProfileDir, slug+".diff.txt")
	if err := os.WriteFile(listing, out, 0o644); err != nil {
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.Join(lines[:min(len(lines), 20)], "\n") + "\n(all of it: " + listing + ")", nil
}

package perfcheck

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// hotpathPkg is the package whose test binary holds the paths, the runner
// (TestRun) and the benchmarks.
const hotpathPkg = "./kafka/internal/hotpath"

// runner is the file of TestRun. A base older than it gets the head's copy,
// so that both trees are measured the same way.
const runner = "kafka/internal/hotpath/run_test.go"

// tree is one side, built.
type tree struct {
	side, dir, bin string
	paths          map[string]int // path name → messages per operation
	order          []string
}

// git runs git in dir and returns its trimmed output.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("perfcheck: git %s in %s: %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// describeTree names a tree by its commit, with "+dirty" when its files
// differ from it ("unknown" outside a git checkout).
func describeTree(ctx context.Context, dir string) (string, error) {
	id, err := git(ctx, dir, "rev-parse", "--short=12", "HEAD")
	if err != nil {
		return "unknown", nil
	}
	if st, err := git(ctx, dir, "status", "--porcelain", "--untracked-files=no"); err == nil && st != "" {
		id += "+dirty"
	}
	return id, nil
}

// addWorktree lays out rev of repo's repository at dir with `git worktree
// add --detach`; cleanup removes it again.
func addWorktree(ctx context.Context, repo, rev, dir string) (string, string, func(), error) {
	id, err := git(ctx, repo, "rev-parse", "--verify", "--short=12", rev+"^{commit}")
	if err != nil {
		return "", "", nil, fmt.Errorf("perfcheck: base %q is not a commit of %s: %w", rev, repo, err)
	}
	if _, err := git(ctx, repo, "worktree", "add", "--detach", dir, id); err != nil {
		return "", "", nil, err
	}
	cleanup := func() {
		// context.Background: the worktree goes even when ctx has ended.
		git(context.Background(), repo, "worktree", "remove", "--force", dir)
	}
	return dir, id, cleanup, nil
}

// buildTree builds dir's hot-path test binary into work, copying the
// head's runner into a base that lacks it, and lists its paths.
func buildTree(ctx context.Context, side, dir, head, work string) (*tree, error) {
	if _, err := os.Stat(filepath.Join(dir, runner)); os.IsNotExist(err) {
		b, err := os.ReadFile(filepath.Join(head, runner))
		if err != nil {
			return nil, fmt.Errorf("perfcheck: the head has no %s: %w", runner, err)
		}
		if err := os.WriteFile(filepath.Join(dir, runner), b, 0o644); err != nil {
			return nil, err
		}
	}
	t := &tree{side: side, dir: dir, bin: filepath.Join(work, side+".test"), paths: map[string]int{}}
	cmd := exec.CommandContext(ctx, "go", "test", "-c", "-o", t.bin, hotpathPkg)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("perfcheck: go test -c %s in %s (%s): %v\n%s", hotpathPkg, dir, side, err, out)
	}
	out, err := t.command(ctx, "list", 0).Output()
	if err != nil {
		return nil, fmt.Errorf("perfcheck: listing %s's hot paths: %w", side, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		kv, ok := fields(sc.Text(), "hotpath-path:")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(kv["messages"])
		if err != nil || kv["path"] == "" {
			return nil, fmt.Errorf("perfcheck: %s: bad line %q", side, sc.Text())
		}
		t.paths[kv["path"]] = n
		t.order = append(t.order, kv["path"])
	}
	if len(t.order) == 0 {
		return nil, fmt.Errorf("perfcheck: %s's test binary lists no hot paths:\n%s", side, out)
	}
	return t, nil
}

// command is the test binary running TestRun for path (or "list") with ops
// operations, in the quiet settings of a count.
func (t *tree) command(ctx context.Context, path string, ops int, prefix ...string) *exec.Cmd {
	args := append(prefix, t.bin, "-test.run=^TestRun$", "-test.count=1")
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = t.dir
	cmd.Env = append(os.Environ(), "GODEBUG=asyncpreemptoff=1", "GOGC=off",
		"HOTPATH_RUN="+path, "HOTPATH_OPS="+strconv.Itoa(ops))
	return cmd
}

// fields parses "prefix k=v k=v" lines.
func fields(line, prefix string) (map[string]string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), prefix)
	if !ok {
		return nil, false
	}
	kv := map[string]string{}
	for _, f := range strings.Fields(rest) {
		if k, v, ok := strings.Cut(f, "="); ok {
			kv[k] = v
		}
	}
	return kv, true
}

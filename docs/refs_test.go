package docs

import (
	"os"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// documents are the hand-written documents whose references are checked. (The REPORT.md files under results/
// are written by a run and name that run's own files.)
var documents = []string{
	"README.md",
	"docs/DESIGN.md",
	"docs/PROTOCOL.md",
	"docs/PERFORMANCE.md",
	"docs/ROBUSTNESS.md",
	"docs/STREAMS.md",
	"paper/CLAIMS.md",
	"results/README.md",
	"docker/README.md",
	"textbook/README.md",
}

var (
	spanRE = regexp.MustCompile("`([^`]+)`")
	linkRE = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	qualRE = regexp.MustCompile(`^\(?\*?([a-z][a-z0-9]*)\.([A-Z]\w*)\)?(?:\.([A-Z]\w*))?(?:\(.*\))?$`)
	pathRE = regexp.MustCompile(`^[\w.-]+(?:/[\w.-]+)+/?$`)
	// dirRE is a name qualified by its package's directory: `compare/local.KafkaProperties`.
	dirRE = regexp.MustCompile(`^([\w-]+(?:/[\w-]+)+)\.([A-Z]\w*)(?:\.([A-Z]\w*))?$`)
	// goRefRE finds qualified names inside ```go blocks.
	goRefRE = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Z]\w*)(?:\.([A-Z]\w*))?`)
	identRE = regexp.MustCompile(`^[A-Za-z_]\w*$`)
)

// line is one line of a document outside fenced code blocks.
type line struct {
	doc  string
	num  int
	text string
}

func (l line) String() string { return l.doc + ":" + strconv.Itoa(l.num) }

// proseLines returns the lines of a document that are not inside ``` fences.
func proseLines(r *repo, t *testing.T, doc string) []line {
	prose, _ := docLines(r, t, doc)
	return prose
}

// docLines splits a document into its prose lines and the lines of its ```go blocks (other fenced blocks,
// shell commands and hex dumps, are neither).
func docLines(r *repo, t *testing.T, doc string) (prose, goCode []line) {
	fence := ""
	for i, text := range strings.Split(r.read(t, doc), "\n") {
		l := line{doc: doc, num: i + 1, text: text}
		if trimmed := strings.TrimSpace(text); strings.HasPrefix(trimmed, "```") {
			if fence == "" {
				fence = strings.TrimPrefix(trimmed, "```") + " "
			} else {
				fence = ""
			}
			continue
		}
		switch {
		case fence == "":
			prose = append(prose, l)
		case strings.HasPrefix(fence, "go "):
			goCode = append(goCode, l)
		}
	}
	return prose, goCode
}

// TestDocumentReferences checks every `pkg.Name`, `pkg.Type.Member`, repository path in backquotes and relative
// link of the documents.
func TestDocumentReferences(t *testing.T) {
	r := loadRepo(t)
	top := topLevel(t, r)
	names, paths, links := 0, 0, 0
	for _, doc := range documents {
		prose, goCode := docLines(r, t, doc)
		for _, l := range goCode {
			for _, m := range goRefRE.FindAllStringSubmatch(l.text, -1) {
				if found, known := r.lookup(m[1], m[2], m[3]); known && !found {
					t.Errorf("%s: Go code names %s, which package %s does not declare", l, m[0], m[1])
				} else if known {
					names++
				}
			}
		}
		for _, l := range prose {
			for _, m := range spanRE.FindAllStringSubmatch(l.text, -1) {
				switch kind, msg := checkSpan(r, top, m[1]); kind {
				case "name":
					names++
				case "path":
					paths++
				case "bad":
					t.Errorf("%s: `%s`: %s", l, m[1], msg)
				}
			}
			for _, m := range linkRE.FindAllStringSubmatch(l.text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				target, _, _ = strings.Cut(target, "#")
				rel := path.Clean(path.Join(path.Dir(l.doc), target))
				links++
				if !r.exists(rel) {
					t.Errorf("%s: link (%s): %s does not exist", l, m[1], rel)
				}
			}
		}
	}
	t.Logf("checked %d Go names, %d paths and %d links in %d documents", names, paths, links, len(documents))
	if names == 0 || paths == 0 || links == 0 {
		t.Errorf("found %d names, %d paths, %d links: the parser no longer sees the documents' references", names, paths, links)
	}
}

// topLevel lists the entries of the repository's root: a backquoted path is checked when its first element is
// one of them (so `host:port/chroot` is not). Root entries that .gitignore names (`/bin/`, build outputs that
// may or may not be there) are left out, so the check does not depend on what was built.
func topLevel(t *testing.T, r *repo) map[string]bool {
	ents, err := os.ReadDir(r.root)
	if err != nil {
		t.Fatal(err)
	}
	ignored := map[string]bool{}
	if gi, err := os.ReadFile(path.Join(r.root, ".gitignore")); err == nil {
		for _, line := range strings.Split(string(gi), "\n") {
			line = strings.TrimSpace(line)
			if name, ok := strings.CutPrefix(line, "/"); ok && !strings.ContainsAny(name, "*!?[") {
				ignored[strings.Trim(name, "/")] = true
			}
		}
	}
	top := map[string]bool{}
	for _, e := range ents {
		if !ignored[e.Name()] {
			top[e.Name()] = true
		}
	}
	return top
}

// checkSpan classifies one backquoted span and checks it: kind is "name" or "path" when it was checked and
// holds, "bad" (with why) when it was checked and does not, "" when it is neither.
func checkSpan(r *repo, top map[string]bool, s string) (kind, msg string) {
	if m := qualRE.FindStringSubmatch(s); m != nil {
		found, known := r.lookup(m[1], m[2], m[3])
		switch {
		case !known:
			return "", ""
		case found:
			return "name", ""
		case m[3] != "" && r.lookupOK(m[1], m[2]):
			return "bad", m[1] + "." + m[2] + " has no method or field " + m[3]
		default:
			return "bad", "package " + m[1] + " (" + r.dirsOf(m[1]) + ") declares no " + m[2]
		}
	}
	if m := dirRE.FindStringSubmatch(s); m != nil && r.byDir[m[1]] != nil {
		if !r.byDir[m[1]].has(m[2], m[3]) {
			return "bad", m[1] + " declares no " + strings.TrimSuffix(m[2]+"."+m[3], ".")
		}
		return "name", ""
	}
	if pathRE.MatchString(s) {
		first, _, _ := strings.Cut(s, "/")
		if !top[first] {
			return "", ""
		}
		if !r.exists(strings.TrimSuffix(s, "/")) {
			return "bad", "no such file or directory"
		}
		return "path", ""
	}
	return "", ""
}

func (r *repo) lookupOK(pkg, name string) bool {
	ok, _ := r.lookup(pkg, name, "")
	return ok
}

func (r *repo) dirsOf(pkg string) string {
	var ds []string
	for _, p := range r.byName[pkg] {
		ds = append(ds, p.dir)
	}
	return strings.Join(ds, ", ")
}

// declares reports whether a package declares name at top level or as any type's method or field.
func (p *goPackage) declares(name string) bool {
	if p.decls[name] {
		return true
	}
	for _, ms := range p.members {
		if ms[name] {
			return true
		}
	}
	return false
}

// TestClaimsReferences checks paper/CLAIMS.md's tables beyond the general rule: in a "code" cell, a bare file
// name is a file of the directory named before it and a bare identifier is declared in the file (or package)
// named before it; in a "test" cell, "dir: TestName" names a test of that directory, and the bare names after
// it are tests (or, for other identifiers, declarations) of the same directory.
func TestClaimsReferences(t *testing.T) {
	r := loadRepo(t)
	var cols []string
	files, idents, tests := 0, 0, 0
	for _, l := range proseLines(r, t, "paper/CLAIMS.md") {
		if !strings.HasPrefix(l.text, "|") {
			cols = nil
			continue
		}
		cells := splitRow(l.text)
		if cols == nil {
			cols = cells
			continue
		}
		if strings.HasPrefix(cells[0], "---") {
			continue
		}
		for i, cell := range cells {
			if i >= len(cols) {
				break
			}
			switch cols[i] {
			case "code":
				f, n := checkCodeCell(t, r, l, cell)
				files, idents = files+f, idents+n
			case "test":
				n, m := checkTestCell(t, r, l, cell)
				tests, idents = tests+n, idents+m
			}
		}
	}
	t.Logf("checked %d files, %d tests and %d identifiers in the claims' code and test columns", files, tests, idents)
	if files == 0 || tests == 0 {
		t.Errorf("found %d files and %d tests: the parser no longer sees paper/CLAIMS.md's tables", files, tests)
	}
}

func splitRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(strings.TrimSuffix(row, "|"), "|")
	cells := strings.Split(row, "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

func checkCodeCell(t *testing.T, r *repo, l line, cell string) (files, idents int) {
	t.Helper()
	dir, file := "", ""
	for _, m := range spanRE.FindAllStringSubmatch(cell, -1) {
		s := m[1]
		switch {
		case pathRE.MatchString(s):
			s = strings.TrimSuffix(s, "/")
			files++
			if !r.exists(s) {
				t.Errorf("%s: code `%s`: no such file or directory", l, s)
			}
			if strings.HasSuffix(s, ".go") {
				dir, file = path.Dir(s), path.Base(s)
			} else if r.byDir[s] != nil {
				dir, file = s, ""
			}
		case strings.HasSuffix(s, ".go") && identRE.MatchString(strings.TrimSuffix(s, ".go")):
			files++
			if dir == "" {
				t.Errorf("%s: code `%s`: a bare file name needs a directory named before it", l, s)
				continue
			}
			if !r.exists(dir + "/" + s) {
				t.Errorf("%s: code `%s`: %s/%s does not exist", l, s, dir, s)
			}
			file = s
		case identRE.MatchString(s) && s != strings.ToLower(s):
			idents++
			p := r.byDir[dir]
			switch {
			case p == nil:
				t.Errorf("%s: code `%s`: no Go package named before it", l, s)
			case file != "" && !p.inFile[file][s]:
				t.Errorf("%s: code `%s`: not declared in %s/%s", l, s, dir, file)
			case file == "" && !p.declares(s):
				t.Errorf("%s: code `%s`: not declared in %s", l, s, dir)
			}
		}
	}
	return files, idents
}

// testRefRE is "dir: TestName" or "dir: TestName/sub/test"; a subtest's name must be a string literal of the
// package (as table-driven subtests name theirs).
var testRefRE = regexp.MustCompile(`^([\w./-]+): (\w+)(?:/([\w/.-]+))?$`)

func checkTestCell(t *testing.T, r *repo, l line, cell string) (tests, idents int) {
	t.Helper()
	dir := ""
	check := func(s string) {
		p := r.byDir[dir]
		switch {
		case p == nil:
			t.Errorf("%s: test `%s`: %q is not a directory with Go files", l, s, dir)
		case isTestName(s):
			tests++
			if !p.tests[s] {
				t.Errorf("%s: test `%s`: no such test in %s", l, s, dir)
			}
		default:
			idents++
			if !p.declares(s) {
				t.Errorf("%s: test cell names `%s`, which %s does not declare", l, s, dir)
			}
		}
	}
	for _, m := range spanRE.FindAllStringSubmatch(cell, -1) {
		s := m[1]
		if tm := testRefRE.FindStringSubmatch(s); tm != nil {
			dir = tm[1]
			check(tm[2])
			if p := r.byDir[dir]; tm[3] != "" && p != nil && !p.strs[tm[3]] {
				t.Errorf("%s: test `%s`: %s has no subtest named %q (no such string literal)", l, s, dir, tm[3])
			}
			continue
		}
		if identRE.MatchString(s) && (isTestName(s) || s[0] >= 'A' && s[0] <= 'Z') {
			if dir == "" {
				t.Errorf("%s: test `%s`: no \"dir: Name\" before it says which package", l, s)
				continue
			}
			check(s)
		}
	}
	return tests, idents
}

// layerRE is one line of DESIGN.md's layer list: "name → dep, dep   comment" or "name   comment".
var layerRE = regexp.MustCompile(`^    (\S+)(?: → (.+?))?(?:\s{2,}.*)?$`)

// TestDesignLayers checks the dependency list of docs/DESIGN.md's "Layers" section against the imports of the
// code: each line names a package (relative to kafka/, or from the root) and exactly the module's packages its
// non-test files import, and every package under kafka/ has a line (test helpers and internal packages aside).
func TestDesignLayers(t *testing.T) {
	r := loadRepo(t)
	resolve := func(name string) string {
		if r.byDir["kafka/"+name] != nil {
			return "kafka/" + name
		}
		return name
	}
	listed := map[string]bool{}
	in := false
	for _, l := range proseLines(r, t, "docs/DESIGN.md") {
		if strings.HasPrefix(l.text, "## ") {
			in = l.text == "## Layers"
			continue
		}
		m := layerRE.FindStringSubmatch(l.text)
		if !in || m == nil {
			continue
		}
		dir := resolve(m[1])
		p := r.byDir[dir]
		if p == nil || p.name == "" {
			t.Errorf("%s: %q is not a package of the module", l, m[1])
			continue
		}
		listed[dir] = true
		want := map[string]bool{}
		if m[2] != "" {
			for _, d := range strings.Split(m[2], ",") {
				want[resolve(strings.TrimSpace(d))] = true
			}
		}
		for d := range p.imports {
			if !want[d] {
				t.Errorf("%s: %s imports %s, which its line does not list", l, dir, d)
			}
		}
		for d := range want {
			if !p.imports[d] {
				t.Errorf("%s: %s's line lists %s, which it does not import", l, dir, d)
			}
		}
	}
	if len(listed) == 0 {
		t.Fatal("docs/DESIGN.md: no layer lines found under \"## Layers\"")
	}
	for dir, p := range r.byDir {
		if strings.HasPrefix(dir, "kafka/") && p.name != "" && !listed[dir] &&
			!strings.HasSuffix(dir, "test") && !strings.Contains(dir, "/internal/") {
			t.Errorf("docs/DESIGN.md: the layer list has no line for %s", dir)
		}
	}
	t.Logf("checked %d layer lines", len(listed))
}

package docs

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// goPackage is what the tests know of one directory of Go files.
type goPackage struct {
	dir     string                     // slash-separated, relative to the repository root
	name    string                     // package name of the non-test files
	decls   map[string]bool            // top-level names of the non-test files
	members map[string]map[string]bool // type name -> its methods, fields and interface methods
	inFile  map[string]map[string]bool // file base name -> names declared in it ("Name" or "Type.Method")
	tests   map[string]bool            // Test, Benchmark, Fuzz and Example functions of the _test.go files
	strs    map[string]bool            // string literals of every file, tests included (subtest names)
	imports map[string]bool            // the module's packages the non-test files import (directories)
	files   []*ast.File                // the parsed non-test files
}

// modulePath is the module's import path, from go.mod.
var modulePath string

// repo is the parsed module, built once.
type repo struct {
	root   string
	byDir  map[string]*goPackage
	byName map[string][]*goPackage
}

var (
	repoOnce sync.Once
	theRepo  *repo
	repoErr  error
)

// loadRepo parses every Go file of the module (the directory holding go.mod above this one).
func loadRepo(t *testing.T) *repo {
	t.Helper()
	repoOnce.Do(func() { theRepo, repoErr = parseRepo() })
	if repoErr != nil {
		t.Fatal(repoErr)
	}
	return theRepo
}

func parseRepo() (*repo, error) {
	root, err := filepath.Abs("..")
	if err != nil {
		return nil, err
	}
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(string(gomod), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			modulePath = strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	if modulePath == "" {
		return nil, fmt.Errorf("%s/go.mod has no module line", root)
	}
	r := &repo{root: root, byDir: map[string]*goPackage{}, byName: map[string][]*goPackage{}}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		p := r.pkg(filepath.ToSlash(rel))
		p.add(name, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, p := range r.byDir {
		if p.name != "" {
			r.byName[p.name] = append(r.byName[p.name], p)
		}
	}
	return r, nil
}

func (r *repo) pkg(dir string) *goPackage {
	p := r.byDir[dir]
	if p == nil {
		p = &goPackage{dir: dir, decls: map[string]bool{}, members: map[string]map[string]bool{},
			inFile: map[string]map[string]bool{}, tests: map[string]bool{}, strs: map[string]bool{},
			imports: map[string]bool{}}
		r.byDir[dir] = p
	}
	return p
}

// add records the declarations of one file.
func (p *goPackage) add(base string, f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				p.strs[s] = true
			}
		}
		return true
	})
	isTest := strings.HasSuffix(base, "_test.go")
	if isTest {
		for _, d := range f.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && isTestName(fd.Name.Name) {
				p.tests[fd.Name.Name] = true
			}
		}
		return
	}
	p.name = f.Name.Name
	p.files = append(p.files, f)
	for _, im := range f.Imports {
		if path, err := strconv.Unquote(im.Path.Value); err == nil && strings.HasPrefix(path, modulePath+"/") {
			p.imports[strings.TrimPrefix(path, modulePath+"/")] = true
		}
	}
	here := map[string]bool{}
	p.inFile[base] = here
	member := func(typ, name string) {
		if p.members[typ] == nil {
			p.members[typ] = map[string]bool{}
		}
		p.members[typ][name] = true
		here[name] = true
		here[typ+"."+name] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil {
				p.decls[d.Name.Name] = true
				here[d.Name.Name] = true
			} else if len(d.Recv.List) == 1 {
				member(receiverType(d.Recv.List[0].Type), d.Name.Name)
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					p.decls[s.Name.Name] = true
					here[s.Name.Name] = true
					switch tt := s.Type.(type) {
					case *ast.StructType:
						for _, fl := range tt.Fields.List {
							for _, n := range fl.Names {
								member(s.Name.Name, n.Name)
							}
							if len(fl.Names) == 0 { // embedded
								member(s.Name.Name, receiverType(fl.Type))
							}
						}
					case *ast.InterfaceType:
						for _, m := range tt.Methods.List {
							for _, n := range m.Names {
								member(s.Name.Name, n.Name)
							}
						}
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						p.decls[n.Name] = true
						here[n.Name] = true
					}
				}
			}
		}
	}
}

// receiverType is the type name of a receiver or embedded field: T, *T, T[K], pkg.T.
func receiverType(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiverType(e.X)
	case *ast.IndexExpr:
		return receiverType(e.X)
	case *ast.IndexListExpr:
		return receiverType(e.X)
	case *ast.SelectorExpr:
		return e.Sel.Name
	case *ast.Ident:
		return e.Name
	}
	return ""
}

func isTestName(s string) bool {
	for _, p := range []string{"Test", "Benchmark", "Fuzz", "Example"} {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// has reports whether the package declares name (a top-level name) or typ.member.
func (p *goPackage) has(name, member string) bool {
	if !p.decls[name] {
		return false
	}
	return member == "" || p.members[name][member]
}

// lookup resolves pkg.Name[.Member] against every package of that name. known is false when the module
// has no package of that name (the standard library's, or another module's): such names are not checked.
func (r *repo) lookup(pkg, name, member string) (found, known bool) {
	ps := r.byName[pkg]
	for _, p := range ps {
		if p.has(name, member) {
			return true, true
		}
	}
	return false, len(ps) > 0
}

// exists reports whether a path relative to the repository root exists.
func (r *repo) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(r.root, filepath.FromSlash(rel)))
	return err == nil
}

// read returns a file of the repository.
func (r *repo) read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

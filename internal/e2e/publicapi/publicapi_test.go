package publicapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

// publicRoots are the packages (with their subpackages) whose exported
// API code outside this module uses: none of it may name a type of an
// internal/ package, which no code outside the module can fill or
// implement.
var publicRoots = []string{"producer", "worker", "storage", "device"}

const module = "github.com/benchfleet/benchfleet"

// TestPublicAPIsExposeNoInternalType lists every exported identifier of
// the public packages (functions' parameters and results, struct fields,
// variables, constants, methods, interface methods) and fails on each one
// whose type comes from an internal/ package.
func TestPublicAPIsExposeNoInternalType(t *testing.T) {
	var pats []string
	for _, r := range publicRoots {
		pats = append(pats, module+"/"+r+"/...")
	}
	pkgs, exports := listExports(t, pats)
	imp := importer.ForCompiler(token.NewFileSet(), "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var bad []string
	for _, path := range pkgs {
		pkg, err := imp.Import(path)
		if err != nil {
			t.Fatalf("import %s: %v", path, err)
		}
		bad = append(bad, internalUses(pkg)...)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("exposes an internal type: %s", b)
	}
	if len(pkgs) < len(publicRoots) {
		t.Fatalf("checked %d packages, want at least %d", len(pkgs), len(publicRoots))
	}
}

// TestInternalUsesFindsThem checks the checker on a package that exposes
// internal types on purpose: each way of exposing one is found.
func TestInternalUsesFindsThem(t *testing.T) {
	internal := types.NewPackage(module+"/internal/x", "x")
	msg := types.NewNamed(types.NewTypeName(token.NoPos, internal, "Msg", nil), types.NewStruct(nil, nil), nil)
	pub := types.NewPackage(module+"/worker", "worker")
	scope := pub.Scope()
	// type Config struct{ Field x.Msg; hidden x.Msg }
	cfg := types.NewNamed(types.NewTypeName(token.NoPos, pub, "Config", nil), types.NewStruct([]*types.Var{
		types.NewField(token.NoPos, pub, "Field", msg, false),
		types.NewField(token.NoPos, pub, "hidden", msg, false),
	}, nil), nil)
	scope.Insert(cfg.Obj())
	// func Send(map[string][]*x.Msg) error
	param := types.NewVar(token.NoPos, pub, "m", types.NewMap(types.Typ[types.String], types.NewSlice(types.NewPointer(msg))))
	sig := types.NewSignatureType(nil, nil, nil, types.NewTuple(param), types.NewTuple(types.NewVar(token.NoPos, pub, "", types.Universe.Lookup("error").Type())), false)
	scope.Insert(types.NewFunc(token.NoPos, pub, "Send", sig))
	// func (Config) Last() x.Msg
	recv := types.NewVar(token.NoPos, pub, "c", cfg)
	cfg.AddMethod(types.NewFunc(token.NoPos, pub, "Last", types.NewSignatureType(recv, nil, nil, nil, types.NewTuple(types.NewVar(token.NoPos, pub, "", msg)), false)))
	// var Default x.Msg; var private x.Msg
	scope.Insert(types.NewVar(token.NoPos, pub, "Default", msg))
	scope.Insert(types.NewVar(token.NoPos, pub, "private", msg))
	got := internalUses(pub)
	sort.Strings(got)
	want := []string{
		"worker.Config.Field: " + module + "/internal/x.Msg",
		"worker.Config.Last: " + module + "/internal/x.Msg",
		"worker.Default: " + module + "/internal/x.Msg",
		"worker.Send: " + module + "/internal/x.Msg",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("internalUses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// listExports runs go list for pats and returns the matched packages and
// the export data file of every package they depend on.
func listExports(t *testing.T, pats []string) ([]string, map[string]string) {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-export", "-deps", "-json=ImportPath,Export,DepOnly"}, pats...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []string
	exports := map[string]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath, Export string
			DepOnly            bool
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly {
			pkgs = append(pkgs, p.ImportPath)
		}
	}
	return pkgs, exports
}

// internalUses names each exported identifier of pkg whose type mentions
// a named type of an internal/ package, as "pkg.Ident[.Member]: type".
func internalUses(pkg *types.Package) []string {
	var out []string
	report := func(where string, t types.Type) {
		for _, n := range internalNames(t, map[types.Type]bool{}) {
			out = append(out, where+": "+n)
		}
	}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		where := pkg.Name() + "." + name
		tn, ok := obj.(*types.TypeName)
		if !ok {
			report(where, obj.Type())
			continue
		}
		if tn.IsAlias() {
			report(where, types.Unalias(tn.Type()))
			continue
		}
		named, ok := tn.Type().(*types.Named)
		if !ok {
			continue
		}
		switch u := named.Underlying().(type) {
		case *types.Struct:
			for f := range u.Fields() {
				if f.Exported() {
					report(where+"."+f.Name(), f.Type())
				}
			}
		case *types.Interface:
			for m := range u.Methods() {
				if m.Exported() {
					report(where+"."+m.Name(), m.Type())
				}
			}
			for e := range u.EmbeddedTypes() {
				report(where, e)
			}
		default:
			report(where, u)
		}
		for m := range named.Methods() {
			if m.Exported() {
				report(where+"."+m.Name(), m.Type())
			}
		}
	}
	return out
}

// internalNames lists the named types of internal/ packages that t is
// built from: itself, its elements, its parameters and results, its type
// arguments and the fields of its unnamed structs. A named type of another
// package counts as itself only (its own API is checked where it lives).
func internalNames(t types.Type, seen map[types.Type]bool) []string {
	if seen[t] {
		return nil
	}
	seen[t] = true
	var out []string
	switch t := t.(type) {
	case *types.Alias:
		return internalNames(types.Unalias(t), seen)
	case *types.Named:
		if p := t.Obj().Pkg(); p != nil && isInternal(p.Path()) {
			out = append(out, p.Path()+"."+t.Obj().Name())
		}
		for a := range t.TypeArgs().Types() {
			out = append(out, internalNames(a, seen)...)
		}
	case *types.Pointer:
		out = internalNames(t.Elem(), seen)
	case *types.Slice:
		out = internalNames(t.Elem(), seen)
	case *types.Array:
		out = internalNames(t.Elem(), seen)
	case *types.Chan:
		out = internalNames(t.Elem(), seen)
	case *types.Map:
		out = append(internalNames(t.Key(), seen), internalNames(t.Elem(), seen)...)
	case *types.Signature:
		for _, tup := range []*types.Tuple{t.Params(), t.Results()} {
			for v := range tup.Variables() {
				out = append(out, internalNames(v.Type(), seen)...)
			}
		}
	case *types.Struct:
		for f := range t.Fields() {
			if f.Exported() || f.Embedded() {
				out = append(out, internalNames(f.Type(), seen)...)
			}
		}
	case *types.Interface:
		for m := range t.Methods() {
			out = append(out, internalNames(m.Type(), seen)...)
		}
	}
	return out
}

func isInternal(path string) bool {
	return strings.Contains(path, "/internal/") || strings.HasSuffix(path, "/internal")
}

package plugins

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/plugins/endpoint"
	"github.com/infercrane/infercrane/plugins/local"
	"github.com/infercrane/infercrane/plugins/sim"
)

// ExternalPrefix is the name prefix of external executor plugin binaries:
// infercrane-executor-NAME provides executor type NAME.
const ExternalPrefix = "infercrane-executor-"

// Builtin is an executor compiled into infercrane.
type Builtin struct {
	Name   string
	New    func(cfg map[string]any) (executor.Executor, error)
	Schema func() executor.Schema
}

var (
	builtinMu sync.RWMutex
	builtins  = map[string]Builtin{
		sim.Type:      {Name: sim.Type, New: sim.New, Schema: sim.Schema},
		endpoint.Type: {Name: endpoint.Type, New: endpoint.New, Schema: endpoint.Schema},
		local.Type:    {Name: local.Type, New: local.New, Schema: local.Schema},
	}
)

// RegisterBuiltin adds a built-in executor (used for executors whose
// package registers itself, such as modal).
func RegisterBuiltin(b Builtin) {
	builtinMu.Lock()
	defer builtinMu.Unlock()
	builtins[b.Name] = b
}

// LookupBuiltin returns the built-in executor named name.
func LookupBuiltin(name string) (Builtin, bool) {
	builtinMu.RLock()
	defer builtinMu.RUnlock()
	b, ok := builtins[name]
	return b, ok
}

// BuiltinNames lists the built-in executor types, sorted.
func BuiltinNames() []string {
	builtinMu.RLock()
	defer builtinMu.RUnlock()
	var out []string
	for n := range builtins {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Registry resolves executor types to executors: built-ins (in-process, or
// as plugin processes of this binary when Isolate is set) and external
// infercrane-executor-NAME plugin binaries found in Dirs.
type Registry struct {
	// Dirs are searched, in order, for external plugin binaries.
	Dirs []string
	// Isolate serves built-ins from `SELF executor serve NAME` processes
	// instead of in-process, exactly like external plugins.
	Isolate bool
	// Self is the infercrane binary used when Isolate is set.
	Self string
	// LogOut receives plugin process logs (nil: discarded).
	LogOut io.Writer
}

// DefaultDirs is where external plugins are looked for: the directories of
// $INFERCRANE_PLUGIN_DIR (a path list), then $PATH.
func DefaultDirs(getenv func(string) string) []string {
	var dirs []string
	for _, v := range []string{getenv("INFERCRANE_PLUGIN_DIR"), getenv("PATH")} {
		for _, d := range filepath.SplitList(v) {
			if d != "" {
				dirs = append(dirs, d)
			}
		}
	}
	return dirs
}

// Discover lists the external plugins in Dirs: type name -> binary path
// (the first found wins; built-in names are not overridden).
func (r *Registry) Discover() map[string]string {
	out := map[string]string{}
	for _, dir := range r.Dirs {
		matches, _ := filepath.Glob(filepath.Join(dir, ExternalPrefix+"*"))
		for _, m := range matches {
			name := strings.TrimPrefix(filepath.Base(m), ExternalPrefix)
			if _, builtin := LookupBuiltin(name); builtin || name == "" || out[name] != "" {
				continue
			}
			if fi, err := os.Stat(m); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
				continue
			}
			out[name] = m
		}
	}
	return out
}

// SelfPath returns the path of the running infercrane binary.
func SelfPath() (string, error) {
	if a := os.Args[0]; !strings.ContainsRune(a, filepath.Separator) {
		if p, err := exec.LookPath(a); err == nil {
			return p, nil
		}
	}
	return os.Executable()
}

// Open makes an executor of type typ from cfg: implements executor.Opener.
func (r *Registry) Open(ctx context.Context, typ string, cfg map[string]any) (executor.Executor, error) {
	if b, ok := LookupBuiltin(typ); ok {
		if !r.Isolate {
			return b.New(cfg)
		}
		self := r.Self
		if self == "" {
			var err error
			if self, err = SelfPath(); err != nil {
				return nil, fmt.Errorf("find the infercrane binary to serve executor %s: %w", typ, err)
			}
		}
		return Launch(ctx, typ, func() *exec.Cmd { return exec.Command(self, "executor", "serve", typ) }, typ, cfg, r.LogOut)
	}
	path, ok := r.Discover()[typ]
	if !ok {
		return nil, fmt.Errorf("no executor of type %q: the built-ins are %s, and no %s%s binary is in $INFERCRANE_PLUGIN_DIR or $PATH", typ, strings.Join(BuiltinNames(), ", "), ExternalPrefix, typ)
	}
	return Launch(ctx, typ, func() *exec.Cmd { return exec.Command(path) }, typ, cfg, r.LogOut)
}

// Schemas returns the schema of every executor type: built-ins directly,
// external plugins by starting each once and asking it. A plugin that
// cannot be started is left out and its error returned in errs.
func (r *Registry) Schemas(ctx context.Context) (schemas map[string]executor.Schema, errs []error) {
	schemas = map[string]executor.Schema{}
	for _, n := range BuiltinNames() {
		b, _ := LookupBuiltin(n)
		schemas[n] = b.Schema()
	}
	for name, path := range r.Discover() {
		s, err := ExternalSchema(ctx, name, path, r.LogOut)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		schemas[name] = s
	}
	return schemas, errs
}

// ExternalSchema starts the plugin binary at path and returns its schema.
func ExternalSchema(ctx context.Context, name, path string, logOut io.Writer) (executor.Schema, error) {
	c, err := launchUnconfigured(ctx, name, func() *exec.Cmd { return exec.Command(path) }, logOut)
	if err != nil {
		return executor.Schema{}, err
	}
	defer c.Close()
	return c.Schema(), nil
}

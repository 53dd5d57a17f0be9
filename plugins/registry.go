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
	"time"

	"github.com/infercrane/infercrane/executor"
)

// ExternalPrefix is the name prefix of external executor plugin binaries:
// infercrane-executor-NAME provides executor type NAME.
const ExternalPrefix = "infercrane-executor-"

// Builtin is an executor compiled into infercrane. The composition root
// (cmd/infercrane) lists them in Registry.Builtins; nothing registers itself.
type Builtin struct {
	Name   string
	New    func(cfg map[string]any) (executor.Executor, error)
	Schema func() executor.Schema
	// Validate checks a block's attributes the way New reads them, without
	// starting or contacting anything, so validate and plan reject what a
	// deploy would (nil: the schema's types and bounds only). A problem with
	// one attribute is an *executor.AttrError naming it.
	Validate func(cfg map[string]any) error
	// CheckDeployment checks a planned deployment (the lane's resolved
	// inputs, settings and performance model) the way Deploy would before
	// starting anything, so plan refuses what only the lane makes wrong (a
	// Modal gpu that is not the lane's GPU, a sim model without a
	// performance model). Nil: Deploy checks nothing the plan decides.
	CheckDeployment func(d executor.Deployment) error
	// Credentials reports what the executor needs from the environment that
	// is missing (nil error: nothing), naming the variables or profile to
	// set; plan warns with it and apply refuses before deploying anything.
	Credentials func(cfg map[string]any, getenv func(string) string) error
}

// Registry resolves executor types to executors: built-ins (in-process, or
// as plugin processes of this binary when Isolate is set) and external
// infercrane-executor-NAME plugin binaries found in Dirs.
type Registry struct {
	// Builtins are the executors compiled in.
	Builtins []Builtin
	// Dirs are searched, in order, for external plugin binaries.
	Dirs []string
	// Isolate serves built-ins from `SELF executor serve NAME` processes
	// instead of in-process, exactly like external plugins.
	Isolate bool
	// Self is the infercrane binary used when Isolate is set.
	Self string
	// LogOut receives plugin process logs (nil: discarded).
	LogOut io.Writer
	// StartTimeout is how long a plugin process has to answer the
	// handshake before it and its process group are killed (0:
	// DefaultStartTimeout).
	StartTimeout time.Duration
}

// Builtin returns the built-in executor named name.
func (r *Registry) Builtin(name string) (Builtin, bool) {
	for _, b := range r.Builtins {
		if b.Name == name {
			return b, true
		}
	}
	return Builtin{}, false
}

// BuiltinNames lists the built-in executor types, sorted.
func (r *Registry) BuiltinNames() []string {
	out := make([]string, 0, len(r.Builtins))
	for _, b := range r.Builtins {
		out = append(out, b.Name)
	}
	sort.Strings(out)
	return out
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
			if _, builtin := r.Builtin(name); builtin || name == "" || out[name] != "" {
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
	if b, ok := r.Builtin(typ); ok {
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
		return launchWith(ctx, typ, func() *exec.Cmd { return exec.Command(self, "executor", "serve", typ) }, typ, cfg, r.LogOut, r.StartTimeout)
	}
	path, ok := r.Discover()[typ]
	if !ok {
		return nil, fmt.Errorf("no executor of type %q: the built-ins are %s, and no %s%s binary is in $INFERCRANE_PLUGIN_DIR or $PATH", typ, strings.Join(r.BuiltinNames(), ", "), ExternalPrefix, typ)
	}
	return launchWith(ctx, typ, func() *exec.Cmd { return exec.Command(path) }, typ, cfg, r.LogOut, r.StartTimeout)
}

// OpenJournaled is Open for tearing down a deployment recorded in a
// deployments journal: an apply before plan format 2 journaled the
// executor block's attributes, not its resolved settings, so a built-in's
// are resolved with its schema first (resolving settings that are already
// complete changes nothing). A crashed old apply's server is then still
// torn down by a newer infercrane.
func (r *Registry) OpenJournaled(ctx context.Context, typ string, cfg map[string]any) (executor.Executor, error) {
	if b, ok := r.Builtin(typ); ok {
		cfg = b.Schema().Resolve(cfg)
	}
	return r.Open(ctx, typ, cfg)
}

// Schemas returns the schema of every executor type: built-ins directly,
// external plugins by starting each once and asking it. A plugin that
// cannot be started is left out and its error returned in errs.
func (r *Registry) Schemas(ctx context.Context) (schemas map[string]executor.Schema, errs []error) {
	schemas = map[string]executor.Schema{}
	for _, b := range r.Builtins {
		schemas[b.Name] = b.Schema()
	}
	for name, path := range r.Discover() {
		s, err := r.ExternalSchema(ctx, name, path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		schemas[name] = s
	}
	return schemas, errs
}

// ExternalSchema starts the plugin binary at path and returns its schema;
// a plugin that does not answer within StartTimeout (or before ctx ends) is
// killed with its process group.
func (r *Registry) ExternalSchema(ctx context.Context, name, path string) (executor.Schema, error) {
	c, err := launchUnconfigured(ctx, name, func() *exec.Cmd { return exec.Command(path) }, r.LogOut, r.StartTimeout)
	if err != nil {
		return executor.Schema{}, err
	}
	defer c.Close()
	return c.Schema(), nil
}

// CheckDeployment runs the built-in executor of type typ's
// CheckDeployment on d (nil for an external executor, or one without it).
func (r *Registry) CheckDeployment(typ string, d executor.Deployment) error {
	b, ok := r.Builtin(typ)
	if !ok || b.CheckDeployment == nil {
		return nil
	}
	return b.CheckDeployment(d)
}

// MissingCredentials checks what the built-in executor of type typ needs
// from the environment for a block's attributes cfg: nil when nothing is
// missing or the type has no such check (external plugins check their own
// on Deploy). The error names the variables or profile to set.
func (r *Registry) MissingCredentials(typ string, cfg map[string]any, getenv func(string) string) error {
	b, ok := r.Builtin(typ)
	if !ok || b.Credentials == nil {
		return nil
	}
	return b.Credentials(cfg, getenv)
}

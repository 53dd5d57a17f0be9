package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/state"
	"github.com/infercrane/infercrane/planner/state/bucket"
)

// addBackendCommands registers the commands of this file (called by setupCommands).
func addBackendCommands() {
	register(&command{
		Name:     "init",
		Synopsis: "Set up the spec's state backend: move local state into it, or back out of it",
		Run:      runInit,
	})
	register(&command{
		Name:     "force-unlock",
		Synopsis: "Remove the backend's lock left by an apply that was killed",
		Run:      runForceUnlock,
	})
	register(&command{
		Name:     "state pull",
		Synopsis: "Copy the backend's state into the local state directory (its cache) and say what it holds",
		Run:      runStatePull,
	})
	register(&command{
		Name:     "state push",
		Synopsis: "Copy a local state directory into the backend's empty prefix, checking every digest",
		Run:      runStatePush,
	})
}

// backendRecord turns the spec's backend block into what a cache records.
func backendRecord(b *lang.Backend) *state.BackendRecord {
	if b == nil {
		return nil
	}
	return &state.BackendRecord{Type: b.Type, Bucket: b.Bucket, Prefix: b.Prefix, Region: b.Region,
		Endpoint: b.Endpoint, UsePathStyle: b.UsePathStyle, Profile: b.Profile}
}

// stateBackend returns where the state of dir lives: the spec's backend
// (cfg may be nil when a command has only a state directory), else the
// backend dir caches (its backend.json), else nil: the local directory.
// A spec whose backend disagrees with the directory is an error that
// names 'infercrane init', which settles it.
func stateBackend(cfg *lang.Config, dir string) (*state.BackendRecord, error) {
	cached, err := state.ReadBackend(dir)
	if err != nil {
		return nil, err
	}
	if cfg == nil {
		return cached, nil
	}
	spec := backendRecord(cfg.Backend)
	switch {
	case spec == nil && cached == nil:
		return nil, nil
	case spec == nil:
		return nil, fmt.Errorf("the state directory %s caches the backend s3://%s/%s, but the spec names no backend; run 'infercrane init' to copy the state back into %s, or restore the backend block", dir, cached.Bucket, cached.Prefix, dir)
	case cached == nil:
		if _, err := os.Stat(filepath.Join(dir, state.JournalFile)); err == nil {
			return nil, fmt.Errorf("the spec keeps its state in s3://%s/%s, but %s holds local state; run 'infercrane init' to move it into the backend (every digest is checked)", spec.Bucket, spec.Prefix, dir)
		}
		return spec, nil
	case *cached != *spec:
		return nil, fmt.Errorf("the state directory %s caches s3://%s/%s, but the spec names s3://%s/%s; run 'infercrane init' to switch", dir, cached.Bucket, cached.Prefix, spec.Bucket, spec.Prefix)
	}
	return spec, nil
}

// openBackend opens the backend rec names (no request is made).
func openBackend(rec *state.BackendRecord) (*bucket.Backend, error) {
	b, err := bucket.Open(context.Background(), *rec)
	if err != nil {
		return nil, err
	}
	if s := os.Getenv("INFERCRANE_LOCK_RENEW"); s != "" {
		// Tests shorten the renewal period to see stale locks quickly.
		if d, err := time.ParseDuration(s); err == nil && d > 0 {
			b.RenewEvery = d
		}
	}
	return b, nil
}

// refreshState makes the cache dir a copy of its backend's state before a
// command reads it (a no-op for local state, and while an apply on this
// machine holds the cache: that apply keeps it current).
func refreshState(env *cliEnv, cfg *lang.Config, dir string) error {
	rec, err := stateBackend(cfg, dir)
	if err != nil || rec == nil {
		return err
	}
	if held, _ := state.Held(dir); held {
		return nil
	}
	b, err := openBackend(rec)
	if err != nil {
		return err
	}
	if _, err := b.Pull(context.Background(), dir); err != nil {
		return fmt.Errorf("read the state from %s: %w", b, err)
	}
	return state.WriteBackend(dir, rec)
}

// openState opens dir for writing. With a backend it first takes the
// backend's lock (one apply at a time across every machine), then makes
// the cache a copy of the bucket, and every write goes to the bucket first.
//
// The guard it returns (nil for local state) releases the backend's lock on
// SIGINT or SIGTERM; stop it after closing the store.
func openState(env *cliEnv, cfg *lang.Config, dir, command string) (*state.Store, *lockGuard, error) {
	rec, err := stateBackend(cfg, dir)
	if err != nil {
		return nil, nil, err
	}
	if rec == nil {
		st, err := state.Open(dir, command)
		return st, nil, err
	}
	guard := newLockGuard(env)
	st, err := openBackendState(guard, rec, dir, command)
	if err != nil {
		guard.taken(nil)
		guard.stop()
		return nil, nil, err
	}
	guard.taken(func() { st.Close() })
	return st, guard, nil
}

// openBackendState takes the backend's lock, pulls its state into dir and
// opens dir as its replicated cache. Until it returns, guard releases the
// lock alone on a signal.
func openBackendState(guard *lockGuard, rec *state.BackendRecord, dir, command string) (*state.Store, error) {
	b, err := openBackend(rec)
	if err != nil {
		return nil, err
	}
	lock, err := b.Lock(context.Background(), command)
	if err != nil {
		return nil, lockHint(err, dir)
	}
	guard.taken(func() { lock.Release() })
	if _, err := b.Pull(context.Background(), dir); err != nil {
		lock.Release()
		return nil, fmt.Errorf("read the state from %s: %w", b, err)
	}
	if err := state.WriteBackend(dir, rec); err != nil {
		lock.Release()
		return nil, err
	}
	st, err := state.OpenReplicated(dir, command, b.Replica(lock))
	if err != nil {
		lock.Release()
		return nil, err
	}
	return st, nil
}

// lockGuarded takes b's lock for command with a guard that releases it on
// an interrupt; unlock releases it and ends the guard.
func lockGuarded(env *cliEnv, b *bucket.Backend, command, stateDir string) (unlock func(), err error) {
	guard := newLockGuard(env)
	lock, err := b.Lock(context.Background(), command)
	if err != nil {
		guard.taken(nil)
		guard.stop()
		return nil, lockHint(err, stateDir)
	}
	guard.taken(func() { lock.Release() })
	return func() {
		lock.Release()
		guard.stop()
	}, nil
}

// lockHint adds to a lock refusal what to do about it.
func lockHint(err error, dir string) error {
	var le *bucket.LockedError
	if !errors.As(err, &le) {
		return err
	}
	if le.Stale {
		return fmt.Errorf("%w. If that apply was killed, free the state with 'infercrane force-unlock -state %s %s', then apply again: it resumes from the journal", err, dir, le.Holder.ID)
	}
	return fmt.Errorf("%w. Wait for it to finish; if it was killed, 'infercrane force-unlock -state %s %s' frees the state", err, dir, le.Holder.ID)
}

// specAndState loads the spec at path (when it exists) and returns the
// state directory: -state, else the spec's .infercrane.
func specAndState(env *cliEnv, path, stateDir string) (*lang.Config, string, bool) {
	if _, err := os.Stat(path); err != nil && stateDir != "" {
		return nil, stateDir, true
	}
	cfg, diags := loadConfig(env, path, nil)
	if cfg == nil {
		cfg = &lang.Config{}
	}
	printDiags(env, diags, cfg.Files)
	if diags.HasErrors() {
		return nil, "", false
	}
	if stateDir == "" {
		stateDir = filepath.Join(cfg.Dir, state.DefaultDir)
	}
	return cfg, stateDir, true
}

func runInit(env *cliEnv, args []string) int {
	fs := newFlags(env, "init", usageDoc{
		Usage: "infercrane init [flags] [PATH]",
		About: "Sets up where the spec in PATH (default .) keeps its state. With a backend \"s3\" block in its\n" +
			"infercrane block: a local state directory that holds state is copied into the bucket's empty\n" +
			"prefix (under the backend's lock), every object is read back and its digest checked, and the\n" +
			"directory becomes a cache of the bucket. Without one, a directory that caches a backend gets\n" +
			"the bucket's state copied back and is plain local state again (the bucket keeps its copy).",
		Examples: []string{
			"infercrane init",
			"infercrane init -state ci/.infercrane examples/chutes-qwen-l40s",
		},
	})
	dir := fs.String("state", "", "state `DIR`ectory (default: .infercrane next to the spec)")
	cfg, stateDir, code, ok := specArgs(env, fs, args, *dir)
	if !ok {
		return code
	}
	if cfg == nil {
		fmt.Fprintf(env.Stderr, "infercrane init: no spec at the given PATH: init reads the spec's backend block\n")
		return exitError
	}
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "infercrane init: %v\n", hinted(err))
		return exitError
	}
	spec := backendRecord(cfg.Backend)
	cached, err := state.ReadBackend(stateDir)
	if err != nil {
		return fail(err)
	}
	ctx := context.Background()
	switch {
	case spec == nil && cached == nil:
		fmt.Fprintf(env.Stdout, "The spec names no backend: its state is the local directory %s. Nothing to do.\n", stateDir)
		return exitOK
	case spec == nil:
		// Back out of the backend: the bucket's state becomes local.
		b, err := openBackend(cached)
		if err != nil {
			return fail(err)
		}
		unlock, err := lockGuarded(env, b, "infercrane init", stateDir)
		if err != nil {
			return fail(err)
		}
		defer unlock()
		st, err := b.Pull(ctx, stateDir)
		if err == nil {
			err = b.Check(ctx, stateDir)
		}
		if err == nil {
			err = state.WriteBackend(stateDir, nil)
		}
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(env.Stdout, "Copied the state of %s into %s (%d journal entries; every digest checked). It is local state again; the bucket keeps its copy.\n", b, stateDir, st.Entries)
		return exitOK
	}
	b, err := openBackend(spec)
	if err != nil {
		return fail(err)
	}
	if cached != nil && *cached == *spec {
		st, err := b.Pull(ctx, stateDir)
		if err != nil {
			return fail(err)
		}
		fmt.Fprintf(env.Stdout, "%s already uses %s (%d journal entries). Nothing to migrate.\n", stateDir, b, st.Entries)
		return exitOK
	}
	unlock, err := lockGuarded(env, b, "infercrane init", stateDir)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	if _, err := os.Stat(filepath.Join(stateDir, state.JournalFile)); err == nil {
		if held, pid := state.Held(stateDir); held {
			return fail(fmt.Errorf("an apply (PID %d) holds %s; wait for it to finish", pid, stateDir))
		}
		st, err := b.Push(ctx, stateDir)
		if err != nil {
			return fail(err)
		}
		if err := state.WriteBackend(stateDir, spec); err != nil {
			return fail(err)
		}
		fmt.Fprintf(env.Stdout, "Moved the local state in %s into %s: %d journal entries, %d objects; every object read back and its digest checked. %s is now a cache of the bucket.\n", stateDir, b, st.Entries, st.Stored, stateDir)
		return exitOK
	}
	st, err := b.Pull(ctx, stateDir)
	if err == nil {
		err = state.WriteBackend(stateDir, spec)
	}
	if err != nil {
		return fail(err)
	}
	fmt.Fprintf(env.Stdout, "Using %s for the state (%d journal entries); %s is its local cache.\n", b, st.Entries, stateDir)
	return exitOK
}

// specArgs parses a backend command's flags and its optional PATH (default
// .), and loads the spec there with its state directory (see specAndState).
func specArgs(env *cliEnv, fs *cmdFlags, args []string, dir string) (*lang.Config, string, int, bool) {
	pos, code, ok := fs.parse(args)
	if !ok {
		return nil, "", code, false
	}
	path, code, ok := fs.oneOptional(pos, "PATH", ".")
	if !ok {
		return nil, "", code, false
	}
	cfg, stateDir, ok := specAndState(env, path, dir)
	if !ok {
		return nil, "", exitError, false
	}
	return cfg, stateDir, exitOK, true
}

// backendOf opens the backend of the spec (cfg, nil for none) or of the
// state directory's backend.json.
func backendOf(env *cliEnv, name string, cfg *lang.Config, stateDir string) (*bucket.Backend, bool) {
	rec, err := stateBackend(cfg, stateDir)
	if err == nil && rec == nil {
		err = fmt.Errorf("the state in %s is local (no backend block in the spec, no backend.json in it): there is no backend to use", stateDir)
	}
	var b *bucket.Backend
	if err == nil {
		b, err = openBackend(rec)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane %s: %v\n", name, hinted(err))
		return nil, false
	}
	return b, true
}

func runForceUnlock(env *cliEnv, args []string) int {
	fs := newFlags(env, "force-unlock", usageDoc{
		Usage: "infercrane force-unlock [flags] LOCK_ID [PATH]",
		About: "Removes the backend's lock if its ID is LOCK_ID (the ID a refused apply names). Only for an\n" +
			"apply that was killed: an apply that is still running notices at its next write and stops,\n" +
			"and its state stays resumable.",
		Examples: []string{"infercrane force-unlock 3f9a2c1d0b7e6a54", "infercrane force-unlock -state ci/.infercrane 3f9a2c1d0b7e6a54"},
	})
	dir := fs.String("state", "", "state `DIR`ectory that caches the backend (default: .infercrane next to the spec)")
	pos, code, ok := fs.parse(args)
	if !ok {
		return code
	}
	if len(pos) < 1 || len(pos) > 2 {
		return fs.usageError("give LOCK_ID (and optionally the spec's PATH)")
	}
	path := "."
	if len(pos) == 2 {
		path = pos[1]
	}
	cfg, stateDir, ok := specAndState(env, path, *dir)
	if !ok {
		return exitError
	}
	b, ok := backendOf(env, "force-unlock", cfg, stateDir)
	if !ok {
		return exitError
	}
	info, _, err := b.ReadLock(context.Background())
	if err == nil {
		err = b.ForceUnlock(context.Background(), pos[0])
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane force-unlock: %v\n", hinted(err))
		return exitError
	}
	fmt.Fprintf(env.Stdout, "Removed the lock %s of %s (held by %s, %q, since %s). The next apply resumes from the journal.\n", pos[0], b, info.Who, info.Command, info.Created)
	return exitOK
}

func runStatePull(env *cliEnv, args []string) int {
	fs := newFlags(env, "state pull", usageDoc{
		Usage: "infercrane state pull [flags] [PATH]",
		About: "Makes the local state directory a copy of the backend's state (read-only access is enough)\n" +
			"and says what it holds and who, if anyone, holds the lock.",
		Examples: []string{"infercrane state pull", "infercrane state pull -state ci/.infercrane examples/quickstart"},
	})
	dir := fs.String("state", "", "state `DIR`ectory that caches the backend (default: .infercrane next to the spec)")
	cfg, stateDir, code, ok := specArgs(env, fs, args, *dir)
	if !ok {
		return code
	}
	b, ok := backendOf(env, "state pull", cfg, stateDir)
	if !ok {
		return exitError
	}
	ctx := context.Background()
	st, err := b.Pull(ctx, stateDir)
	if err == nil {
		rec := b.Record()
		err = state.WriteBackend(stateDir, &rec)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane state pull: %v\n", hinted(err))
		return exitError
	}
	fmt.Fprintf(env.Stdout, "Pulled %s into %s: %d journal entries; %d objects fetched, %d already current, %d stale files removed.\n",
		b, stateDir, st.Entries, st.Fetched, st.Kept, st.Removed)
	if info, _, err := b.ReadLock(ctx); err == nil && info != nil {
		fmt.Fprintf(env.Stdout, "Locked by %s (%q, lock ID %s) since %s, last renewed %s ago.\n", info.Who, info.Command, info.ID, info.Created, info.Age(time.Now()).Round(time.Second))
	}
	return exitOK
}

func runStatePush(env *cliEnv, args []string) int {
	fs := newFlags(env, "state push", usageDoc{
		Usage: "infercrane state push [flags] [PATH]",
		About: "Copies the local state directory into the backend's prefix under its lock, then reads every\n" +
			"object back and checks its digest. A prefix holding a different state is refused: the\n" +
			"bucket is the source of truth, and push never overwrites it.",
		Examples: []string{"infercrane state push", "infercrane state push -state old/.infercrane examples/quickstart"},
	})
	dir := fs.String("state", "", "state `DIR`ectory to copy (default: .infercrane next to the spec)")
	cfg, stateDir, code, ok := specArgs(env, fs, args, *dir)
	if !ok {
		return code
	}
	var rec *state.BackendRecord
	if cfg != nil {
		rec = backendRecord(cfg.Backend)
	}
	if rec == nil {
		rec, _ = state.ReadBackend(stateDir)
	}
	if rec == nil {
		fmt.Fprintf(env.Stderr, "infercrane state push: the spec names no backend to push to\n")
		return exitError
	}
	b, err := openBackend(rec)
	unlock := func() {}
	if err == nil {
		unlock, err = lockGuarded(env, b, "infercrane state push", stateDir)
	}
	var st bucket.Stats
	if err == nil {
		defer unlock()
		st, err = b.Push(context.Background(), stateDir)
	}
	if err != nil {
		fmt.Fprintf(env.Stderr, "infercrane state push: %v\n", hinted(err))
		return exitError
	}
	fmt.Fprintf(env.Stdout, "Pushed %s into %s: %d journal entries, %d objects; every digest checked.\n", stateDir, b, st.Entries, st.Stored)
	return exitOK
}

// lockGuard releases a backend's lock when SIGINT or SIGTERM arrives while
// nothing else handles them (taking the lock, pulling, planning, the
// approval prompt, the reports): a local state's flock dies with the
// process, a lock object in a bucket does not. It is started before the
// lock is taken; a signal that comes while the lock's PUT is in flight is
// held until the PUT has answered, then the lock (if taken) is released.
// While an apply's own interrupt handling runs (pause), the guard leaves
// signals to it. A nil guard (local state) does nothing.
type lockGuard struct {
	env *cliEnv

	mu      sync.Mutex
	paused  bool
	pending os.Signal // arrived before release was known
	release func()    // nil until the lock is taken

	ch       chan os.Signal
	done     chan struct{}
	stopOnce sync.Once
}

// newLockGuard starts a guard with nothing to release yet.
func newLockGuard(env *cliEnv) *lockGuard {
	g := &lockGuard{env: env, ch: make(chan os.Signal, 2), done: make(chan struct{})}
	signal.Notify(g.ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		for {
			select {
			case <-g.done:
				return
			case sig := <-g.ch:
				g.mu.Lock()
				switch {
				case g.paused:
				case g.release == nil:
					g.pending = sig // the lock's PUT may be in flight
				default:
					g.exit(sig)
				}
				g.mu.Unlock()
			}
		}
	}()
	return g
}

// taken says the lock is held (release frees it) or was not taken (nil);
// a signal that came meanwhile takes effect now.
func (g *lockGuard) taken(release func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if release == nil {
		release = func() {}
	}
	g.release = release
	if g.pending != nil {
		g.exit(g.pending)
	}
}

// exit releases and ends the process; g.mu is held.
func (g *lockGuard) exit(sig os.Signal) {
	fmt.Fprintf(g.env.Stderr, "\nReceived %v: released the state's lock and stopped; nothing was deployed.\n", sig)
	g.release()
	os.Exit(130)
}

// pause leaves signals to another handler until resume.
func (g *lockGuard) pause() {
	if g != nil {
		g.mu.Lock()
		g.paused = true
		g.mu.Unlock()
	}
}

func (g *lockGuard) resume() {
	if g != nil {
		g.mu.Lock()
		g.paused = false
		g.mu.Unlock()
	}
}

// stop ends the guard (the lock is released by then).
func (g *lockGuard) stop() {
	if g != nil {
		g.stopOnce.Do(func() {
			signal.Stop(g.ch)
			close(g.done)
		})
	}
}

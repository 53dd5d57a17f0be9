// Package localcloud is an in-process stand-in for Modal that implements
// modal.Cloud with real local processes, so the modal executor and
// `infercrane cleanup` are tested end to end without Modal's service.
//
// A sandbox is a directory DIR/ID with a meta.json (spec, tags, process
// groups, state) and a root/ that shadows the container's filesystem: an
// absolute path in a command whose top directory exists under root/ (for
// example /infercrane/... after the binary was copied in) is rewritten into
// it. Every sandbox gets its own free loopback port, and "127.0.0.1:8000" or
// "localhost:8000" in commands is rewritten to it, which stands in for the
// container's own network namespace.
//
// The image is emulated: `vllm serve MODEL ...` runs `infercrane sim serve`
// (the simulated engine standing in for vLLM), `nvidia-smi` and `python3`
// print the configured GPU and versions, and every other program is run
// from the host. Modal Secrets are looked up in Cloud.Secrets and injected
// into the server's environment. Hooks inject failures: image pull errors,
// capacity errors, failing execs and terminates, sandboxes created but
// reported as failed; Kill stops a sandbox as Modal would on preemption.
//
// State lives in files, so a second process (`infercrane cleanup` with
// INFERCRANE_MODAL_LOCAL=DIR in tests) sees and terminates sandboxes a
// first one left behind.
package localcloud

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/infercrane/infercrane/plugins/modal"
)

// Cloud is the local stand-in for Modal. Set fields before first use.
type Cloud struct {
	// Dir holds one directory per sandbox.
	Dir string
	// Bin is the infercrane binary whose `sim serve` stands in for `vllm serve`.
	Bin string
	// SimArgs are extra `sim serve` flags (timing mode, faults).
	SimArgs []string
	// ServeCommand, when set, replaces the `vllm serve` mapping: it gets the
	// sandbox's port and the vllm argv and returns the command to run.
	ServeCommand func(port int, vllmArgv []string) []string
	// What the emulated image reports; an empty GPUName reports the GPU the
	// sandbox asked for ("NVIDIA L40S" for "L40S"), one line per GPU.
	GPUName, ComputeCap, VLLMVersion, TorchVersion string
	// Secrets maps Modal Secret names to their environment variables.
	Secrets map[string]map[string]string
	// Hooks inject failures; nil hooks do nothing.
	Hooks Hooks

	mu    sync.Mutex
	boxes map[string]*box
}

// Hooks let tests make calls fail the way Modal's can.
type Hooks struct {
	// BeforeCreate fails Create before anything starts (image pull errors,
	// capacity errors, rate limits).
	BeforeCreate func(spec modal.SandboxSpec) error
	// AfterCreate fails Create after the sandbox started, leaving it running.
	AfterCreate func(id string) error
	// BeforeExec fails an Exec.
	BeforeExec func(id string, argv []string) error
	// AfterExec is called once an Exec's process runs (a test may Kill the
	// sandbox under it, as a preemption would).
	AfterExec func(id string, argv []string)
	// BeforeTerminate fails a Terminate.
	BeforeTerminate func(id string) error
}

// New returns a local cloud keeping its sandboxes under dir and using bin
// for `sim serve`. The emulated image has the GPUs asked for, vLLM 0.22.1
// and torch 2.9.0.
func New(dir, bin string) *Cloud {
	return &Cloud{Dir: dir, Bin: bin, VLLMVersion: "0.22.1", TorchVersion: "2.9.0+cu128"}
}

// Meta is a sandbox's record on disk.
type Meta struct {
	ID         string            `json:"id"`
	App        string            `json:"app"`
	Spec       modal.SandboxSpec `json:"spec"`
	Tags       map[string]string `json:"tags"`
	Port       int               `json:"port"`
	Command    []string          `json:"command"` // what actually runs
	Pgids      []int             `json:"pgids"`   // process groups to kill
	CreatedAt  time.Time         `json:"created_at"`
	Terminated bool              `json:"terminated"`
	ExitCode   *int              `json:"exit_code,omitempty"`
}

// box is a sandbox started by this process.
type box struct {
	mu    sync.Mutex
	meta  Meta
	done  chan struct{} // closed when the main command exited
	code  int
	timer *time.Timer
}

func (c *Cloud) dir(id string) string  { return filepath.Join(c.Dir, id) }
func (c *Cloud) root(id string) string { return filepath.Join(c.Dir, id, "root") }

// Create starts a sandbox running spec.Command.
func (c *Cloud) Create(ctx context.Context, spec modal.SandboxSpec) (modal.Sandbox, error) {
	if h := c.Hooks.BeforeCreate; h != nil {
		if err := h(spec); err != nil {
			return nil, err
		}
	}
	env := os.Environ()
	for _, name := range spec.Secrets {
		vars, ok := c.Secrets[name]
		if !ok {
			return nil, fmt.Errorf("%w: Secret %q", modal.ErrNotFound, name)
		}
		for k, v := range vars {
			env = append(env, k+"="+v)
		}
	}
	id := "sb-" + randomHex(8)
	if err := os.MkdirAll(c.root(id), 0o755); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	b := &box{done: make(chan struct{})}
	b.meta = Meta{ID: id, App: spec.App, Spec: spec, Tags: spec.Tags, Port: port, CreatedAt: time.Now().UTC()}
	argv := c.mainCommand(id, port, spec.Command)
	b.meta.Command = argv
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.Dir = c.root(id)
	// The server writes to files, as a container's output does not depend
	// on the client that created it staying alive.
	outF, err := os.Create(filepath.Join(c.dir(id), "stdout"))
	if err != nil {
		return nil, err
	}
	defer outF.Close()
	errF, err := os.Create(filepath.Join(c.dir(id), "stderr"))
	if err != nil {
		return nil, err
	}
	defer errF.Close()
	cmd.Stdout, cmd.Stderr = outF, errF
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("local sandbox: starting %v: %w", argv, err)
	}
	b.meta.Pgids = []int{cmd.Process.Pid}
	if err := c.save(&b.meta); err != nil {
		killGroups(b.meta.Pgids)
		return nil, err
	}
	c.mu.Lock()
	if c.boxes == nil {
		c.boxes = map[string]*box{}
	}
	c.boxes[id] = b
	c.mu.Unlock()
	go func() {
		err := cmd.Wait()
		b.mu.Lock()
		b.code = exitCode(cmd.ProcessState, err)
		code := b.code
		b.meta.ExitCode = &code
		// Another cloud over the same directory may have terminated it
		// (`infercrane cleanup` while the apply still runs): keep that.
		if d, err := c.load(id); err == nil && d.Terminated {
			b.meta.Terminated = true
		}
		c.save(&b.meta)
		b.mu.Unlock()
		close(b.done)
	}()
	if spec.Timeout > 0 {
		b.timer = time.AfterFunc(spec.Timeout, func() { c.Kill(id) })
	}
	if h := c.Hooks.AfterCreate; h != nil {
		if err := h(id); err != nil {
			return nil, err
		}
	}
	return &sandbox{c: c, id: id}, nil
}

// mainCommand maps the sandbox's command onto the emulated image.
func (c *Cloud) mainCommand(id string, port int, argv []string) []string {
	if len(argv) >= 3 && argv[0] == "vllm" && argv[1] == "serve" {
		if c.ServeCommand != nil {
			return c.ServeCommand(port, argv)
		}
		out := []string{c.Bin, "sim", "serve", "--model", argv[2], "--port", strconv.Itoa(port)}
		if v := flagValue(argv, "--max-model-len"); v != "" {
			out = append(out, "--max-model-len", v)
		}
		return append(out, c.SimArgs...)
	}
	return c.rewrite(id, port, argv)
}

func flagValue(argv []string, flag string) string {
	for i, a := range argv {
		if a == flag && i+1 < len(argv) {
			return argv[i+1]
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v
		}
	}
	return ""
}

// rewrite maps the container's localhost port and paths onto the host.
func (c *Cloud) rewrite(id string, port int, argv []string) []string {
	out := make([]string, len(argv))
	p := strconv.Itoa(port)
	for i, a := range argv {
		a = strings.ReplaceAll(a, "127.0.0.1:8000", "127.0.0.1:"+p)
		a = strings.ReplaceAll(a, "localhost:8000", "127.0.0.1:"+p)
		if k, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(v, "/") {
			a = k + "=" + c.inRoot(id, v)
		} else {
			a = c.inRoot(id, a)
		}
		out[i] = a
	}
	return out
}

// inRoot maps an absolute path into the sandbox's root when its top
// directory exists there.
func (c *Cloud) inRoot(id, p string) string {
	if !strings.HasPrefix(p, "/") {
		return p
	}
	top := strings.SplitN(strings.TrimPrefix(p, "/"), "/", 2)[0]
	if top == "" {
		return p
	}
	if _, err := os.Stat(filepath.Join(c.root(id), top)); err != nil {
		return p
	}
	return filepath.Join(c.root(id), p)
}

// save writes a sandbox's meta.json atomically.
func (c *Cloud) save(m *Meta) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	// A temporary file of its own per write: two clouds over one directory
	// (an apply and a later `cleanup`) may save the same sandbox at once,
	// and a shared temporary name interleaved their bytes.
	f, err := os.CreateTemp(c.dir(m.ID), "meta.json.*.tmp")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(b)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp, 0o644)
	}
	if werr != nil {
		os.Remove(tmp)
		return werr
	}
	return os.Rename(tmp, filepath.Join(c.dir(m.ID), "meta.json"))
}

// load reads a sandbox's meta.json.
func (c *Cloud) load(id string) (*Meta, error) {
	b, err := os.ReadFile(filepath.Join(c.dir(id), "meta.json"))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: sandbox %s", modal.ErrNotFound, id)
	}
	if err != nil {
		return nil, err
	}
	var m Meta
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("local sandbox %s: corrupt meta.json: %w", id, err)
	}
	return &m, nil
}

// Meta returns a sandbox's current record (for test assertions).
func (c *Cloud) Meta(id string) (*Meta, error) {
	if b := c.box(id); b != nil {
		b.mu.Lock()
		defer b.mu.Unlock()
		m := b.meta
		return &m, nil
	}
	return c.load(id)
}

func (c *Cloud) box(id string) *box {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.boxes[id]
}

// Attach returns a handle to a sandbox, also one another process created.
func (c *Cloud) Attach(ctx context.Context, id string) (modal.Sandbox, error) {
	if _, err := c.load(id); err != nil {
		return nil, err
	}
	return &sandbox{c: c, id: id}, nil
}

// List returns running sandboxes of app carrying all tags.
func (c *Cloud) List(ctx context.Context, app string, tags map[string]string) ([]modal.SandboxInfo, error) {
	entries, err := os.ReadDir(c.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []modal.SandboxInfo
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		m, err := c.Meta(e.Name())
		if err != nil {
			continue
		}
		if m.App != app || !c.running(m) || !hasTags(m.Tags, tags) {
			continue
		}
		out = append(out, modal.SandboxInfo{ID: m.ID, Tags: m.Tags})
	}
	return out, nil
}

// Running lists the ids of every running sandbox, whatever its app or tags.
func (c *Cloud) Running() []string {
	entries, _ := os.ReadDir(c.Dir)
	var out []string
	for _, e := range entries {
		if m, err := c.Meta(e.Name()); err == nil && c.running(m) {
			out = append(out, m.ID)
		}
	}
	return out
}

func hasTags(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// running reports whether a sandbox is neither terminated nor exited.
func (c *Cloud) running(m *Meta) bool {
	if m.Terminated || m.ExitCode != nil {
		return false
	}
	if b := c.box(m.ID); b != nil {
		select {
		case <-b.done:
			return false
		default:
			return true
		}
	}
	return len(m.Pgids) > 0 && alive(m.Pgids[0])
}

// Kill stops a sandbox's processes as Modal does at a timeout, on
// preemption or out of memory; unlike Terminate it is not a request by the
// user, and the sandbox reports exit code 137.
func (c *Cloud) Kill(id string) {
	m, err := c.Meta(id)
	if err != nil {
		return
	}
	killGroups(m.Pgids)
	if b := c.box(id); b != nil {
		<-b.done
		return
	}
	waitGone(m.Pgids, goneWithin)
	code := 137
	m.ExitCode = &code
	c.save(m)
}

// terminate is Sandbox.Terminate.
func (c *Cloud) terminate(id string) error {
	if h := c.Hooks.BeforeTerminate; h != nil {
		if err := h(id); err != nil {
			return err
		}
	}
	if b := c.box(id); b != nil {
		b.mu.Lock()
		pg := append([]int(nil), b.meta.Pgids...)
		b.mu.Unlock()
		killGroups(pg)
		<-b.done
		if b.timer != nil {
			b.timer.Stop()
		}
		b.mu.Lock()
		b.meta.Terminated = true
		err := c.save(&b.meta)
		b.mu.Unlock()
		return err
	}
	m, err := c.load(id)
	if err != nil {
		return err
	}
	killGroups(m.Pgids)
	waitGone(m.Pgids, goneWithin)
	m.Terminated = true
	return c.save(m)
}

// goneWithin bounds how long a sandbox terminated from another process may
// take to vanish after SIGKILL: milliseconds on a quiet machine, seconds on
// a loaded one, where a caller that looked after 5 s (cleanup, then a test's
// check that nothing serves) could still find the process running.
const goneWithin = 60 * time.Second

// waitGone waits until none of pids runs, for at most d: a kill is
// delivered asynchronously, and Terminate returns once it took effect.
func waitGone(pids []int, d time.Duration) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		left := false
		for _, p := range pids {
			if p > 1 && alive(p) {
				left = true
			}
		}
		if !left {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// addPgid records an exec's process group so Terminate kills it too.
func (c *Cloud) addPgid(id string, pgid int) {
	if b := c.box(id); b != nil {
		b.mu.Lock()
		b.meta.Pgids = append(b.meta.Pgids, pgid)
		c.save(&b.meta)
		b.mu.Unlock()
		return
	}
	if m, err := c.load(id); err == nil {
		m.Pgids = append(m.Pgids, pgid)
		c.save(m)
	}
}

// killGroups kills each process group, and the process of that id in case
// it does not lead a group of its own.
func killGroups(pgids []int) {
	for _, pg := range pgids {
		if pg > 1 {
			syscall.Kill(-pg, syscall.SIGKILL)
			syscall.Kill(pg, syscall.SIGKILL)
		}
	}
}

// alive reports whether pid runs; a zombie (killed, not yet reaped by a
// parent that never will) counts as dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return true
	}
	// /proc/PID/stat is "pid (comm) state ..."; comm may hold spaces.
	if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
		return b[i+2] != 'Z' && b[i+2] != 'X'
	}
	return true
}

func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return -1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// freePort picks a free loopback port for a sandbox's server, which binds
// it later (a container has its port to itself; here the port is free
// when picked, and the server binds it after starting). The port comes
// from below the kernel's ephemeral range (ip_local_port_range), from
// which every bind to port 0 and every outgoing connection on the machine
// draws: a port taken from there and released for the server could be
// taken first by any of them on a busy test machine, and the server's
// bind failed. Below the range only another explicit bind competes.
func freePort() (int, error) {
	lo, hi := portsBelowEphemeral()
	for range 64 {
		p := lo + mrand.IntN(hi-lo+1)
		if l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p)); err == nil {
			l.Close()
			return p, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// portsBelowEphemeral is the range freePort draws from: from 10000 up to
// the start of the kernel's ephemeral range (32768 on Linux by default),
// or 10000-32767 where the range cannot be read or leaves too little room.
func portsBelowEphemeral() (lo, hi int) {
	lo, hi = 10000, 32767
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if start, err := strconv.Atoi(f[0]); err == nil && start-1 >= lo+1000 {
				hi = start - 1
			}
		}
	}
	return lo, hi
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

var _ io.Reader = (*pipe)(nil)

package localcloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/infercrane/infercrane/plugins/modal"
)

// sandbox is a handle on one local sandbox.
type sandbox struct {
	c  *Cloud
	id string
}

func (s *sandbox) ID() string { return s.id }

func (s *sandbox) Logs() (io.Reader, io.Reader) {
	b := s.c.box(s.id)
	if b == nil {
		return nil, nil
	}
	return s.follow("stdout", b.done), s.follow("stderr", b.done)
}

// follow reads a file the server writes, like `tail -f`, until the server
// has exited and everything is read.
func (s *sandbox) follow(name string, done <-chan struct{}) io.Reader {
	f, err := os.Open(filepath.Join(s.c.dir(s.id), name))
	if err != nil {
		return nil
	}
	return &follower{f: f, done: done}
}

type follower struct {
	f    *os.File
	done <-chan struct{}
}

func (r *follower) Read(p []byte) (int, error) {
	for {
		n, err := r.f.Read(p)
		if n > 0 || err != io.EOF {
			return n, err
		}
		select {
		case <-r.done:
			// One last read catches what was written just before the exit.
			if n, _ := r.f.Read(p); n > 0 {
				return n, nil
			}
			r.f.Close()
			return 0, io.EOF
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *sandbox) Poll(ctx context.Context) (int, bool, error) {
	m, err := s.c.Meta(s.id)
	if err != nil {
		return 0, false, err
	}
	if m.ExitCode != nil {
		return *m.ExitCode, true, nil
	}
	if b := s.c.box(s.id); b != nil {
		select {
		case <-b.done:
			b.mu.Lock()
			defer b.mu.Unlock()
			return b.code, true, nil
		default:
			return 0, false, nil
		}
	}
	if !s.c.running(m) {
		return -1, true, nil
	}
	return 0, false, nil
}

func (s *sandbox) Terminate(ctx context.Context) error { return s.c.terminate(s.id) }

// CopyIn writes the file into the sandbox's root with mode 0644, as
// Modal's filesystem API does: the caller must chmod what it executes.
func (s *sandbox) CopyIn(ctx context.Context, localPath, remotePath string) error {
	if !strings.HasPrefix(remotePath, "/") {
		return fmt.Errorf("local sandbox: remote path %q must be absolute", remotePath)
	}
	if err := s.alive(); err != nil {
		return err
	}
	src, err := os.Open(localPath)
	if err != nil {
		return err
	}
	defer src.Close()
	dst := filepath.Join(s.c.root(s.id), remotePath)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, src); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func (s *sandbox) alive() error {
	_, exited, err := s.Poll(context.Background())
	if err != nil {
		return err
	}
	if exited {
		return fmt.Errorf("local sandbox %s has finished; it cannot run commands", s.id)
	}
	return nil
}

// Exec runs argv in the sandbox: the image's stand-ins for nvidia-smi and
// python3, anything else from the host with paths and port rewritten.
func (s *sandbox) Exec(ctx context.Context, argv []string, opts modal.ExecOptions) (modal.Process, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("local sandbox: empty command")
	}
	if h := s.c.Hooks.BeforeExec; h != nil {
		if err := h(s.id, argv); err != nil {
			return nil, err
		}
	}
	if err := s.alive(); err != nil {
		return nil, err
	}
	m, err := s.c.Meta(s.id)
	if err != nil {
		return nil, err
	}
	switch argv[0] {
	case "nvidia-smi":
		return printed(nvidiaSMI(m.Spec.GPU, s.c.GPUName, s.c.ComputeCap)), nil
	case "python3":
		return printed(fmt.Sprintf("%s\n%s\n", s.c.VLLMVersion, s.c.TorchVersion)), nil
	}
	args := s.c.rewrite(s.id, m.Port, argv)
	p := &process{stdout: newPipe(), stderr: newPipe(), done: make(chan struct{})}
	var cmd *exec.Cmd
	// A binary just copied into the sandbox can be "text file busy" for a
	// moment: a process this test binary forks meanwhile holds the copy's
	// write descriptor until it execs (golang/go#22315). A container does
	// not share that descriptor table, so the stand-in retries.
	for try := 0; ; try++ {
		cmd = exec.Command(args[0], args[1:]...)
		cmd.Dir = s.c.root(s.id)
		cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err = cmd.Start(); !errors.Is(err, syscall.ETXTBSY) || try >= 50 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		// A container answers a missing program with exit code 127 or 126.
		p.stderr.Write([]byte(err.Error() + "\n"))
		p.code = 127
		if os.IsPermission(err) || strings.Contains(err.Error(), "permission denied") {
			p.code = 126
		}
		p.stdout.Close()
		p.stderr.Close()
		close(p.done)
		return p, nil
	}
	p.pgid = cmd.Process.Pid
	s.c.addPgid(s.id, p.pgid)
	if h := s.c.Hooks.AfterExec; h != nil {
		h(s.id, argv)
	}
	go func() {
		err := cmd.Wait()
		p.code = exitCode(cmd.ProcessState, err)
		p.stdout.Close()
		p.stderr.Close()
		close(p.done)
	}()
	if opts.Timeout > 0 {
		t := time.AfterFunc(opts.Timeout, func() { syscall.Kill(-p.pgid, syscall.SIGKILL) })
		go func() { <-p.done; t.Stop() }()
	}
	return p, nil
}

// process is a command started by Exec.
type process struct {
	stdout, stderr *pipe
	done           chan struct{}
	code           int
	pgid           int
}

func (p *process) Stdout() io.Reader { return p.stdout }
func (p *process) Stderr() io.Reader { return p.stderr }

// Wait returns the exit code; when ctx ends first the command is killed.
func (p *process) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
		return p.code, nil
	case <-ctx.Done():
		if p.pgid > 0 {
			syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
		<-p.done
		return p.code, ctx.Err()
	}
}

// printed is a finished process that printed out.
func printed(out string) *process {
	p := &process{stdout: newPipe(), stderr: newPipe(), done: make(chan struct{})}
	p.stdout.Write([]byte(out))
	p.stdout.Close()
	p.stderr.Close()
	close(p.done)
	return p
}

// computeCaps are the compute capabilities of the catalog's GPUs.
var computeCaps = map[string]string{"T4": "7.5", "L4": "8.9", "A10G": "8.6", "A10": "8.6", "L40S": "8.9",
	"A100-40GB": "8.0", "A100-80GB": "8.0", "A100": "8.0", "H100": "9.0", "H200": "9.0", "B200": "10.0"}

// nvidiaSMI answers `nvidia-smi --query-gpu=name,compute_cap
// --format=csv,noheader` for a sandbox's GPU request.
func nvidiaSMI(request, name, capab string) string {
	typ, count := request, 1
	if i := strings.LastIndexByte(typ, ':'); i >= 0 {
		fmt.Sscan(typ[i+1:], &count)
		typ = typ[:i]
	}
	typ = strings.ToUpper(strings.TrimSuffix(typ, "!"))
	if name == "" {
		name = "NVIDIA " + typ
	}
	if capab == "" {
		capab = computeCaps[typ]
	}
	var b strings.Builder
	for range max(count, 1) {
		fmt.Fprintf(&b, "%s, %s\n", name, capab)
	}
	return b.String()
}

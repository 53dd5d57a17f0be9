package modal

import (
	"context"
	"errors"
	"io"
	"time"
)

// Cloud is the narrow slice of Modal's API that the executor and `infercrane
// cleanup` use. The production implementation (NewSDKCloud) is a thin adapter
// over Modal's Go SDK; localcloud implements it with local processes for tests.
type Cloud interface {
	// Create starts a sandbox running spec.Command and returns once it is
	// scheduled. Implementations return errors wrapping ErrCapacity for
	// rate limits and capacity shortages, and ErrImage when the image cannot
	// be pulled or built.
	Create(ctx context.Context, spec SandboxSpec) (Sandbox, error)
	// Attach returns a handle to an existing sandbox by id.
	Attach(ctx context.Context, id string) (Sandbox, error)
	// List returns the running sandboxes of app that carry all of tags.
	List(ctx context.Context, app string, tags map[string]string) ([]SandboxInfo, error)
}

// Sandbox is one running Modal Sandbox.
type Sandbox interface {
	// ID is Modal's sandbox id ("sb-...").
	ID() string
	// Logs returns the stdout and stderr of the sandbox's command; either may
	// be nil when not available (an attached sandbox).
	Logs() (stdout, stderr io.Reader)
	// Exec runs argv inside the sandbox.
	Exec(ctx context.Context, argv []string, opts ExecOptions) (Process, error)
	// CopyIn copies a local file to an absolute path in the sandbox, creating
	// parent directories.
	CopyIn(ctx context.Context, localPath, remotePath string) error
	// Poll reports whether the sandbox's command has exited, and its code.
	Poll(ctx context.Context) (code int, exited bool, err error)
	// Terminate stops the sandbox; terminating a stopped sandbox succeeds.
	Terminate(ctx context.Context) error
}

// Process is a command started with Sandbox.Exec.
type Process interface {
	Stdout() io.Reader
	Stderr() io.Reader
	// Wait blocks until the command exits and returns its exit code.
	Wait(ctx context.Context) (int, error)
}

// ExecOptions tune Sandbox.Exec.
type ExecOptions struct {
	// Timeout bounds the command (0: none besides the sandbox's own).
	Timeout time.Duration
}

// SandboxSpec is everything a sandbox is created with. It holds names of
// secrets, never their values.
type SandboxSpec struct {
	App         string            `json:"app"`
	Environment string            `json:"environment,omitempty"`
	Image       string            `json:"image"`
	GPU         string            `json:"gpu"`
	CPU         float64           `json:"cpu,omitempty"`        // physical cores requested (0: Modal's default)
	MemoryMiB   int               `json:"memory_mib,omitempty"` // memory requested (0: Modal's default)
	Command     []string          `json:"command"`
	Env         map[string]string `json:"env,omitempty"`
	Secrets     []string          `json:"secrets,omitempty"`
	Volume      string            `json:"volume,omitempty"`
	VolumeMount string            `json:"volume_mount,omitempty"`
	Timeout     time.Duration     `json:"timeout"`
	IdleTimeout time.Duration     `json:"idle_timeout"`
	Tags        map[string]string `json:"tags"`
	Region      string            `json:"region,omitempty"`
	Cloud       string            `json:"cloud,omitempty"`
}

// SandboxInfo is one listed sandbox.
type SandboxInfo struct {
	ID   string            `json:"id"`
	Tags map[string]string `json:"tags"`
}

// Errors a Cloud wraps so the executor can react to them.
var (
	// ErrCapacity is a rate limit or a shortage of GPUs; it is retried with backoff.
	ErrCapacity = errors.New("modal: rate limited or out of GPU capacity")
	// ErrImage means the image could not be pulled or built.
	ErrImage = errors.New("modal: image could not be pulled or built")
	// ErrNotFound means the sandbox (or app) does not exist.
	ErrNotFound = errors.New("modal: not found")
)

// Tag names put on every sandbox InferCrane creates.
const (
	TagInfercrane = "infercrane" // always "1": what `infercrane cleanup` looks for
	TagScreen     = "screen"
	TagDeployment = "deployment"
	TagApply      = "apply"
	TagCreatedAt  = "created_at" // RFC 3339 UTC; `cleanup --older-than` reads it
	TagProfile    = "profile"    // a sharded trace profile's job id
	TagShard      = "shard"      // its shard, "I/N"
)

package modal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	sdk "github.com/modal-labs/modal-client/go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sdkCloud adapts Modal's Go SDK to Cloud. It only translates parameters and
// errors; every decision lives in the executor, which is tested against
// localcloud. This file is verified only against Modal itself.
type sdkCloud struct {
	c   *sdk.Client
	env string
}

// NewSDKCloud connects to Modal with the credentials Modal's own clients
// use: MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, else the MODAL_PROFILE (or
// active) profile of ~/.modal.toml. environment overrides the profile's.
// No network call is made until the first request.
func NewSDKCloud(environment string) (Cloud, error) {
	return newSDKCloud(&sdk.ClientParams{Environment: environment})
}

// newSDKCloud is NewSDKCloud with the SDK's parameters (tests pass a fake
// control plane).
func newSDKCloud(params *sdk.ClientParams) (Cloud, error) {
	environment := params.Environment
	c, err := sdk.NewClientWithOptions(params)
	if err != nil {
		return nil, fmt.Errorf("modal: setting up the Modal client failed: %v; %s", err, authHint)
	}
	return &sdkCloud{c: c, env: environment}, nil
}

const authHint = "set MODAL_TOKEN_ID and MODAL_TOKEN_SECRET, or run `modal token new` to write ~/.modal.toml (MODAL_PROFILE selects a profile)"

// classify wraps SDK and gRPC errors in the package's sentinel errors.
func classify(err error) error {
	if err == nil {
		return nil
	}
	var exhausted sdk.ResourceExhaustedError
	var notFound sdk.NotFoundError
	var remote sdk.RemoteError
	switch {
	case errors.As(err, &exhausted):
		return fmt.Errorf("%w: %v", ErrCapacity, err)
	case errors.As(err, &notFound):
		return fmt.Errorf("%w: %v", ErrNotFound, err)
	case errors.As(err, &remote) && strings.Contains(remote.Exception, "Image build"):
		return fmt.Errorf("%w: %v", ErrImage, err)
	}
	if st, ok := status.FromError(err); ok {
		switch st.Code() {
		case codes.ResourceExhausted:
			return fmt.Errorf("%w: %v", ErrCapacity, err)
		case codes.NotFound:
			return fmt.Errorf("%w: %v", ErrNotFound, err)
		case codes.Unauthenticated, codes.PermissionDenied:
			return fmt.Errorf("modal: Modal rejected the credentials (%v); %s", st.Message(), authHint)
		}
	}
	return err
}

func seconds(d time.Duration) time.Duration {
	return max(d.Round(time.Second), time.Second)
}

func (s *sdkCloud) Create(ctx context.Context, spec SandboxSpec) (Sandbox, error) {
	app, err := s.c.Apps.FromName(ctx, spec.App, &sdk.AppFromNameParams{Environment: spec.Environment, CreateIfMissing: true})
	if err != nil {
		return nil, classify(err)
	}
	// vllm/vllm-openai's ENTRYPOINT is `vllm serve`; clear it so the command runs as given.
	image := s.c.Images.FromRegistry(spec.Image, nil).DockerfileCommands([]string{"ENTRYPOINT []"}, nil)
	params := &sdk.SandboxCreateParams{
		GPU:         spec.GPU,
		CPU:         spec.CPU,
		MemoryMiB:   spec.MemoryMiB,
		Command:     spec.Command,
		Env:         spec.Env,
		Timeout:     seconds(spec.Timeout),
		IdleTimeout: seconds(spec.IdleTimeout),
		Tags:        spec.Tags,
		Cloud:       spec.Cloud,
	}
	if spec.Region != "" {
		params.Regions = []string{spec.Region}
	}
	for _, name := range spec.Secrets {
		sec, err := s.c.Secrets.FromName(ctx, name, &sdk.SecretFromNameParams{Environment: spec.Environment})
		if err != nil {
			return nil, fmt.Errorf("modal: Secret %q: %w; create it with `modal secret create %s KEY=VALUE`", name, classify(err), name)
		}
		params.Secrets = append(params.Secrets, sec)
	}
	if spec.Volume != "" {
		vol, err := s.c.Volumes.FromName(ctx, spec.Volume, &sdk.VolumeFromNameParams{Environment: spec.Environment, CreateIfMissing: true})
		if err != nil {
			return nil, fmt.Errorf("modal: Volume %q: %w", spec.Volume, classify(err))
		}
		params.Volumes = map[string]*sdk.Volume{spec.VolumeMount: vol}
	}
	sb, err := s.c.Sandboxes.Create(ctx, app, image, params)
	if err != nil {
		return nil, classify(err)
	}
	return &sdkSandbox{sb: sb}, nil
}

func (s *sdkCloud) Attach(ctx context.Context, id string) (Sandbox, error) {
	sb, err := s.c.Sandboxes.FromID(ctx, id, nil)
	if err != nil {
		return nil, classify(err)
	}
	return &sdkSandbox{sb: sb, attached: true}, nil
}

func (s *sdkCloud) List(ctx context.Context, appName string, tags map[string]string) ([]SandboxInfo, error) {
	app, err := s.c.Apps.FromName(ctx, appName, &sdk.AppFromNameParams{Environment: s.env})
	if err != nil {
		if errors.Is(classify(err), ErrNotFound) {
			return nil, nil
		}
		return nil, classify(err)
	}
	seq, err := s.c.Sandboxes.List(ctx, &sdk.SandboxListParams{AppID: app.AppID, Tags: tags, Environment: s.env})
	if err != nil {
		return nil, classify(err)
	}
	var out []SandboxInfo
	for sb, err := range seq {
		if err != nil {
			return out, classify(err)
		}
		t, err := sb.GetTags(ctx, nil)
		if err != nil {
			return out, classify(err)
		}
		out = append(out, SandboxInfo{ID: sb.SandboxID, Tags: t})
	}
	return out, nil
}

type sdkSandbox struct {
	sb       *sdk.Sandbox
	attached bool
}

func (s *sdkSandbox) ID() string { return s.sb.SandboxID }

func (s *sdkSandbox) Logs() (io.Reader, io.Reader) {
	if s.attached {
		return nil, nil
	}
	return s.sb.Stdout, s.sb.Stderr
}

func (s *sdkSandbox) Exec(ctx context.Context, argv []string, opts ExecOptions) (Process, error) {
	p := &sdk.SandboxExecParams{}
	if opts.Timeout > 0 {
		p.Timeout = seconds(opts.Timeout)
	}
	cp, err := s.sb.Exec(ctx, argv, p)
	if err != nil {
		return nil, classify(err)
	}
	return sdkProcess{cp}, nil
}

func (s *sdkSandbox) CopyIn(ctx context.Context, localPath, remotePath string) error {
	return classify(s.sb.Filesystem.CopyFromLocal(ctx, localPath, remotePath, nil))
}

func (s *sdkSandbox) Poll(ctx context.Context) (int, bool, error) {
	code, err := s.sb.Poll(ctx, nil)
	if err != nil {
		return 0, false, classify(err)
	}
	if code == nil {
		return 0, false, nil
	}
	return *code, true, nil
}

func (s *sdkSandbox) Terminate(ctx context.Context) error {
	_, err := s.sb.Terminate(ctx, nil)
	return classify(err)
}

type sdkProcess struct{ cp *sdk.ContainerProcess }

func (p sdkProcess) Stdout() io.Reader { return p.cp.Stdout }
func (p sdkProcess) Stderr() io.Reader { return p.cp.Stderr }
func (p sdkProcess) Wait(ctx context.Context) (int, error) {
	code, err := p.cp.Wait(ctx, nil)
	return code, classify(err)
}

package modal

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modal-labs/modal-client/go"
	pb "github.com/modal-labs/modal-client/go/proto/modal_proto"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeControlPlane answers the Modal RPCs the adapter's calls make and
// records the requests. Any other RPC panics (the embedded interface is nil),
// so a test fails loudly when the adapter starts using something new.
type fakeControlPlane struct {
	pb.ModalClientClient

	mu         sync.Mutex
	images     []*pb.ImageGetOrCreateRequest
	secrets    []string
	volumes    []string
	create     *pb.SandboxCreateRequest
	createErr  error
	imageFail  string
	terminated []string
	listed     *pb.SandboxListRequest
}

const fakeSandboxID = "sb-ABCDEFGHIJKLMNOPQRSTUV" // the V1 id shape GPU sandboxes have

func (f *fakeControlPlane) AppGetOrCreate(ctx context.Context, in *pb.AppGetOrCreateRequest, _ ...grpc.CallOption) (*pb.AppGetOrCreateResponse, error) {
	if in.GetAppName() == "missing" {
		return nil, status.Error(codes.NotFound, "App not found")
	}
	return pb.AppGetOrCreateResponse_builder{AppId: "ap-" + in.GetAppName()}.Build(), nil
}

func (f *fakeControlPlane) ImageGetOrCreate(ctx context.Context, in *pb.ImageGetOrCreateRequest, _ ...grpc.CallOption) (*pb.ImageGetOrCreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.images = append(f.images, in)
	res := pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_SUCCESS}.Build()
	if f.imageFail != "" {
		res = pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_FAILURE, Exception: f.imageFail}.Build()
	}
	return pb.ImageGetOrCreateResponse_builder{ImageId: "im-" + string(rune('0'+len(f.images))), Result: res}.Build(), nil
}

func (f *fakeControlPlane) SecretGetOrCreate(ctx context.Context, in *pb.SecretGetOrCreateRequest, _ ...grpc.CallOption) (*pb.SecretGetOrCreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.secrets = append(f.secrets, in.GetDeploymentName())
	return pb.SecretGetOrCreateResponse_builder{SecretId: "st-" + in.GetDeploymentName()}.Build(), nil
}

func (f *fakeControlPlane) VolumeGetOrCreate(ctx context.Context, in *pb.VolumeGetOrCreateRequest, _ ...grpc.CallOption) (*pb.VolumeGetOrCreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.volumes = append(f.volumes, in.GetDeploymentName())
	return pb.VolumeGetOrCreateResponse_builder{VolumeId: "vo-" + in.GetDeploymentName()}.Build(), nil
}

func (f *fakeControlPlane) SandboxCreate(ctx context.Context, in *pb.SandboxCreateRequest, _ ...grpc.CallOption) (*pb.SandboxCreateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.create = in
	if f.createErr != nil {
		return nil, f.createErr
	}
	return pb.SandboxCreateResponse_builder{SandboxId: fakeSandboxID}.Build(), nil
}

func (f *fakeControlPlane) SandboxGetTaskId(ctx context.Context, in *pb.SandboxGetTaskIdRequest, _ ...grpc.CallOption) (*pb.SandboxGetTaskIdResponse, error) {
	task := "ta-1"
	return pb.SandboxGetTaskIdResponse_builder{TaskId: &task}.Build(), nil
}

func (f *fakeControlPlane) SandboxListV2(ctx context.Context, in *pb.SandboxListRequest, _ ...grpc.CallOption) (*pb.SandboxListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if in.GetBeforeTimestamp() != 0 {
		return pb.SandboxListResponse_builder{}.Build(), nil
	}
	f.listed = in
	return pb.SandboxListResponse_builder{Sandboxes: []*pb.SandboxInfo{pb.SandboxInfo_builder{Id: fakeSandboxID, CreatedAt: 100}.Build()}}.Build(), nil
}

func (f *fakeControlPlane) SandboxTagsGet(ctx context.Context, in *pb.SandboxTagsGetRequest, _ ...grpc.CallOption) (*pb.SandboxTagsGetResponse, error) {
	return pb.SandboxTagsGetResponse_builder{Tags: []*pb.SandboxTag{
		pb.SandboxTag_builder{TagName: TagInfercrane, TagValue: "1"}.Build(),
		pb.SandboxTag_builder{TagName: TagDeployment, TagValue: "d1"}.Build(),
	}}.Build(), nil
}

func (f *fakeControlPlane) SandboxTerminate(ctx context.Context, in *pb.SandboxTerminateRequest, _ ...grpc.CallOption) (*pb.SandboxTerminateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminated = append(f.terminated, in.GetSandboxId())
	return &pb.SandboxTerminateResponse{}, nil
}

func (f *fakeControlPlane) SandboxWait(ctx context.Context, in *pb.SandboxWaitRequest, _ ...grpc.CallOption) (*pb.SandboxWaitResponse, error) {
	return pb.SandboxWaitResponse_builder{Result: pb.GenericResult_builder{Status: pb.GenericResult_GENERIC_STATUS_TERMINATED}.Build()}.Build(), nil
}

func fakeSDK(t *testing.T) (*fakeControlPlane, Cloud) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("MODAL_IMAGE_BUILDER_VERSION", "2025.06")
	t.Setenv("MODAL_TOKEN_ID", "ak-x")
	t.Setenv("MODAL_TOKEN_SECRET", "as-x")
	f := &fakeControlPlane{}
	c, err := newSDKCloud(&sdk.ClientParams{Environment: "dev", ControlPlaneClient: f})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

// The adapter translates a SandboxSpec into exactly the request Modal gets.
func TestSDKCreateRequest(t *testing.T) {
	f, c := fakeSDK(t)
	spec := SandboxSpec{App: "infercrane", Environment: "dev", Image: "vllm/vllm-openai:v0.22.1", GPU: "A100-80GB:2",
		Command: []string{"vllm", "serve", "m"}, Secrets: []string{"huggingface"}, Volume: "hf-cache", VolumeMount: "/root/.cache/huggingface",
		Timeout: 30 * time.Minute, IdleTimeout: 5*time.Minute + 300*time.Millisecond, Region: "us-east", Cloud: "aws",
		Tags: map[string]string{TagInfercrane: "1", TagDeployment: "d1"}}
	sb, err := c.Create(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if sb.ID() != fakeSandboxID {
		t.Fatal(sb.ID())
	}
	def := f.create.GetDefinition()
	gpu := def.GetResources().GetGpuConfig()
	if gpu.GetGpuType() != "A100-80GB" || gpu.GetCount() != 2 {
		t.Errorf("gpu %v", gpu)
	}
	if !slices.Equal(def.GetEntrypointArgs(), spec.Command) || def.GetTimeoutSecs() != 1800 || def.GetIdleTimeoutSecs() != 300 {
		t.Errorf("entrypoint %v, timeout %d, idle %d", def.GetEntrypointArgs(), def.GetTimeoutSecs(), def.GetIdleTimeoutSecs())
	}
	if !slices.Equal(def.GetSecretIds(), []string{"st-huggingface"}) || len(def.GetVolumeMounts()) != 1 ||
		def.GetVolumeMounts()[0].GetMountPath() != "/root/.cache/huggingface" || def.GetVolumeMounts()[0].GetVolumeId() != "vo-hf-cache" {
		t.Errorf("secrets %v, volumes %v", def.GetSecretIds(), def.GetVolumeMounts())
	}
	if def.GetCloudProviderStr() != "aws" || !slices.Equal(def.GetSchedulerPlacement().GetRegions(), []string{"us-east"}) {
		t.Errorf("cloud %q, regions %v", def.GetCloudProviderStr(), def.GetSchedulerPlacement().GetRegions())
	}
	tags := map[string]string{}
	for _, tg := range f.create.GetTags() {
		tags[tg.GetTagName()] = tg.GetTagValue()
	}
	if tags[TagInfercrane] != "1" || tags[TagDeployment] != "d1" || f.create.GetAppId() != "ap-infercrane" {
		t.Errorf("tags %v, app %s", tags, f.create.GetAppId())
	}
	// The registry image, then a layer clearing its ENTRYPOINT.
	if len(f.images) != 2 || !slices.Equal(f.images[1].GetImage().GetDockerfileCommands()[1:], []string{"ENTRYPOINT []"}) {
		for _, im := range f.images {
			t.Logf("image layer: %v", im.GetImage().GetDockerfileCommands())
		}
		t.Error("the image's ENTRYPOINT is not cleared")
	}
	if first := f.images[0].GetImage().GetDockerfileCommands(); len(first) == 0 || first[0] != "FROM vllm/vllm-openai:v0.22.1" {
		t.Errorf("base layer %v", first)
	}
	if err := sb.Terminate(t.Context()); err != nil || !slices.Equal(f.terminated, []string{fakeSandboxID}) {
		t.Fatalf("terminate: %v, %v", err, f.terminated)
	}
	if code, exited, err := sb.Poll(t.Context()); err != nil || !exited || code != 137 {
		t.Fatalf("poll: %d %v %v", code, exited, err)
	}
}

func TestSDKErrorsClassified(t *testing.T) {
	f, c := fakeSDK(t)
	f.imageFail = "manifest unknown"
	_, err := c.Create(t.Context(), SandboxSpec{App: "a", Image: "vllm/vllm-openai:v9", GPU: "L4", Timeout: time.Minute, IdleTimeout: time.Minute})
	if !errors.Is(err, ErrImage) {
		t.Fatalf("image failure: %v", err)
	}
	f.imageFail = ""
	f.createErr = status.Error(codes.ResourceExhausted, "rate limit")
	_, err = c.Create(t.Context(), SandboxSpec{App: "a", Image: "i", GPU: "L4", Timeout: time.Minute, IdleTimeout: time.Minute})
	if !errors.Is(err, ErrCapacity) {
		t.Fatalf("rate limit: %v", err)
	}
	f.createErr = status.Error(codes.Unauthenticated, "bad token")
	_, err = c.Create(t.Context(), SandboxSpec{App: "a", Image: "i", GPU: "L4", Timeout: time.Minute, IdleTimeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "MODAL_TOKEN_ID") || !strings.Contains(err.Error(), "modal token new") {
		t.Fatalf("auth: %v", err)
	}
}

func TestSDKListByTag(t *testing.T) {
	f, c := fakeSDK(t)
	infos, err := c.List(t.Context(), "infercrane", map[string]string{TagInfercrane: "1"})
	if err != nil || len(infos) != 1 || infos[0].ID != fakeSandboxID || infos[0].Tags[TagDeployment] != "d1" {
		t.Fatalf("%+v, %v", infos, err)
	}
	if f.listed.GetAppId() != "ap-infercrane" || len(f.listed.GetTags()) != 1 || f.listed.GetIncludeFinished() {
		t.Fatalf("list request %v", f.listed)
	}
	if infos, err := c.List(t.Context(), "missing", nil); err != nil || len(infos) != 0 {
		t.Fatalf("missing app: %v, %v", infos, err)
	}
}

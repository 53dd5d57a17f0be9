package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/planner/state"
)

// s3Store is a real S3 protocol server with one empty bucket, for the
// backend's end-to-end tests: gofakes3 on 127.0.0.1 in this process, or,
// when INFERCRANE_TEST_S3_ENDPOINT names one (make integration starts
// moto's server), that independent implementation.
type s3Store struct {
	url, bucket string
	client      *s3.Client
}

func newS3Store(t *testing.T, bucket string) *s3Store {
	t.Helper()
	url := os.Getenv("INFERCRANE_TEST_S3_ENDPOINT")
	if url == "" {
		srv := httptest.NewServer(gofakes3.New(s3mem.New()).Server())
		t.Cleanup(srv.Close)
		url = srv.URL
	} else {
		// One server serves every test: a bucket each.
		bucket = fmt.Sprintf("%s-%d", bucket, time.Now().UnixNano())
	}
	client := s3.New(s3.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(url),
		UsePathStyle: true,
		Credentials:  credentials.NewStaticCredentialsProvider("rig-access", "rig-secret", ""),
	})
	if _, err := client.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s at %s: %v", bucket, url, err)
	}
	return &s3Store{url: url, bucket: bucket, client: client}
}

// objects returns every key in the bucket with its body.
func (s *s3Store) objects(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	ctx := context.Background()
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			obj, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: o.Key})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(obj.Body)
			obj.Body.Close()
			out[aws.ToString(o.Key)] = b
		}
	}
	return out
}

// backendBlock is an infercrane block keeping the state in the store's
// bucket under prefix.
func backendBlock(store *s3Store, prefix string) string {
	return fmt.Sprintf(`infercrane {
  backend "s3" {
    bucket         = %q
    prefix         = %q
    region         = "us-east-1"
    endpoint       = %q
    use_path_style = true
  }
}
`, store.bucket, prefix, store.url)
}

// backendEnv gives the clones credentials through the SDK's default chain
// (the environment), never a file, and a short lock renewal period.
var backendEnv = []string{"AWS_ACCESS_KEY_ID=rig-access", "AWS_SECRET_ACCESS_KEY=rig-secret",
	"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "INFERCRANE_LOCK_RENEW=200ms"}

// backendRig is a clone of a repository whose spec keeps its state in the
// store: every clone has its own working directory (and so its own
// .infercrane cache), and all share the bucket. A sensitive variable,
// planted through the environment, goes into the runtime's args.
func backendRig(t *testing.T, store *s3Store, runs int) *applyRig {
	t.Helper()
	spec := backendBlock(store, "screens/rig") + `variable "tok" {
  type      = string
  sensitive = true
}
` + strings.Replace(rigSpec(simBlock, runs), `version = "0.22.1"`, "version = \"0.22.1\"\n  args    = [\"--api-key\", var.tok]", 1)
	r := newRig(t, spec)
	r.env = append(r.env, backendEnv...)
	r.env = append(r.env, "INFERCRANE_VAR_tok=PLANTED-S3-TOKEN-93e1")
	return r
}

func (r *applyRig) run(args ...string) (int, string) {
	r.t.Helper()
	cmd := r.command(args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		r.t.Fatalf("%v: %v", args, err)
	}
	return code, out.String()
}

var lockIDIn = regexp.MustCompile(`lock ID ([0-9a-f]{16})`)

// TestTeamWorkflowOnTheS3Backend is the team workflow of docs/state.md on
// one machine: clone A applies part of a screen and is killed; clone B's
// plan shows only the runs left; B's apply reports A's stale lock, B
// forces it open and resumes, while A's second apply is refused naming B;
// the evidence in the bucket verifies from a third clone; no run is lost or
// repeated, and the planted secret is in no object key or body.
func TestTeamWorkflowOnTheS3Backend(t *testing.T) {
	if testing.Short() {
		t.Skip("starts several applies")
	}
	store := newS3Store(t, "team")
	const runs = 6
	a, b, c := backendRig(t, store, runs), backendRig(t, store, runs), backendRig(t, store, runs)

	// Clone A applies and is killed after two runs.
	ra := a.start()
	for n := 0; n < 2; n++ {
		ra.until(t, "a finished run", func(e executor.Event) bool { return e.Type == executor.EventRunFinished })
	}
	ra.cmd.Process.Signal(syscall.SIGKILL)
	ra.wait(t)
	a.noLeftovers()
	done := journalRunsInBucket(t, store)
	if len(done) < 2 || len(done) >= runs {
		t.Fatalf("after the kill the bucket holds runs %v", done)
	}

	// Clone B plans against the shared state: only the runs left.
	code, out := b.run("plan")
	if code != 0 {
		t.Fatalf("plan in clone B: %d\n%s", code, out)
	}
	left := runs - len(done)
	if !strings.Contains(out, fmt.Sprintf("%d of %d runs done", len(done), runs)) || !strings.Contains(out, fmt.Sprintf("(%d runs,", left)) {
		t.Errorf("clone B's plan does not show %d of %d runs done and %d to run:\n%s", len(done), runs, left, out)
	}

	// B's apply is refused: A's lock is stale, and the refusal says how to free it.
	// (A lock counts as stale once three renewal periods passed without a
	// renewal: on a loaded machine that may take a few tries to observe.)
	var m []string
	for try := 0; try < 50; try++ {
		code, out = b.run("apply", "-auto-approve")
		if m = lockIDIn.FindStringSubmatch(out); code == 0 || m == nil || strings.Contains(out, "stale") {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if code == 0 || m == nil || !strings.Contains(out, "stale") || !strings.Contains(out, "force-unlock") {
		t.Fatalf("apply over a killed holder's lock: exit %d\n%s", code, out)
	}
	if code, out := b.run("force-unlock", m[1]); code != 0 {
		t.Fatalf("force-unlock: %d\n%s", code, out)
	}

	// B resumes; A's second apply, while B runs, is refused naming B's apply.
	rb := b.start()
	rb.until(t, "b finished a run", func(e executor.Event) bool { return e.Type == executor.EventRunFinished })
	code, out = a.run("apply", "-auto-approve")
	if code == 0 || !strings.Contains(out, "locked by") || !strings.Contains(out, "infercrane apply") {
		t.Errorf("clone A's second apply while B holds the lock: exit %d\n%s", code, out)
	}
	evs, code := rb.wait(t)
	if code != 0 {
		t.Fatalf("clone B's apply exited %d: %s", code, rb.stderr)
	}
	// until consumed B's first run_finished.
	if n := 1 + count(evs, executor.EventRunFinished); n != left {
		t.Errorf("clone B ran %d runs, want the %d left", n, left)
	}
	got := journalRunsInBucket(t, store)
	if len(got) != runs {
		t.Errorf("the bucket's journal holds runs %v, want each of 1..%d once", got, runs)
	}
	for run, n := range got {
		if n != 1 {
			t.Errorf("run %d journaled %d times", run, n)
		}
	}

	// A third clone pulls the state and verifies the evidence in the bucket.
	if code, out := c.run("state", "pull"); code != 0 {
		t.Fatalf("state pull: %d\n%s", code, out)
	}
	ev := filepath.Join(".infercrane", "reports", "s.evidence.json")
	if code, out := c.run("verify", ev, "-state", ".infercrane"); code != 0 {
		t.Fatalf("verify of the bucket's evidence: %d\n%s", code, out)
	}
	if code, out := c.run("plan", "-detailed-exitcode"); code != 0 {
		t.Errorf("a third clone's plan after the screen finished: exit %d (want 0, nothing to do)\n%s", code, out)
	}

	// The planted secret is in no object name or body, and the lock is gone.
	for key, body := range store.objects(t) {
		if strings.Contains(key, "PLANTED") || bytes.Contains(body, []byte("PLANTED-S3-TOKEN-93e1")) {
			t.Errorf("the planted secret is in object %s", key)
		}
		if strings.HasSuffix(key, "/lock.json") {
			t.Errorf("the lock %s is left after every apply finished", key)
		}
	}
}

// journalRunsInBucket counts the run entries of the bucket's journal by run.
func journalRunsInBucket(t *testing.T, store *s3Store) map[int]int {
	t.Helper()
	out := map[int]int{}
	for key, body := range store.objects(t) {
		if !strings.Contains(key, "/journal/") {
			continue
		}
		var line struct {
			Entry json.RawMessage `json:"entry"`
		}
		var e state.Entry
		if json.Unmarshal(body, &line) != nil || json.Unmarshal(line.Entry, &e) != nil {
			t.Fatalf("journal object %s: %q", key, body)
		}
		if e.Type == state.EntryRun {
			out[e.Result.Run]++
		}
	}
	return out
}

// TestBackendNeedsInit: a spec that names a backend while its directory
// holds local state is refused until init moves the state, and init moves
// it back when the backend block goes.
func TestBackendNeedsInit(t *testing.T) {
	store := newS3Store(t, "team")
	r := backendRig(t, store, 1)
	spec, _ := os.ReadFile(filepath.Join(r.dir, "main.hcl"))
	local := regexp.MustCompile(`(?s)^infercrane \{.*?\n\}\n`).ReplaceAll(spec, nil)
	r.write(string(local))
	if code, out := r.run("apply", "-auto-approve"); code != 0 {
		t.Fatalf("local apply: %d\n%s", code, out)
	}
	r.write(string(spec))
	code, out := r.run("plan")
	if code == 0 || !strings.Contains(out, "infercrane init") {
		t.Fatalf("plan with a backend over local state: exit %d\n%s", code, out)
	}
	if code, out := r.run("init"); code != 0 || !strings.Contains(out, "digest checked") {
		t.Fatalf("init: %d\n%s", code, out)
	}
	if code, out := r.run("plan", "-detailed-exitcode"); code != 0 {
		t.Fatalf("plan after init: %d (want 0: the runs are in the bucket)\n%s", code, out)
	}
	// Back out: the bucket's state becomes local again, digests checked.
	os.RemoveAll(filepath.Join(r.dir, ".infercrane"))
	if code, out := r.run("init"); code != 0 {
		t.Fatalf("init into an empty cache: %d\n%s", code, out)
	}
	r.write(string(local))
	if code, out := r.run("init"); code != 0 || !strings.Contains(out, "local state again") {
		t.Fatalf("init without the backend: %d\n%s", code, out)
	}
	if code, out := r.run("plan", "-detailed-exitcode"); code != 0 {
		t.Fatalf("local plan after backing out: %d\n%s", code, out)
	}
}

// Package bucket keeps a state directory in an S3 bucket (AWS or any
// S3-compatible store), so that CI and every teammate plan and apply
// against one state. The local state directory becomes a cache: Pull
// rebuilds it from the bucket, and a Replica writes every journal entry
// and file to the bucket before the local store counts it.
//
// Layout under the backend's prefix:
//
//	lock.json                 the lock (LockInfo), written with If-None-Match: *
//	journal/000000000001.jsonl  one journal line per object, named by its seq,
//	                          each written with If-None-Match: * so two writers
//	                          can never store the same entry
//	deployments/NANOS-ID.jsonl  one deployments-journal line per object
//	plan.json, runs/LANE/N.jsonl, reports/...   the state directory's files,
//	                          each with its SHA-256 in x-amz-meta-sha256
//
// Credentials come from the AWS SDK's default chain only.
package bucket

import (
	"bytes"
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/infercrane/infercrane/planner/state"
)

// Object-name parts under the prefix.
const (
	lockKey        = "lock.json"
	journalDir     = "journal/"
	deploymentsDir = "deployments/"
	sha256Meta     = "sha256"
)

// Backend is a state prefix in a bucket.
type Backend struct {
	client *s3.Client
	rec    state.BackendRecord
	// RenewEvery is how often a held lock is renewed (default 30 s); a
	// lock not renewed for three periods is reported as stale.
	RenewEvery time.Duration
}

// Open returns the backend r names. It makes no request.
func Open(ctx context.Context, r state.BackendRecord) (*Backend, error) {
	if r.Type != "s3" {
		return nil, fmt.Errorf("backend type %q is not supported (only s3)", r.Type)
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			// Throttling, 5xx and cut connections are retried with backoff;
			// every request body here is seekable, so a retry resends it whole.
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.MaxAttempts = 6
				o.MaxBackoff = 3 * time.Second
				o.RateLimiter = ratelimit.None
			})
		}),
	}
	if r.Region != "" {
		opts = append(opts, config.WithRegion(r.Region))
	}
	if r.Profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(r.Profile))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if r.Endpoint != "" {
			o.BaseEndpoint = aws.String(r.Endpoint)
		}
		o.UsePathStyle = r.UsePathStyle
		// Each object carries its own SHA-256 (x-amz-meta-sha256), checked
		// on every read; S3-compatible stores differ in flexible checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	return &Backend{client: client, rec: r, RenewEvery: 30 * time.Second}, nil
}

// String names the backend as s3://BUCKET/PREFIX.
func (b *Backend) String() string { return "s3://" + b.rec.Bucket + "/" + b.rec.Prefix }

// Record returns the backend's settings, for the cache's backend.json.
func (b *Backend) Record() state.BackendRecord { return b.rec }

func (b *Backend) key(rel string) string { return b.rec.Prefix + "/" + rel }

// object is one listed object, its name relative to the prefix.
type object struct {
	rel  string
	etag string // without quotes; the MD5 of the body for single-part uploads
	size int64
}

// list returns every object under the prefix.
func (b *Backend) list(ctx context.Context) ([]object, error) {
	var out []object
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(b.rec.Bucket), Prefix: aws.String(b.rec.Prefix + "/"),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, b.wrap("list", b.rec.Prefix+"/", err)
		}
		for _, o := range page.Contents {
			out = append(out, object{
				rel:  strings.TrimPrefix(aws.ToString(o.Key), b.rec.Prefix+"/"),
				etag: strings.Trim(aws.ToString(o.ETag), `"`),
				size: aws.ToInt64(o.Size),
			})
		}
	}
	return out, nil
}

// get reads one object and checks it against its recorded SHA-256, when
// it has one. A missing object is (nil, "", nil).
func (b *Backend) get(ctx context.Context, rel string) ([]byte, string, error) {
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b.rec.Bucket), Key: aws.String(b.key(rel))})
	if err != nil {
		if status(err) == http.StatusNotFound {
			return nil, "", nil
		}
		return nil, "", b.wrap("read", rel, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", b.wrap("read", rel, err)
	}
	if want := out.Metadata[sha256Meta]; want != "" {
		if got := sha256Hex(data); got != want {
			return nil, "", fmt.Errorf("%s/%s: its SHA-256 is %s, but it was stored with %s: the object is corrupt or was replaced by hand", b, rel, got, want)
		}
	}
	return data, strings.Trim(aws.ToString(out.ETag), `"`), nil
}

// put stores data as rel. With ifNoneMatch it succeeds only when no object
// rel exists (a lost response to an earlier attempt that stored these very
// bytes counts as success); with ifMatch, only when rel's ETag is ifMatch.
// It returns the new ETag.
func (b *Backend) put(ctx context.Context, rel string, data []byte, ifNoneMatch bool, ifMatch string) (string, error) {
	in := &s3.PutObjectInput{
		Bucket:        aws.String(b.rec.Bucket),
		Key:           aws.String(b.key(rel)),
		Body:          bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
		Metadata:      map[string]string{sha256Meta: sha256Hex(data)},
	}
	if ifNoneMatch {
		in.IfNoneMatch = aws.String("*")
	}
	if ifMatch != "" {
		in.IfMatch = aws.String(`"` + ifMatch + `"`)
	}
	for attempt := 1; ; attempt++ {
		out, err := b.client.PutObject(ctx, in)
		if err == nil {
			return strings.Trim(aws.ToString(out.ETag), `"`), nil
		}
		switch status(err) {
		case http.StatusConflict:
			// S3 answers 409 when conditional writes of one key race; the
			// loser learns the outcome on its next try.
			if attempt < 5 && ctx.Err() == nil {
				time.Sleep(time.Duration(attempt) * 100 * time.Millisecond)
				in.Body = bytes.NewReader(data)
				continue
			}
		case http.StatusPreconditionFailed:
			if ifNoneMatch {
				// A retry after a lost response finds the object it stored.
				have, etag, gerr := b.get(ctx, rel)
				if gerr == nil && bytes.Equal(have, data) {
					return etag, nil
				}
			}
			return "", &conflictError{rel: rel, backend: b.String()}
		}
		return "", b.wrap("write", rel, err)
	}
}

// conflictError is a conditional write that lost: another writer stored
// the object first, or replaced the one this writer expected.
type conflictError struct{ rel, backend string }

func (e *conflictError) Error() string {
	return fmt.Sprintf("%s/%s was written by another apply first", e.backend, e.rel)
}

func (b *Backend) delete(ctx context.Context, rel, ifMatch string) error {
	in := &s3.DeleteObjectInput{Bucket: aws.String(b.rec.Bucket), Key: aws.String(b.key(rel))}
	if ifMatch != "" {
		in.IfMatch = aws.String(`"` + ifMatch + `"`)
	}
	_, err := b.client.DeleteObject(ctx, in)
	if err != nil && status(err) != http.StatusNotFound {
		return b.wrap("delete", rel, err)
	}
	return nil
}

// wrap names the request that failed; the SDK's error already says the
// status, the code and how many attempts were made.
func (b *Backend) wrap(verb, rel string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s %s/%s: %w", verb, b, rel, err)
}

// status returns the HTTP status of an S3 error, or 0.
func status(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func sha256Hex(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func md5Hex(data []byte) string {
	h := md5.Sum(data)
	return hex.EncodeToString(h[:])
}

// journalRel names journal entry seq's object.
func journalRel(seq int64) string { return fmt.Sprintf("%s%012d.jsonl", journalDir, seq) }

// readLocal returns the file's bytes, or nil when it does not exist.
func readLocal(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

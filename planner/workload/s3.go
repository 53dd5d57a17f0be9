package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// ParseS3URL splits s3://bucket/key.
func ParseS3URL(source string) (bucket, key string, err error) {
	u, err := url.Parse(source)
	if err != nil || u.Scheme != "s3" || u.Host == "" || strings.TrimPrefix(u.Path, "/") == "" {
		return "", "", fmt.Errorf("%q is not an s3://BUCKET/KEY URL", source)
	}
	return u.Host, strings.TrimPrefix(u.Path, "/"), nil
}

// s3Object reads one S3 object by ranged GETs pinned to its ETag.
type s3Object struct {
	client      *s3.Client
	retry       *s3Retry
	bucket, key string
	etag        string
	region      string
}

// newS3Client builds a client that makes exactly one attempt per call:
// every retry (statuses, connection errors and bodies alike) is s3Retry's.
func newS3Client(ctx context.Context, o ReadOptions) (*s3.Client, string, error) {
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if o.Region != "" {
		loadOpts = append(loadOpts, config.WithRegion(o.Region))
	}
	if o.Anonymous {
		loadOpts = append(loadOpts, config.WithCredentialsProvider(aws.AnonymousCredentials{}))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, "", fmt.Errorf("load AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := s3.NewFromConfig(cfg, func(so *s3.Options) {
		if o.Endpoint != "" {
			so.BaseEndpoint = aws.String(o.Endpoint)
		}
		so.UsePathStyle = o.PathStyle
		// Ranged GETs carry no whole-object checksum; do not log about it.
		so.DisableLogOutputChecksumValidationSkipped = true
	})
	return client, cfg.Region, nil
}

// s3Retry is the one retry loop of every S3 request (HEAD and each ranged
// GET, body included): a retryable status (503 SlowDown, 500, other 5xx,
// throttling codes), a connection error before the response, and a body
// that ends short, empty or with a reset all cost one attempt of the same
// budget and back off the same way.
type s3Retry struct {
	std         *retry.Standard
	maxAttempts int
}

func newS3Retry(o ReadOptions) *s3Retry {
	return &s3Retry{maxAttempts: o.MaxAttempts, std: retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = o.MaxAttempts
		so.MaxBackoff = o.MaxBackoff
		so.RateLimiter = ratelimit.None
	})}
}

// do runs attempt until it succeeds, fails with an error that is not
// retryable, or has used every attempt. It returns the last error and how
// many attempts were made.
func (r *s3Retry) do(ctx context.Context, attempt func(context.Context) error) (int, error) {
	for n := 1; ; n++ {
		err := attempt(ctx)
		if err == nil {
			return n, nil
		}
		if ctx.Err() != nil {
			return n, ctx.Err()
		}
		if n >= r.maxAttempts || !r.std.IsErrorRetryable(err) {
			return n, err
		}
		delay, derr := r.std.RetryDelay(n, err)
		if derr != nil {
			return n, err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return n, ctx.Err()
		case <-t.C:
		}
	}
}

// bodyError is a ranged GET whose response body did not deliver the range:
// it ended short or empty, or the connection failed mid-body. It is retried
// like a 5xx.
type bodyError struct {
	got, want int64
	err       error
}

func (e *bodyError) Error() string {
	return fmt.Sprintf("the response body ended after %d of %d bytes: %v", e.got, e.want, e.err)
}
func (e *bodyError) Unwrap() error        { return e.err }
func (e *bodyError) RetryableError() bool { return true }

func openS3(ctx context.Context, source string, o ReadOptions) (*Object, error) {
	bucket, key, err := ParseS3URL(source)
	if err != nil {
		return nil, err
	}
	client, region, err := newS3Client(ctx, o)
	if err != nil {
		return nil, err
	}
	rt := newS3Retry(o)
	var head *s3.HeadObjectOutput
	attempts, err := rt.do(ctx, func(ctx context.Context) (err error) {
		head, err = client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
		return err
	})
	if err != nil {
		return nil, s3Error(err, source, region, attempts)
	}
	if head.ContentLength == nil {
		return nil, fmt.Errorf("%s: the HEAD response has no Content-Length; use an S3-compatible endpoint that reports object sizes", source)
	}
	size := aws.ToInt64(head.ContentLength)
	so := &s3Object{client: client, retry: rt, bucket: bucket, key: key, etag: aws.ToString(head.ETag), region: region}
	pf := newPrefetchReader(ctx, so, size, o)
	obj := &Object{
		Source: source, URL: httpsURL(bucket, key, region, o), Size: size,
		Identity: "etag:" + strings.Trim(so.etag, `"`), Remote: true, r: pf, pf: pf,
	}
	if size > 0 {
		tailOff := max(0, size-o.TailSize)
		tail, err := pf.get(tailOff, size-tailOff)
		if err != nil {
			return nil, err
		}
		pf.setTail(tailOff, tail)
	}
	return obj, nil
}

// httpsURL is the object's public HTTPS address, recorded in profiles.
func httpsURL(bucket, key, region string, o ReadOptions) string {
	if o.Endpoint != "" {
		return strings.TrimRight(o.Endpoint, "/") + "/" + bucket + "/" + key
	}
	return fmt.Sprintf("https://%s.s3.%s.amazonaws.com/%s", bucket, region, key)
}

// fetch reads bytes [off, off+n) with retries (see s3Retry).
func (s *s3Object) fetch(ctx context.Context, off, n int64) ([]byte, error) {
	source := "s3://" + s.bucket + "/" + s.key
	var buf []byte
	attempts, err := s.retry.do(ctx, func(ctx context.Context) (err error) {
		buf, err = s.fetchOnce(ctx, off, n)
		return err
	})
	if err == nil {
		return buf, nil
	}
	var be *bodyError
	var re *rangeError
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return nil, err
	case errors.As(err, &be):
		return nil, fmt.Errorf("%s: reading bytes %d-%d failed after %d attempts: %w", source, off, off+n-1, attempts, err)
	case errors.As(err, &re):
		return nil, fmt.Errorf("%s: reading bytes %d-%d: %w", source, off, off+n-1, err)
	}
	return nil, s3Error(err, source, s.region, attempts)
}

// rangeError is a response that holds other bytes than the range asked
// for: the store does not honour ranged GETs. Retrying does not help.
type rangeError struct{ msg string }

func (e *rangeError) Error() string { return e.msg }

// fetchOnce is one ranged GET: the response must be the requested range
// (Content-Range) and its body must deliver all of it.
func (s *s3Object) fetchOnce(ctx context.Context, off, n int64) ([]byte, error) {
	rng := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &s.key, Range: &rng}
	if s.etag != "" {
		in.IfMatch = &s.etag
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	if err := checkContentRange(aws.ToString(out.ContentRange), off, n); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	got, err := io.ReadFull(out.Body, buf)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &bodyError{got: int64(got), want: n, err: err}
	}
	return buf, nil
}

// checkContentRange checks that a response's Content-Range is the range
// [off, off+n). A response without one is the whole object from byte 0,
// which is right only for a read from 0. A range that starts right but ends
// early is a short body (retried); any other range is a rangeError.
func checkContentRange(cr string, off, n int64) error {
	if cr == "" {
		if off == 0 {
			return nil
		}
		return &rangeError{fmt.Sprintf("the store answered a ranged GET (bytes=%d-%d) with the whole object; use an S3-compatible endpoint that supports Range requests", off, off+n-1)}
	}
	var first, last int64
	spec, _, _ := strings.Cut(strings.TrimPrefix(cr, "bytes "), "/")
	a, b, ok := strings.Cut(spec, "-")
	if ok {
		var err1, err2 error
		first, err1 = strconv.ParseInt(a, 10, 64)
		last, err2 = strconv.ParseInt(b, 10, 64)
		ok = err1 == nil && err2 == nil
	}
	switch {
	case ok && first == off && last == off+n-1:
		return nil
	case ok && first == off && last >= off-1 && last < off+n-1:
		return &bodyError{got: last - off + 1, want: n, err: fmt.Errorf("Content-Range %q is shorter than the range asked for", cr)}
	}
	return &rangeError{fmt.Sprintf("the store answered a GET of bytes=%d-%d with Content-Range %q; use an S3-compatible endpoint that supports Range requests", off, off+n-1, cr)}
}

// S3Error is a classified S3 failure.
type S3Error struct {
	// Code is the S3 error code: NoSuchKey, NoSuchBucket, AccessDenied,
	// PermanentRedirect, PreconditionFailed, or what the server said.
	Code string
	// Status is the HTTP status (0 when no response arrived).
	Status int
	msg    string
	err    error
}

func (e *S3Error) Error() string { return e.msg }
func (e *S3Error) Unwrap() error { return e.err }

// s3Error turns an SDK error into an S3Error that says what to do.
// attempts is how many requests were made.
func s3Error(err error, source, region string, attempts int) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var code string
	var status int
	var header http.Header
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		code = apiErr.ErrorCode()
	}
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		status = respErr.HTTPStatusCode()
		if respErr.Response != nil {
			header = respErr.Response.Header
		}
	}
	e := &S3Error{Code: code, Status: status, err: err}
	switch {
	case code == "NoSuchKey" || (status == http.StatusNotFound && code != "NoSuchBucket"):
		e.Code = "NoSuchKey"
		e.msg = fmt.Sprintf("%s: object not found (NoSuchKey); check the key and that the trace was uploaded", source)
	case code == "NoSuchBucket":
		e.msg = fmt.Sprintf("%s: bucket not found (NoSuchBucket); check the bucket name and the endpoint", source)
	case status == http.StatusMovedPermanently || code == "PermanentRedirect" || code == "AuthorizationHeaderMalformed" && strings.Contains(err.Error(), "region"):
		e.Code = "PermanentRedirect"
		want := header.Get("X-Amz-Bucket-Region")
		if want != "" {
			e.msg = fmt.Sprintf("%s: the bucket is in region %s, not %s; set region = %q in the trace block (or --region %s)", source, want, region, want, want)
		} else {
			e.msg = fmt.Sprintf("%s: wrong region %s for this bucket (PermanentRedirect); set the trace's region to the bucket's region", source, region)
		}
	case code == "AccessDenied" || status == http.StatusForbidden:
		e.Code = "AccessDenied"
		e.msg = fmt.Sprintf("%s: access denied (AccessDenied); for a public bucket set anonymous = true (--anonymous), otherwise provide credentials through the standard AWS chain (AWS_PROFILE, AWS_ACCESS_KEY_ID, SSO, instance role) with s3:GetObject on the object", source)
	case code == "PreconditionFailed" || status == http.StatusPreconditionFailed:
		e.Code = "PreconditionFailed"
		e.msg = fmt.Sprintf("%s: the object changed while it was being read (its ETag no longer matches); run the profile again", source)
	default:
		e.msg = fmt.Sprintf("%s: S3 request failed: %v", source, err)
		if attempts > 1 {
			e.msg = fmt.Sprintf("%s: S3 request failed after %d attempts: %v", source, attempts, err)
		}
	}
	return e
}

package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

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
	bucket, key string
	etag        string
	region      string
}

func newS3Client(ctx context.Context, o ReadOptions) (*s3.Client, string, error) {
	loadOpts := []func(*config.LoadOptions) error{
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(so *retry.StandardOptions) {
				so.MaxAttempts = o.MaxAttempts
				so.MaxBackoff = o.MaxBackoff
				so.RateLimiter = ratelimit.None
			})
		}),
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

func openS3(ctx context.Context, source string, o ReadOptions) (*Object, error) {
	bucket, key, err := ParseS3URL(source)
	if err != nil {
		return nil, err
	}
	client, region, err := newS3Client(ctx, o)
	if err != nil {
		return nil, err
	}
	head, err := client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &bucket, Key: &key})
	if err != nil {
		return nil, s3Error(err, source, region)
	}
	size := aws.ToInt64(head.ContentLength)
	so := &s3Object{client: client, bucket: bucket, key: key, etag: aws.ToString(head.ETag), region: region}
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

func (s *s3Object) fetch(ctx context.Context, off, n int64) ([]byte, error) {
	rng := fmt.Sprintf("bytes=%d-%d", off, off+n-1)
	in := &s3.GetObjectInput{Bucket: &s.bucket, Key: &s.key, Range: &rng}
	if s.etag != "" {
		in.IfMatch = &s.etag
	}
	out, err := s.client.GetObject(ctx, in)
	if err != nil {
		return nil, s3Error(err, "s3://"+s.bucket+"/"+s.key, s.region)
	}
	defer out.Body.Close()
	buf := make([]byte, n)
	if _, err := io.ReadFull(out.Body, buf); err != nil {
		return nil, fmt.Errorf("s3://%s/%s: reading bytes %d-%d: %w", s.bucket, s.key, off, off+n-1, err)
	}
	return buf, nil
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
func s3Error(err error, source, region string) error {
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
		e.msg = fmt.Sprintf("%s: S3 request failed after retries: %v", source, err)
	}
	return e
}

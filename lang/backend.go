package lang

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Backend is where the spec's state is kept when it is not the local state
// directory: the infercrane block's `backend "s3" { ... }`. Its values are
// literals (like Terraform's backend block): they are needed before
// anything else is evaluated, and they are written into the local cache's
// backend.json, so they may hold nothing secret. Credentials never appear
// here: they come from the AWS SDK's default chain (environment, shared
// config and credentials files, the named profile, instance roles).
type Backend struct {
	// Type is the block's label; "s3" is the only backend.
	Type string
	// Bucket is the S3 bucket holding the state.
	Bucket string
	// Prefix is the key prefix under which the state lives (no leading or
	// trailing slash); one prefix per screen spec.
	Prefix string
	// Region is the bucket's region (default: the SDK's, else us-east-1).
	Region string
	// Endpoint is an S3-compatible store's URL (MinIO, ...); empty for AWS
	// or AWS_ENDPOINT_URL_S3 from the environment.
	Endpoint string
	// UsePathStyle addresses the bucket in the path instead of the host name.
	UsePathStyle bool
	// Profile is a shared-config profile name for the default chain.
	Profile string
	// DeclRange is the backend block's header.
	DeclRange hcl.Range
}

// backendAttrs are the backend block's attributes; bucket and prefix are required.
var backendSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "bucket", Required: true},
		{Name: "prefix", Required: true},
		{Name: "region"},
		{Name: "endpoint"},
		{Name: "use_path_style"},
		{Name: "profile"},
	},
}

// credentialAttrs are names people carry over from other tools' backend
// blocks; each gets a targeted error instead of "unsupported argument".
var credentialAttrs = []string{"access_key", "secret_key", "token", "session_token", "aws_access_key_id", "aws_secret_access_key"}

// bucketName follows S3's rules for bucket names (3-63 characters, lower
// case letters, digits, dots and hyphens, starting and ending with a
// letter or digit).
var bucketName = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// decodeBackend reads a `backend "TYPE" { ... }` block of the infercrane block.
func (l *loader) decodeBackend(b *hcl.Block) {
	if l.cfg.Backend != nil {
		l.diags = append(l.diags, errorf(b.DefRange, "Duplicate backend block",
			"A backend was already declared at %s. A spec keeps its state in one place: remove one.", l.cfg.Backend.DeclRange))
		return
	}
	if b.Labels[0] != "s3" {
		l.diags = append(l.diags, errorf(b.LabelRanges[0], "Unsupported backend",
			`The backend %q is not supported; the only backend is "s3" (AWS S3 or an S3-compatible store). Without a backend block, state stays in the local state directory.`, b.Labels[0]))
		return
	}
	attrs, _ := b.Body.JustAttributes()
	for _, name := range credentialAttrs {
		if a, ok := attrs[name]; ok {
			l.diags = append(l.diags, errorf(a.NameRange, "Credentials do not belong in the spec",
				"The backend reads credentials from the AWS SDK's default chain only (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, the shared config and credentials files, an instance role). Remove %s and set them in the environment; to pick a shared-config profile, write profile = \"NAME\".", name))
			return
		}
	}
	content, diags := b.Body.Content(backendSchema)
	l.diags = append(l.diags, withHints(diags, `A backend "s3" block`, backendSchema)...)
	if diags.HasErrors() {
		return
	}
	be := &Backend{Type: "s3", DeclRange: b.DefRange}
	str := func(name string, dst *string) {
		a, ok := content.Attributes[name]
		if !ok {
			return
		}
		v, d := a.Expr.Value(nil)
		if d.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.String {
			l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid backend "+name,
				"%s must be a literal string: the backend is read before variables are, and its settings are stored in the state cache, so they can reference nothing.", name))
			return
		}
		*dst = v.AsString()
	}
	str("bucket", &be.Bucket)
	str("prefix", &be.Prefix)
	str("region", &be.Region)
	str("endpoint", &be.Endpoint)
	str("profile", &be.Profile)
	if a, ok := content.Attributes["use_path_style"]; ok {
		v, d := a.Expr.Value(nil)
		if d.HasErrors() || !v.IsKnown() || v.IsNull() || v.Type() != cty.Bool {
			l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid backend use_path_style",
				"use_path_style must be a literal true or false."))
		} else {
			be.UsePathStyle = v.True()
		}
	}
	if a := content.Attributes["bucket"]; a != nil && be.Bucket != "" && !bucketName.MatchString(be.Bucket) {
		l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid bucket name",
			"%q is not an S3 bucket name: 3 to 63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit.", be.Bucket))
	}
	if a := content.Attributes["prefix"]; a != nil && be.Prefix != "" {
		if msg := checkPrefix(be.Prefix); msg != "" {
			l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid backend prefix", "%s", msg))
		}
	}
	if a := content.Attributes["endpoint"]; a != nil && be.Endpoint != "" &&
		!strings.HasPrefix(be.Endpoint, "https://") && !strings.HasPrefix(be.Endpoint, "http://") {
		l.diags = append(l.diags, errorf(a.Expr.Range(), "Invalid backend endpoint",
			"%q is not a URL: write the store's base URL, such as \"https://minio.example.com:9000\".", be.Endpoint))
	}
	if a := content.Attributes["endpoint"]; a != nil && strings.Contains(be.Endpoint, "@") {
		l.diags = append(l.diags, errorf(a.Expr.Range(), "Credentials do not belong in the spec",
			"The endpoint URL holds user information; credentials come from the AWS SDK's default chain only. Remove it from the URL."))
	}
	l.cfg.Backend = be
}

// checkPrefix returns why prefix cannot be a state prefix, or "".
func checkPrefix(prefix string) string {
	switch {
	case len(prefix) > 512:
		return fmt.Sprintf("The prefix is %d characters long; keep it under 512 (S3 keys are at most 1024 bytes and the state adds its own names).", len(prefix))
	case strings.HasPrefix(prefix, "/") || strings.HasSuffix(prefix, "/"):
		return fmt.Sprintf("%q starts or ends with a slash; write it without, such as \"screens/qwen-l40s\".", prefix)
	case strings.Contains(prefix, "//"):
		return fmt.Sprintf("%q has an empty path segment (//).", prefix)
	}
	for _, seg := range strings.Split(prefix, "/") {
		if seg == "." || seg == ".." {
			return fmt.Sprintf("%q has a %q segment; name the path plainly.", prefix, seg)
		}
	}
	for _, r := range prefix {
		if r < 0x20 || r == 0x7f {
			return "The prefix holds a control character."
		}
	}
	return ""
}

package planner

import (
	"reflect"
	"testing"

	"github.com/infercrane/infercrane/lang"
)

// The plan records each resolved trace's profile by its document digest,
// in name order, with its source (redacted when it holds a sensitive
// value) and pinned file; a trace not profiled yet is left out.
func TestTraceProfilesRecordResolvedTraces(t *testing.T) {
	cfg := &lang.Config{Secrets: []string{"s3cret"}, Traces: map[string]*lang.Trace{
		"b":       {Name: "b", Source: "trace.parquet", ProfileDigest: "sha256:bb"},
		"a":       {Name: "a", Source: "s3://bucket/x.parquet", Profile: "profiles/a.json", Digest: "sha256:aa", ProfileDigest: "sha256:aa"},
		"pending": {Name: "pending", Source: "later.parquet"},
		"secret":  {Name: "secret", Source: "s3://bucket/s3cret.parquet", ProfileDigest: "sha256:cc"},
	}}
	want := []TraceProfile{
		{Name: "a", Source: "s3://bucket/x.parquet", Profile: "profiles/a.json", Digest: "sha256:aa"},
		{Name: "b", Source: "trace.parquet", Digest: "sha256:bb"},
		{Name: "secret", Source: Redacted, Digest: "sha256:cc"},
	}
	if got := traceProfiles(cfg); !reflect.DeepEqual(got, want) {
		t.Errorf("traces %+v, want %+v", got, want)
	}
	if got := traceProfiles(&lang.Config{}); got != nil {
		t.Errorf("a spec without traces: %+v, want none (the plan's traces are omitted)", got)
	}
}

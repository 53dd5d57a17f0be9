package main

import (
	"context"
	"os"

	"github.com/hashicorp/hcl/v2"
	"github.com/infercrane/infercrane/lang"
	"github.com/infercrane/infercrane/planner/workload"
	"github.com/zclconf/go-cty/cty"
)

// The workload wiring: spec trace blocks are resolved by planner/workload,
// with S3 settings from the standard AWS environment.
func init() {
	resolveTrace = func(t *lang.Trace, specDir string) (cty.Value, hcl.Diagnostics) {
		env := &cliEnv{Getenv: os.Getenv}
		return workload.Resolve(context.Background(), t, specDir, s3Options(env, "", false, "", false))
	}
}

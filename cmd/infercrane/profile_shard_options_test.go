package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/infercrane/infercrane/planner/workload"
	"github.com/infercrane/infercrane/planner/workload/synth"
	"github.com/infercrane/infercrane/plugins/modal"
)

// shardOptionValues are the values the test gives each option that
// changes a profile (workload.ShardOptions); a new option fails the test
// until it has values here.
var shardOptionValues = map[string][]any{
	"All":             {false, true},
	"Sketch":          {false, true},
	"Quantiles":       {false, true},
	"RowGroups":       {0, 4},
	"RowGroupIndices": {[]int(nil), []int{1, 5, 9}},
	"RowsPerGroup":    {0, 700},
	"MaxContext":      {0, 4096},
	"Name":            {"", "a name"},
	"License":         {"", "CC-BY-4.0"},
	"Citation":        {"", "-cited, with a dash"},
}

// A sharded scan keeps every option: for every combination of the boolean
// options, with each other option at its default, set alone, and all set
// together, the shards `infercrane profile shard` makes from the command
// line a sandbox runs (modal.ShardArgs) merge to the bytes of one scan
// with the same options.
func TestShardedScanKeepsEveryOption(t *testing.T) {
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.parquet")
	f, err := os.Create(trace)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.Write(f, synth.Options{Rows: 12_000, RowsPerGroup: 1_000, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	st := reflect.TypeOf(workload.ShardOptions{})
	var bools, others []string
	for i := range st.NumField() {
		name := st.Field(i).Name
		vals, ok := shardOptionValues[name]
		if !ok {
			t.Fatalf("ShardOptions.%s has no test values: add them to shardOptionValues", name)
		}
		if _, isBool := vals[0].(bool); isBool {
			bools = append(bools, name)
		} else {
			others = append(others, name)
		}
	}
	set := func(o *workload.Options, name string, v any) {
		f := reflect.ValueOf(o).Elem().FieldByName(name)
		if v == nil || reflect.ValueOf(v).IsZero() {
			f.Set(reflect.Zero(f.Type()))
			return
		}
		f.Set(reflect.ValueOf(v))
	}
	var variants [][]string // the non-boolean options set in each variant
	variants = append(variants, nil)
	for _, name := range others {
		variants = append(variants, []string{name})
	}
	variants = append(variants, others)

	fixed := func() time.Time { return time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC) }
	checked := 0
	for mask := range 1 << len(bools) {
		for _, variant := range variants {
			o := workload.Options{Source: trace, Now: fixed}
			for i, name := range bools {
				set(&o, name, mask&(1<<i) != 0)
			}
			for _, name := range variant {
				set(&o, name, shardOptionValues[name][1])
			}
			if !o.All && !o.Sketch || o.All && (o.RowGroups > 0 || len(o.RowGroupIndices) > 0) || o.RowGroups > 0 && len(o.RowGroupIndices) > 0 {
				continue // not shardable, or refused by the command line
			}
			name := strings.Join(append(o.ShardOptions().Args(), "#"), " ")
			single, err := workload.Build(context.Background(), o)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			want, _ := workload.Encode(single.Document)
			var shards []*workload.Shard
			for i := range 3 {
				argv := modal.ShardArgs(o, i, 3, 1)
				var stdout, stderr bytes.Buffer
				env := &cliEnv{Stdout: &stdout, Stderr: &stderr, Getenv: func(string) string { return "" }}
				if code := run(env, argv); code != 0 {
					t.Fatalf("%v: exit %d: %s", argv, code, stderr.String())
				}
				s, err := workload.ParseShard(bytes.TrimSpace(stdout.Bytes()))
				if err != nil {
					t.Fatal(err)
				}
				if len(s.Options.Differences(o.ShardOptions())) > 0 {
					t.Errorf("%v: the shard records options %+v, asked %+v", argv, s.Options, o.ShardOptions())
				}
				shards = append(shards, s)
			}
			res, err := workload.Merge(shards, fixed)
			if err != nil {
				t.Fatalf("%s: merge: %v", name, err)
			}
			if got, _ := workload.Encode(res.Document); !bytes.Equal(got, want) {
				t.Errorf("options %s: the sharded scan differs from one scan", name)
			}
			checked++
		}
	}
	if checked < 20 {
		t.Fatalf("only %d option combinations checked", checked)
	}
	t.Logf("%d option combinations", checked)
}

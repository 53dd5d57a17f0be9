package workload

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// outputNeutral are the Options fields that do not change a profile's
// content: where and how the object is read, how fast, and callbacks.
// Every other field must be a ShardOptions field, or a sharded profile
// would drop it on its way to the sandboxes.
var outputNeutral = []string{"Source", "Read", "Workers", "Now", "Progress"}

// Every Options field either changes the profile and is declared in
// ShardOptions (and survives Options -> ShardOptions -> Options), or is
// listed as not changing it; every ShardOptions field has a flag.
func TestEveryOptionIsAShardOptionOrNeutral(t *testing.T) {
	ot := reflect.TypeOf(Options{})
	st := reflect.TypeOf(ShardOptions{})
	for i := range ot.NumField() {
		f := ot.Field(i)
		if slices.Contains(outputNeutral, f.Name) {
			continue
		}
		sf, ok := st.FieldByName(f.Name)
		if !ok {
			t.Errorf("Options.%s is neither a ShardOptions field nor output-neutral: declare it in ShardOptions (with its flag) or list it in outputNeutral", f.Name)
			continue
		}
		if sf.Type != f.Type || sf.Tag.Get("flag") == "" {
			t.Errorf("ShardOptions.%s: type %s vs %s, flag %q", f.Name, sf.Type, f.Type, sf.Tag.Get("flag"))
		}
		// A value set in Options comes back through ShardOptions.
		var o Options
		v := reflect.ValueOf(&o).Elem().Field(i)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int:
			v.SetInt(7)
		case reflect.String:
			v.SetString("x")
		case reflect.Slice:
			v.Set(reflect.ValueOf([]int{1, 2}))
		default:
			t.Fatalf("Options.%s: kind %s", f.Name, v.Kind())
		}
		back := reflect.ValueOf(o.ShardOptions().options()).Field(i)
		if !reflect.DeepEqual(back.Interface(), v.Interface()) {
			t.Errorf("Options.%s = %v comes back from ShardOptions as %v", f.Name, v, back)
		}
	}
	for i := range st.NumField() {
		if _, ok := ot.FieldByName(st.Field(i).Name); !ok {
			t.Errorf("ShardOptions.%s is not an Options field", st.Field(i).Name)
		}
	}
}

// Shards made with different content options do not merge, whatever the
// order they come in, and the error names the option.
func TestMergeRefusesShardsWithDifferentOptions(t *testing.T) {
	path := synthTrace(t, smallTrace)
	ctx := context.Background()
	for _, c := range []struct {
		a, b Options
		says string
	}{
		{Options{All: true}, Options{All: true, Quantiles: true}, "--quantiles"},
		{Options{All: true}, Options{All: true, MaxContext: 4096}, "--max-context 4096"},
		{Options{Sketch: true, RowGroups: 4}, Options{Sketch: true, RowGroups: 4, RowsPerGroup: 100}, "--rows-per-group 100"},
		{Options{All: true, Name: "a"}, Options{All: true, Name: "b"}, "--name b"},
	} {
		c.a.Source, c.b.Source = path, path
		s0, err := BuildShard(ctx, c.a, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		s1, err := BuildShard(ctx, c.b, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]*Shard{{s0, s1}, {s1, s0}} {
			_, err := Merge(in, nil)
			if err == nil || !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), "same options") {
				t.Errorf("merge of shards differing by %s: %v", c.says, err)
			}
		}
	}
}

// The command line of a shard names every option that changes the
// profile, and only those.
func TestShardOptionsArgs(t *testing.T) {
	o := Options{Source: "s", RowGroupIndices: []int{3, 9}, RowGroups: 4, Sketch: true, Quantiles: true, Name: "n", Workers: 3}
	got := strings.Join(o.ShardOptions().Args(), " ")
	if want := "--sketch --row-group-indices 3,9 --rows-per-group 0 --name n --quantiles"; got != want {
		t.Errorf("args %q, want %q", got, want)
	}
	if got := strings.Join(Options{All: true, Sketch: true, RowGroups: 3}.ShardOptions().Args(), " "); got != "--all --rows-per-group 0" {
		t.Errorf("full-scan args %q", got)
	}
}

// The cached profile's key changes with every option that changes a
// profile (each ShardOptions field, set alone), and not with those that
// do not (outputNeutral, but the source the caller passes apart).
func TestCacheKeyHasEveryShardOption(t *testing.T) {
	base := CacheKey("s", "id", Options{})
	st := reflect.TypeOf(ShardOptions{})
	for i := range st.NumField() {
		name := st.Field(i).Name
		var o Options
		v := reflect.ValueOf(&o).Elem().FieldByName(name)
		switch v.Kind() {
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int:
			v.SetInt(7)
		case reflect.String:
			v.SetString("x")
		case reflect.Slice:
			v.Set(reflect.ValueOf([]int{1, 2}))
		default:
			t.Fatalf("Options.%s: kind %s", name, v.Kind())
		}
		if CacheKey("s", "id", o) == base {
			t.Errorf("CacheKey ignores Options.%s: a profile made with it would be served from the cache of one made without", name)
		}
	}
	neutral := Options{Source: "elsewhere", Read: ReadOptions{Region: "r"}, Workers: 9, Now: func() time.Time { return time.Time{} }, Progress: func(Progress) {}}
	if CacheKey("s", "id", neutral) != base {
		t.Error("CacheKey changes with an option that does not change the profile")
	}
	// Options that select the same rows share a key: a full scan sketches
	// whatever Sketch says and reads every group whatever RowGroups says.
	if CacheKey("s", "id", Options{All: true}) != CacheKey("s", "id", Options{All: true, Sketch: true, RowGroups: 5}) {
		t.Error("a full scan's key depends on options it ignores")
	}
}

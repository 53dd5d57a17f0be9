package workload

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// Shards made, saved, parsed and merged in any order give the bytes of the
// single-process full scan.
func TestShardsMergeToTheSingleProcessProfile(t *testing.T) {
	path := synthTrace(t, smallTrace)
	fixed := func() time.Time { return time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC) }
	for _, o := range []Options{
		{Source: path, All: true, MaxContext: 8192},
		{Source: path, RowGroups: 5, RowsPerGroup: 3000, Sketch: true, Name: "n", License: "CC-BY-4.0"},
	} {
		o.Now = fixed
		single, err := Build(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := Encode(single.Document)
		for _, n := range []int{1, 3, 5} {
			var shards []*Shard
			for i := range n {
				s, err := BuildShard(context.Background(), o, i, n)
				if err != nil {
					t.Fatal(err)
				}
				b, err := EncodeShard(s)
				if err != nil {
					t.Fatal(err)
				}
				back, err := ParseShard(b)
				if err != nil {
					t.Fatal(err)
				}
				shards = append(shards, back)
			}
			for _, order := range [][]int{identity(n), reversed(n)} {
				in := make([]*Shard, n)
				for i, j := range order {
					in[i] = shards[j]
				}
				res, err := Merge(in, fixed)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := Encode(res.Document)
				if !bytes.Equal(got, want) {
					t.Fatalf("%d shards merged in order %v differ from the single scan:\n%s\n%s", n, order, got, want)
				}
				if res.Document.Digest != single.Document.Digest {
					t.Fatalf("digest %s vs %s", res.Document.Digest, single.Document.Digest)
				}
			}
		}
	}
}

func identity(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func reversed(n int) []int {
	out := identity(n)
	for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

func TestMergeRefusesIncompleteOrMixedShards(t *testing.T) {
	path := synthTrace(t, smallTrace)
	o := Options{Source: path, All: true}
	a, err := BuildShard(context.Background(), o, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildShard(context.Background(), o, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	other := *b
	other.Options.MaxContext = 4096
	moved := *b
	moved.Trace.Identity = "etag:changed"
	for _, tc := range []struct {
		shards []*Shard
		says   string
	}{
		{[]*Shard{a}, "shards [1] of 2 are missing"},
		{[]*Shard{a, a}, "shard 0 of 2 is given twice"},
		{[]*Shard{a, &other}, "shard 1 was made with --max-context 4096, shard 0 without --max-context"},
		{[]*Shard{a, &moved}, "the trace changed between shards"},
	} {
		if _, err := Merge(tc.shards, nil); err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("merge: %v, want it to say %q", err, tc.says)
		}
	}
	if _, err := BuildShard(context.Background(), Options{Source: path, RowGroups: 3}, 0, 2); err == nil || !strings.Contains(err.Error(), "--all") {
		t.Errorf("exact-percentile shard: %v", err)
	}
	bad, _ := EncodeShard(a)
	for _, c := range []struct{ from, to, says string }{
		{`"rows":`, `"rowz":`, "unknown field"},
		{`"count":`, `"count":1`, "buckets hold"},
	} {
		if _, err := ParseShard(bytes.Replace(bad, []byte(c.from), []byte(c.to), 1)); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("parse with %s: %v", c.to, err)
		}
	}
}

// FuzzParseShard: the shard parser never panics, and a shard it accepts
// encodes to one it accepts again, unchanged.
func FuzzParseShard(f *testing.F) {
	s, err := BuildShard(context.Background(), Options{Source: synthTrace(f, smallTrace), All: true}, 1, 3)
	if err != nil {
		f.Fatal(err)
	}
	good, _ := EncodeShard(s)
	f.Add(good)
	f.Add(bytes.Replace(good, []byte(`"offset":`), []byte(`"offset":-9`), 1))
	f.Add([]byte(`{"schema_version":"infercrane.profile-shard/v2","index":0,"shards":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseShard(data)
		if err != nil {
			return
		}
		b, err := EncodeShard(s)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseShard(b)
		if err != nil {
			t.Fatalf("re-encoded shard refused: %v", err)
		}
		b2, _ := EncodeShard(again)
		if !bytes.Equal(b, b2) {
			t.Fatalf("not stable:\n%s\n%s", b, b2)
		}
		if _, err := Merge([]*Shard{again}, nil); err != nil && strings.Contains(err.Error(), "panic") {
			t.Fatal(err)
		}
	})
}

package workload

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// fakeS3 is an in-process S3 server that counts the bytes it serves and can
// inject failures.
type fakeS3 struct {
	srv      *httptest.Server
	backend  *s3mem.Backend
	served   atomic.Int64
	requests atomic.Int64
	// fail, when set, may answer a request itself (returning true).
	mu   sync.Mutex
	fail func(w http.ResponseWriter, r *http.Request) bool
}

type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(n))
	return n, err
}

func newFakeS3(t *testing.T) *fakeS3 {
	t.Helper()
	f := &fakeS3{backend: s3mem.New()}
	h := gofakes3.New(f.backend).Server()
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.requests.Add(1)
		f.mu.Lock()
		fail := f.fail
		f.mu.Unlock()
		if fail != nil && fail(w, r) {
			return
		}
		h.ServeHTTP(countingWriter{w, &f.served}, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeS3) put(t *testing.T, bucket, key string, data []byte) {
	t.Helper()
	if err := f.backend.CreateBucket(bucket); err != nil && !gofakes3.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := f.backend.PutObject(bucket, key, map[string]string{}, bytes.NewReader(data), int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
}

func (f *fakeS3) setFail(fn func(w http.ResponseWriter, r *http.Request) bool) {
	f.mu.Lock()
	f.fail = fn
	f.mu.Unlock()
}

func (f *fakeS3) opts() ReadOptions {
	return ReadOptions{Endpoint: f.srv.URL, PathStyle: true, Region: "us-east-1", Anonymous: true,
		BlockSize: 32 << 10, TailSize: 16 << 10, MaxBackoff: 5 * time.Millisecond}
}

func TestS3ReadsOnlyFooterAndProjectedChunks(t *testing.T) {
	data, err := os.ReadFile(synthTrace(t, smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	s3 := newFakeS3(t)
	s3.put(t, "traces", "chutes/trace.parquet", data)
	for _, tc := range []struct {
		name string
		o    Options
	}{
		{"three groups, whole", Options{RowGroups: 3}},
		{"three groups, leading rows", Options{RowGroups: 3, RowsPerGroup: 1000}},
		{"explicit groups", Options{RowGroupIndices: []int{0, 11}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s3.served.Store(0)
			o := tc.o
			o.Source = "s3://traces/chutes/trace.parquet"
			o.Read = s3.opts()
			res, err := Build(context.Background(), o)
			if err != nil {
				t.Fatal(err)
			}
			served := s3.served.Load()
			// Bound from the file's metadata: the tail fetched at open
			// (which holds the footer) plus the projected column chunks.
			bound := o.Read.TailSize + res.ProjectedBytes
			if served > bound {
				t.Fatalf("served %d bytes, more than tail %d + projected chunks %d", served, o.Read.TailSize, res.ProjectedBytes)
			}
			if served != res.BytesRead {
				t.Errorf("reader counted %d bytes, server served %d", res.BytesRead, served)
			}
			if served*3 > int64(len(data)) {
				t.Errorf("served %d of %d bytes: more than a third of the file", served, len(data))
			}
			if !res.Document.Sampling.RemoteOnly || !strings.HasPrefix(res.Document.Source.URL, s3.srv.URL+"/traces/") {
				t.Errorf("remote_only %v url %q", res.Document.Sampling.RemoteOnly, res.Document.Source.URL)
			}
			if res.Identity == "" || !strings.HasPrefix(res.Identity, "etag:") {
				t.Errorf("identity %q", res.Identity)
			}
			local, err := Build(context.Background(), Options{Source: synthTrace(t, smallTrace), RowGroups: o.RowGroups, RowGroupIndices: o.RowGroupIndices, RowsPerGroup: o.RowsPerGroup})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(local.Document.Distributions, res.Document.Distributions) {
				t.Errorf("S3 and local distributions differ:\n%+v\n%+v", res.Document.Distributions, local.Document.Distributions)
			}
		})
	}
}

func TestS3RetriesThrottlingAnd5xx(t *testing.T) {
	data, err := os.ReadFile(synthTrace(t, smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	s3 := newFakeS3(t)
	s3.put(t, "traces", "t.parquet", data)
	var gets atomic.Int64
	s3.setFail(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet {
			return false
		}
		switch gets.Add(1) % 4 {
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`<?xml version="1.0"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
			return true
		case 2:
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`<?xml version="1.0"?><Error><Code>InternalError</Code><Message>oops</Message></Error>`))
			return true
		}
		return false
	})
	res, err := Build(context.Background(), Options{Source: "s3://traces/t.parquet", Read: s3.opts(), RowGroups: 2, RowsPerGroup: 500})
	if err != nil {
		t.Fatalf("throttled reads did not recover: %v", err)
	}
	if gets.Load() < 4 || res.Document.Sampling.RowsInspected != 1000 {
		t.Fatalf("gets %d rows %d", gets.Load(), res.Document.Sampling.RowsInspected)
	}
}

func TestS3Errors(t *testing.T) {
	data, err := os.ReadFile(synthTrace(t, smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	s3 := newFakeS3(t)
	s3.put(t, "traces", "t.parquet", data)
	s3.put(t, "traces", "notes.txt", []byte("these are not the rows you are looking for\n"))
	s3.put(t, "traces", "tiny", []byte("PAR1"))
	s3.put(t, "elsewhere", "t.parquet", data)
	s3.put(t, "private", "t.parquet", data)
	s3.setFail(func(w http.ResponseWriter, r *http.Request) bool {
		switch {
		case strings.HasPrefix(r.URL.Path, "/elsewhere/"):
			w.Header().Set("X-Amz-Bucket-Region", "eu-west-1")
			w.WriteHeader(http.StatusMovedPermanently)
			if r.Method != http.MethodHead {
				w.Write([]byte(`<?xml version="1.0"?><Error><Code>PermanentRedirect</Code><Message>The bucket you are attempting to access must be addressed using the specified endpoint.</Message></Error>`))
			}
			return true
		case strings.HasPrefix(r.URL.Path, "/private/"):
			w.WriteHeader(http.StatusForbidden)
			if r.Method != http.MethodHead {
				w.Write([]byte(`<?xml version="1.0"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>`))
			}
			return true
		}
		return false
	})
	for _, tc := range []struct {
		source, code string
		notParquet   bool
		says         string
	}{
		{"s3://traces/missing.parquet", "NoSuchKey", false, "object not found"},
		{"s3://elsewhere/t.parquet", "PermanentRedirect", false, `set region = "eu-west-1"`},
		{"s3://private/t.parquet", "AccessDenied", false, "anonymous = true"},
		{"s3://traces/notes.txt", "", true, "PAR1"},
		{"s3://traces/tiny", "", true, "fewer than a Parquet header"},
	} {
		t.Run(tc.source, func(t *testing.T) {
			_, err := Build(context.Background(), Options{Source: tc.source, Read: s3.opts()})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q does not say %q", err, tc.says)
			}
			var se *S3Error
			if tc.code != "" && (!errors.As(err, &se) || se.Code != tc.code) {
				t.Errorf("error %v is not an S3Error with code %s", err, tc.code)
			}
			if tc.notParquet != errors.Is(err, ErrNotParquet) {
				t.Errorf("errors.Is(err, ErrNotParquet) = %v, want %v", !tc.notParquet, tc.notParquet)
			}
		})
	}
	if _, _, err := ParseS3URL("s3://bucket-only"); err == nil {
		t.Error("s3://bucket-only parsed")
	}
}

func TestLocalErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Build(context.Background(), Options{Source: dir + "/nope.parquet"}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("missing file: %v", err)
	}
	os.WriteFile(dir+"/x.csv", []byte("a,b,c\n1,2,3\n4,5,6\n"), 0o644)
	if _, err := Build(context.Background(), Options{Source: dir + "/x.csv"}); !errors.Is(err, ErrNotParquet) {
		t.Errorf("csv: %v", err)
	}
	path := synthTrace(t, smallTrace)
	if _, err := Build(context.Background(), Options{Source: path, RowGroupIndices: []int{12}}); err == nil || !strings.Contains(err.Error(), "has 12 row groups") {
		t.Errorf("index out of range: %v", err)
	}
}

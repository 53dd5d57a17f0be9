package workload

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/infercrane/infercrane/planner/workload/synth"
)

// fakeS3 is an in-process S3 server that counts the bytes it serves and can
// inject failures.
type fakeS3 struct {
	srv      *httptest.Server
	backend  *s3mem.Backend
	h        http.Handler // the gofakes3 server, without failures
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
	f.h = h
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

// s3Fault answers one request the way a failing S3 (or the network in
// front of it) does. body faults apply to GETs only (a HEAD has no body).
type s3Fault struct {
	name string
	body bool
	do   func(f *fakeS3, w http.ResponseWriter, r *http.Request)
}

func s3Status(code int, s3Code string) func(*fakeS3, http.ResponseWriter, *http.Request) {
	return func(_ *fakeS3, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(code)
		if r.Method != http.MethodHead && s3Code != "" {
			w.Write([]byte(`<?xml version="1.0"?><Error><Code>` + s3Code + `</Code><Message>injected</Message></Error>`))
		}
	}
}

// dropConn closes the connection under the handler, after what was written
// so far: with rst, with a TCP reset (connection reset by peer), else with a
// plain close (EOF).
func dropConn(t testing.TB, w http.ResponseWriter, rst bool) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		tc.SetLinger(0)
	}
	conn.Close()
}

// realResponse is what the fault-free server answers r.
func (f *fakeS3) realResponse(r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	f.h.ServeHTTP(rec, r)
	return rec
}

// partial sends the real response's status and headers with the headers
// edit changes, then keep(len(body)) bytes of its body, then ends: drop
// says how (nil: the response completes normally).
func partial(t testing.TB, edit func(h http.Header, body []byte), keep func(int) int, drop *bool) func(*fakeS3, http.ResponseWriter, *http.Request) {
	return func(f *fakeS3, w http.ResponseWriter, r *http.Request) {
		rec := f.realResponse(r)
		body := rec.Body.Bytes()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		if edit != nil {
			edit(w.Header(), body)
		}
		w.WriteHeader(rec.Code)
		w.Write(body[:keep(len(body))])
		if drop != nil {
			w.(http.Flusher).Flush()
			dropConn(t, w, *drop)
		}
	}
}

func s3Faults(t testing.TB) []s3Fault {
	half := func(n int) int { return n / 2 }
	none := func(int) int { return 0 }
	reset, eof := true, false
	halfLength := func(h http.Header, body []byte) {
		h.Set("Content-Length", strconv.Itoa(len(body)/2))
	}
	halfRange := func(h http.Header, body []byte) {
		var first, last, size int64
		fmt.Sscanf(h.Get("Content-Range"), "bytes %d-%d/%d", &first, &last, &size)
		h.Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", first, first+int64(len(body)/2)-1, size))
		h.Set("Content-Length", strconv.Itoa(len(body)/2))
	}
	return []s3Fault{
		{name: "503 SlowDown", do: s3Status(http.StatusServiceUnavailable, "SlowDown")},
		{name: "500 InternalError", do: s3Status(http.StatusInternalServerError, "InternalError")},
		{name: "502", do: s3Status(http.StatusBadGateway, "")},
		{name: "504", do: s3Status(http.StatusGatewayTimeout, "")},
		{name: "connection reset before the response", do: func(_ *fakeS3, w http.ResponseWriter, _ *http.Request) { dropConn(t, w, true) }},
		{name: "body cut mid-stream", body: true, do: partial(t, nil, half, &eof)},
		{name: "connection reset mid-body", body: true, do: partial(t, nil, half, &reset)},
		{name: "empty body", body: true, do: partial(t, nil, none, &eof)},
		{name: "short body, short Content-Length", body: true, do: partial(t, halfLength, half, nil)},
		{name: "short Content-Range", body: true, do: partial(t, halfRange, half, nil)},
	}
}

// s3Path names the read path of a request: HEAD, the tail (footer) GET at
// open, or a GET of column data.
func s3Path(r *http.Request, size int) string {
	if r.Method == http.MethodHead {
		return "HEAD"
	}
	if strings.HasSuffix(r.Header.Get("Range"), fmt.Sprintf("-%d", size-1)) {
		return "tail"
	}
	return "chunk"
}

// s3Request names one request for the fault injectors.
type s3Request struct{ method, path, rng string }

// faultLog is what a fault injector saw: the attempts each request took and
// how many answers it replaced on each read path.
type faultLog struct {
	attempts map[s3Request]int
	faulted  map[string]int
}

// buildOverFaults builds o (its Source and Read replaced) from a fake S3
// holding data, whose answers fault replaces when it returns true; attempt
// counts from 1 for each distinct request.
func buildOverFaults(t *testing.T, data []byte, o Options, fault func(f *fakeS3, w http.ResponseWriter, r *http.Request, req s3Request, attempt int) bool) (*Result, faultLog, error) {
	t.Helper()
	s3 := newFakeS3(t)
	s3.put(t, "traces", "t.parquet", data)
	var mu sync.Mutex
	log := faultLog{attempts: map[s3Request]int{}, faulted: map[string]int{}}
	s3.setFail(func(w http.ResponseWriter, r *http.Request) bool {
		req := s3Request{r.Method, s3Path(r, len(data)), r.Header.Get("Range")}
		mu.Lock()
		log.attempts[req]++
		n := log.attempts[req]
		mu.Unlock()
		if !fault(s3, w, r, req, n) {
			return false
		}
		mu.Lock()
		log.faulted[req.path]++
		mu.Unlock()
		return true
	})
	o.Source = "s3://traces/t.parquet"
	o.Read = s3.opts()
	res, err := Build(context.Background(), o)
	// Read-ahead may still be in flight: take a copy.
	mu.Lock()
	defer mu.Unlock()
	out := faultLog{attempts: map[s3Request]int{}, faulted: map[string]int{}}
	for k, v := range log.attempts {
		out.attempts[k] = v
	}
	for k, v := range log.faulted {
		out.faulted[k] = v
	}
	return res, out, err
}

// TestS3RetriesEveryFailure fails the first two attempts of every request
// (each distinct HEAD and ranged GET) in one way at a time, on every read
// path (HEAD, the tail GET, column chunk GETs read in blocks, page by page,
// and by offset index): the profile must recover and equal the local one.
// The failures are keyed by request, not by a global count, so no request
// is failed more often than the retries allow, whatever the interleaving.
func TestS3RetriesEveryFailure(t *testing.T) {
	indexed := smallTrace
	indexed.PageIndex = true
	type readCase struct {
		name  string
		trace synth.Options
		o     Options
		data  []byte
		local *Result
	}
	reads := []*readCase{
		{name: "whole groups", trace: smallTrace, o: Options{RowGroups: 2}},
		{name: "page by page", trace: smallTrace, o: Options{RowGroups: 2, RowsPerGroup: 500}},
		{name: "offset index", trace: indexed, o: Options{RowGroups: 2, RowsPerGroup: 500}},
	}
	for _, read := range reads {
		path := synthTrace(t, read.trace)
		var err error
		if read.data, err = os.ReadFile(path); err != nil {
			t.Fatal(err)
		}
		o := read.o
		o.Source = path
		if read.local, err = Build(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	for _, fault := range s3Faults(t) {
		t.Run(fault.name, func(t *testing.T) {
			for _, read := range reads {
				data, local := read.data, read.local
				res, log, err := buildOverFaults(t, data, read.o, func(f *fakeS3, w http.ResponseWriter, r *http.Request, req s3Request, attempt int) bool {
					if attempt > 2 || fault.body && req.method != http.MethodGet {
						return false
					}
					fault.do(f, w, r)
					return true
				})
				if err != nil {
					t.Fatalf("%s: did not recover: %v", read.name, err)
				}
				if !reflect.DeepEqual(local.Document.Distributions, res.Document.Distributions) || res.Document.Sampling.RowsInspected != local.Document.Sampling.RowsInspected {
					t.Errorf("%s: S3 profile differs from the local one (rows %d, %d)", read.name, res.Document.Sampling.RowsInspected, local.Document.Sampling.RowsInspected)
				}
				for _, p := range []string{"HEAD", "tail", "chunk"} {
					if want := !(fault.body && p == "HEAD"); want && log.faulted[p] < 2 {
						t.Errorf("%s: %d %s answers failed, want at least 2 (%v)", read.name, log.faulted[p], p, log.faulted)
					}
				}
			}
		})
	}
}

// TestS3GivesUpWithTheCause fails every request of one read path for good:
// the profile must stop after MaxAttempts attempts with the failure itself,
// not a row group that seems to end early, and must not retry a response
// that retrying cannot fix.
func TestS3GivesUpWithTheCause(t *testing.T) {
	data, err := os.ReadFile(synthTrace(t, smallTrace))
	if err != nil {
		t.Fatal(err)
	}
	faults := map[string]s3Fault{}
	for _, f := range s3Faults(t) {
		faults[f.name] = f
	}
	wholeObject := func(f *fakeS3, w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.Header.Del("Range")
		rec := f.realResponse(r)
		w.Header().Set("Content-Length", strconv.Itoa(rec.Body.Len()))
		w.Header().Set("ETag", rec.Header().Get("ETag"))
		w.WriteHeader(http.StatusOK)
		w.Write(rec.Body.Bytes())
	}
	for _, tc := range []struct {
		name     string
		path     string // the read path that fails
		fault    func(*fakeS3, http.ResponseWriter, *http.Request)
		o        Options
		attempts int
		says     []string
	}{
		{"chunk GETs throttled, in blocks", "chunk", faults["503 SlowDown"].do, Options{RowGroups: 2}, 6, []string{"SlowDown", "after 6 attempts"}},
		{"chunk GETs throttled, page by page", "chunk", faults["503 SlowDown"].do, Options{RowGroups: 2, RowsPerGroup: 500}, 6, []string{"SlowDown", "after 6 attempts"}},
		{"chunk GET bodies cut", "chunk", faults["body cut mid-stream"].do, Options{RowGroups: 2, RowsPerGroup: 500}, 6, []string{"response body ended after", "after 6 attempts"}},
		{"chunk GET bodies reset", "chunk", faults["connection reset mid-body"].do, Options{RowGroups: 2}, 6, []string{"response body ended after", "after 6 attempts"}},
		{"tail GET bodies empty", "tail", faults["empty body"].do, Options{RowGroups: 2}, 6, []string{"response body ended after 0 of", "after 6 attempts"}},
		{"HEAD 500", "HEAD", faults["500 InternalError"].do, Options{RowGroups: 2}, 6, []string{"500", "after 6 attempts"}},
		{"HEAD reset", "HEAD", faults["connection reset before the response"].do, Options{RowGroups: 2}, 6, []string{"after 6 attempts"}},
		{"ranged GET answered with the whole object", "chunk", wholeObject, Options{RowGroups: 2}, 1, []string{"with the whole object", "supports Range requests"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, log, err := buildOverFaults(t, data, tc.o, func(f *fakeS3, w http.ResponseWriter, r *http.Request, req s3Request, _ int) bool {
				if req.path != tc.path {
					return false
				}
				tc.fault(f, w, r)
				return true
			})
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tc.says {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "the row group ends") {
				t.Errorf("error %q hides the failed read behind a short row group", err)
			}
			most := 0
			for _, n := range log.attempts {
				most = max(most, n)
			}
			if most != tc.attempts {
				t.Errorf("a request was tried %d times, want %d (%v)", most, tc.attempts, log.attempts)
			}
		})
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

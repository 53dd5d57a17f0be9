package bucket

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/infercrane/infercrane/planner/state"
)

// fakeStore is a real S3 protocol server (gofakes3, in memory) on
// 127.0.0.1 with faults injected on chosen requests. Nothing here is
// mocked: the SDK talks HTTP to it as it would to S3.
type fakeStore struct {
	srv     *httptest.Server
	backend *s3mem.Backend
	h       http.Handler

	mu       sync.Mutex
	faults   []fault
	requests []string // "KIND rel" of every request that reached the store
}

// fault fails the next `times` requests of kind whose key contains match.
type fault struct {
	kind  string // requestKind's names
	match string
	how   string // "500", "503", "412", "404", "cut" (close before answering), "lost" (apply, then cut)
	times int
}

const testBucket = "team-state"

func newFakeStore(t *testing.T) *fakeStore {
	t.Helper()
	f := &fakeStore{backend: s3mem.New()}
	if err := f.backend.CreateBucket(testBucket); err != nil {
		t.Fatal(err)
	}
	f.h = gofakes3.New(f.backend).Server()
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	t.Setenv("AWS_ACCESS_KEY_ID", "test-access-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret-key")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	return f
}

// requestKind names what a request does: list, get, head, delete,
// put-lock, put-journal, put-deployment, put-file.
func requestKind(r *http.Request) string {
	switch r.Method {
	case http.MethodGet:
		if r.URL.Query().Has("list-type") || strings.Count(strings.Trim(r.URL.Path, "/"), "/") == 0 {
			return "list"
		}
		return "get"
	case http.MethodHead:
		return "head"
	case http.MethodDelete:
		return "delete"
	case http.MethodPut:
		switch {
		case strings.HasSuffix(r.URL.Path, "/"+lockKey):
			return "put-lock"
		case strings.Contains(r.URL.Path, "/"+journalDir):
			return "put-journal"
		case strings.Contains(r.URL.Path, "/"+deploymentsDir):
			return "put-deployment"
		}
		return "put-file"
	}
	return r.Method
}

func (f *fakeStore) serve(w http.ResponseWriter, r *http.Request) {
	kind := requestKind(r)
	f.mu.Lock()
	f.requests = append(f.requests, kind+" "+r.URL.Path)
	how := ""
	for i := range f.faults {
		ft := &f.faults[i]
		if ft.times > 0 && ft.kind == kind && strings.Contains(r.URL.Path, ft.match) {
			ft.times--
			how = ft.how
			break
		}
	}
	f.mu.Unlock()
	switch how {
	case "500":
		http.Error(w, "<Error><Code>InternalError</Code><Message>injected</Message></Error>", http.StatusInternalServerError)
	case "503":
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte("<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"))
	case "412":
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusPreconditionFailed)
		w.Write([]byte("<Error><Code>PreconditionFailed</Code><Message>injected</Message></Error>"))
	case "404":
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte("<Error><Code>NoSuchKey</Code><Message>injected</Message></Error>"))
	case "cut":
		hijackClose(w)
	case "lost":
		// The store applies the request; the answer never arrives.
		f.h.ServeHTTP(httptest.NewRecorder(), r)
		hijackClose(w)
	default:
		f.h.ServeHTTP(w, r)
	}
}

func hijackClose(w http.ResponseWriter) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err == nil {
		conn.Close()
	}
}

func (f *fakeStore) inject(ft fault) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.faults = append(f.faults, ft)
}

// pending returns how many injected faults have not fired.
func (f *fakeStore) pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, ft := range f.faults {
		n += ft.times
	}
	return n
}

// backendFor opens the backend at prefix on the fake store.
func (f *fakeStore) backendFor(t *testing.T, prefix string) *Backend {
	t.Helper()
	b, err := Open(context.Background(), state.BackendRecord{Type: "s3", Bucket: testBucket, Prefix: prefix, Region: "us-east-1", Endpoint: f.srv.URL, UsePathStyle: true})
	if err != nil {
		t.Fatal(err)
	}
	b.RenewEvery = 50 * time.Millisecond
	return b
}

// objects returns every key and body in the bucket.
func (f *fakeStore) objects(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	list, err := f.backend.ListBucket(testBucket, &gofakes3.Prefix{}, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Contents {
		obj, err := f.backend.GetObject(testBucket, c.Key, nil)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, obj.Size)
		n, _ := obj.Contents.Read(buf)
		for n < len(buf) {
			m, err := obj.Contents.Read(buf[n:])
			if err != nil {
				break
			}
			n += m
		}
		obj.Contents.Close()
		out[c.Key] = buf[:n]
	}
	return out
}

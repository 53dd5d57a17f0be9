package workload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"
)

// ReadOptions tune how a trace object is read. Zero values take defaults.
type ReadOptions struct {
	// Region is the S3 region (default: the AWS configuration's, else us-east-1).
	Region string
	// Anonymous reads a public bucket without credentials; otherwise the
	// standard AWS credential chain is used.
	Anonymous bool
	// Endpoint overrides the S3 endpoint (an S3-compatible store). When
	// empty, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL apply as usual.
	Endpoint string
	// PathStyle addresses buckets as ENDPOINT/BUCKET/KEY instead of
	// BUCKET.ENDPOINT/KEY (most S3-compatible stores need it).
	PathStyle bool
	// BlockSize is the size of one ranged GET of a column chunk (default 1 MiB).
	BlockSize int64
	// ReadAhead is how many blocks are fetched ahead of a sequential reader
	// within the same column chunk (0: the default, 2; negative: none).
	ReadAhead int
	// Parallel is the most range requests in flight at once (default 8).
	Parallel int
	// TailSize is how many bytes at the end of the object are fetched at
	// open to get the footer in one request (default 64 KiB).
	TailSize int64
	// MaxAttempts is the most attempts per request, retries included, on
	// throttling, 5xx, connection errors and a GET body that ends short,
	// empty or reset (default 6).
	MaxAttempts int
	// MaxBackoff caps the exponential backoff between attempts (default 20s).
	MaxBackoff time.Duration
}

func (o *ReadOptions) defaults() {
	if o.BlockSize <= 0 {
		o.BlockSize = 1 << 20
	}
	// Idempotent: Open and the prefetch reader both apply defaults, so a
	// negative ReadAhead (none) must stay negative, not become 0 (default).
	if o.ReadAhead == 0 {
		o.ReadAhead = 2
	}
	if o.Parallel <= 0 {
		o.Parallel = 8
	}
	if o.TailSize <= 0 {
		o.TailSize = 64 << 10
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 6
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 20 * time.Second
	}
}

// Object is an opened trace: an io.ReaderAt (and io.Seeker, for the Parquet
// reader) that counts the bytes it fetched.
type Object struct {
	// Source is the path or s3:// URL as given.
	Source string
	// URL is the absolute URL recorded in profiles (https://, s3:// or file:).
	URL string
	// Size is the object's size in bytes.
	Size int64
	// Identity changes whenever the content may have: "etag:..." for S3,
	// "mtime:...,size:..." for local files.
	Identity string
	// Remote is true for S3 objects.
	Remote bool

	r       io.ReaderAt
	pf      *prefetchReader // nil for local files
	clips   []extent        // sorted; reads stop at their start (see readPlan)
	read    *atomic.Int64
	pos     int64
	closeFn func() error
}

// ErrNotParquet is wrapped by the error Open returns for a file without the
// Parquet magic bytes.
var ErrNotParquet = errors.New("not a Parquet file")

// Open opens a local path or an s3://bucket/key object and checks that it
// ends with the Parquet magic. ctx bounds every later read.
func Open(ctx context.Context, source string, o ReadOptions) (*Object, error) {
	o.defaults()
	var obj *Object
	var err error
	if strings.HasPrefix(source, "s3://") {
		obj, err = openS3(ctx, source, o)
	} else {
		obj, err = openLocal(source)
	}
	if err != nil {
		return nil, err
	}
	if err := obj.checkMagic(); err != nil {
		obj.Close()
		return nil, err
	}
	return obj, nil
}

func openLocal(path string) (*Object, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("trace %s does not exist; check the path (relative paths are resolved from the spec directory)", path)
		}
		return nil, fmt.Errorf("open trace: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open trace: %w", err)
	}
	if st.IsDir() {
		f.Close()
		return nil, fmt.Errorf("trace %s is a directory; name one Parquet file", path)
	}
	u := "file:" + filepath.ToSlash(path) // relative paths stay relative: no machine paths in profiles
	if filepath.IsAbs(path) {
		u = "file://" + filepath.ToSlash(path)
	}
	read := new(atomic.Int64)
	return &Object{
		Source: path, URL: u, Size: st.Size(),
		Identity: fmt.Sprintf("mtime:%d,size:%d", st.ModTime().UnixNano(), st.Size()),
		r:        countingReaderAt{f, read}, read: read, closeFn: f.Close,
	}, nil
}

type countingReaderAt struct {
	r io.ReaderAt
	n *atomic.Int64
}

func (c countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n.Add(int64(n))
	return n, err
}

func (o *Object) checkMagic() error {
	if o.Size < 12 {
		return fmt.Errorf("%s: %w: it has %d bytes, fewer than a Parquet header and footer", o.Source, ErrNotParquet, o.Size)
	}
	var tail [4]byte
	if _, err := o.ReadAt(tail[:], o.Size-4); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	if string(tail[:]) != "PAR1" {
		return fmt.Errorf("%s: %w: it does not end with the magic bytes PAR1 (found %q); point the trace at a .parquet file", o.Source, ErrNotParquet, tail[:])
	}
	return nil
}

// ReadAt implements io.ReaderAt. A read reaching into a clipped range (the
// unneeded tail of a sampled column chunk) is cut short there with io.EOF.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	if len(o.clips) > 0 {
		i := sort.Search(len(o.clips), func(i int) bool { return o.clips[i].end > off })
		if i < len(o.clips) && o.clips[i].start < off+int64(len(p)) {
			if off >= o.clips[i].start {
				return 0, io.EOF
			}
			n, err := o.r.ReadAt(p[:o.clips[i].start-off], off)
			if err == nil {
				err = io.EOF
			}
			return n, err
		}
	}
	return o.r.ReadAt(p, off)
}

// Seek implements io.Seeker (the Parquet reader uses it to find the size).
func (o *Object) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += o.pos
	case io.SeekEnd:
		offset += o.Size
	default:
		return 0, fmt.Errorf("seek: bad whence %d", whence)
	}
	if offset < 0 {
		return 0, fmt.Errorf("seek: negative position %d", offset)
	}
	o.pos = offset
	return offset, nil
}

// BytesRead is how many bytes were fetched from the file or object so far.
func (o *Object) BytesRead() int64 {
	if o.pf != nil {
		return o.pf.fetched.Load()
	}
	return o.read.Load()
}

// plan declares the byte ranges the scan will read, so read-ahead stays
// inside them, and the ranges it must not read.
func (o *Object) plan(p readPlan) {
	if o.pf != nil {
		o.pf.setExtents(p.extents)
	}
	o.clips = append([]extent(nil), p.clips...)
	sort.Slice(o.clips, func(i, j int) bool { return o.clips[i].start < o.clips[j].start })
}

// Close releases the file.
func (o *Object) Close() error {
	if o.closeFn != nil {
		return o.closeFn()
	}
	return nil
}

//go:build unix

package local

import (
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParseHandle: any handle parses without panicking; one that parses
// names a process group above 1 (never "every process", -1, or init), and
// a handle written by handle() reads back the same.
func FuzzParseHandle(f *testing.F) {
	f.Add("pgid:123")
	f.Add("pgid:123;start:456;cgroup:/sys/fs/cgroup/unified/infercrane-a.b.c;mark:a.b.c")
	f.Add("pgid:-1")
	f.Add("pgid:1;mark:x")
	f.Add("pgid:77;cgroup:/sys/fs/cgroup/unified/system.slice")
	f.Fuzz(func(t *testing.T, h string) {
		tr, ok := parseHandle(h)
		if !ok {
			return
		}
		if tr.pgid <= 1 {
			t.Fatalf("handle %q parsed to process group %d", h, tr.pgid)
		}
		if tr.cgroup != "" && (!strings.HasPrefix(filepath.Base(tr.cgroup), "infercrane-") || strings.Contains(tr.cgroup, "..")) {
			t.Fatalf("handle %q names cgroup %q, which this executor never makes", h, tr.cgroup)
		}
		back, ok := parseHandle(tr.handle())
		if !ok || back.pgid != tr.pgid || back.start != tr.start {
			t.Fatalf("handle %q: round trip %+v -> %+v", h, tr, back)
		}
	})
}

package bucket

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infercrane/infercrane/planner/state"
)

var ctx = context.Background()

// applyTo opens dir as a cache of b under a held lock and writes lanes
// with runs each, as an apply would: lane entries, records files, run
// entries, a deployment, the plan.
func applyTo(t *testing.T, b *Backend, dir string, lanes []string, runs int) {
	t.Helper()
	lock, err := b.Lock(ctx, "test apply")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Pull(ctx, dir); err != nil {
		t.Fatal(err)
	}
	st, err := state.OpenReplicated(dir, "test apply", b.Replica(lock))
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	if err := st.RecordDeployment(state.DeploymentEntry{Type: state.DeployStarting, Apply: "a1", Deployment: "d1", Executor: "sim"}); err != nil {
		t.Fatal(err)
	}
	for _, lane := range lanes {
		if err := st.StartLane(lane, "screen/"+lane, runs, map[string]any{"model": lane}); err != nil {
			t.Fatal(err)
		}
		for r := 1; r <= runs; r++ {
			if st.Snapshot().Lanes[lane].Complete(r) {
				continue
			}
			rec := state.RunRecord{Lane: lane, Run: r, Summary: []byte(`{"ok":true}`)}
			if err := st.CommitRun(rec, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "{\"lane\":%q,\"run\":%d}\n", lane, r)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := st.SavePlan([]byte(`{"plan":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := st.RecordDeployment(state.DeploymentEntry{Type: state.DeployStopped, Apply: "a1", Deployment: "d1", How: "torn down"}); err != nil {
		t.Fatal(err)
	}
}

// completed returns lane -> completed runs of a state directory.
func completed(t *testing.T, dir string) map[string][]int {
	t.Helper()
	snap, err := state.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Warnings) > 0 {
		t.Fatalf("warnings reading %s: %v", dir, snap.Warnings)
	}
	out := map[string][]int{}
	for id, l := range snap.Lanes {
		out[id] = l.Completed
	}
	return out
}

func TestApplyThroughTheBucketThenPullElsewhere(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "screens/quick")
	a, c := t.TempDir(), t.TempDir()
	applyTo(t, b, a, []string{"lane-a", "lane-b"}, 2)
	st, err := b.Pull(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if st.Entries != 6 {
		t.Errorf("pulled %d journal entries, want 6 (2 lanes + 4 runs)", st.Entries)
	}
	want := map[string][]int{"lane-a": {1, 2}, "lane-b": {1, 2}}
	if got := completed(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("the other clone sees %v, want %v", got, want)
	}
	for _, rel := range []string{state.JournalFile, state.DeploymentsFile, state.PlanFile, "runs/lane-b/2.jsonl"} {
		x, _ := os.ReadFile(filepath.Join(a, rel))
		y, _ := os.ReadFile(filepath.Join(c, rel))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between the clones (%d and %d bytes)", rel, len(x), len(y))
		}
	}
	live, err := state.LiveDeployments(c)
	if err != nil || len(live) != 0 {
		t.Errorf("live deployments in the pulled state: %v %v", live, err)
	}
	if _, ok := f.objects(t)["screens/quick/"+lockKey]; ok {
		t.Error("the lock object is still there after Close")
	}
	// A second pull fetches nothing: every local copy matches.
	st, err = b.Pull(ctx, c)
	if err != nil || st.Fetched != 0 || st.Kept == 0 {
		t.Errorf("second pull: %+v %v, want nothing fetched", st, err)
	}
}

func TestPullMakesTheCacheFollowTheBucket(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "p")
	dir := t.TempDir()
	applyTo(t, b, dir, []string{"l1"}, 1)
	// Local edits and leftovers in the cache are not the truth.
	os.WriteFile(filepath.Join(dir, "runs", "l1", "9.jsonl"), []byte("stale\n"), 0o644)
	os.WriteFile(filepath.Join(dir, state.PlanFile), []byte("edited"), 0o644)
	os.WriteFile(filepath.Join(dir, state.JournalFile), nil, 0o644)
	st, err := b.Pull(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Removed != 1 {
		t.Errorf("removed %d stale files, want 1", st.Removed)
	}
	if p, _ := os.ReadFile(filepath.Join(dir, state.PlanFile)); string(p) != `{"plan":1}` {
		t.Errorf("plan.json = %q after pull", p)
	}
	if got := completed(t, dir); !reflect.DeepEqual(got, map[string][]int{"l1": {1}}) {
		t.Errorf("after pull: %v", got)
	}
}

func TestOneLockHolderAcrossMachines(t *testing.T) {
	f := newFakeStore(t)
	b1, b2 := f.backendFor(t, "p"), f.backendFor(t, "p")
	var wg sync.WaitGroup
	locks := make([]*Lock, 8)
	errs := make([]error, 8)
	for i := range locks {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			b := b1
			if i%2 == 1 {
				b = b2
			}
			locks[i], errs[i] = b.Lock(ctx, fmt.Sprintf("apply %d", i))
		}(i)
	}
	wg.Wait()
	var holder *Lock
	for i, err := range errs {
		var le *LockedError
		switch {
		case err == nil:
			if holder != nil {
				t.Fatalf("two holders: %s and %s", holder.ID(), locks[i].ID())
			}
			holder = locks[i]
		case errors.As(err, &le):
			if !strings.Contains(err.Error(), "locked by") || le.Holder.Command == "" {
				t.Errorf("refusal does not name the holder: %v", err)
			}
		default:
			t.Errorf("lock %d: %v", i, err)
		}
	}
	if holder == nil {
		t.Fatal("nobody got the lock")
	}
	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	l, err := b2.Lock(ctx, "after release")
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	l.Release()
}

// TestStaleLockIsReportedAndForceUnlocked: a holder that stopped renewing
// (killed) leaves a lock that is refused as stale once its last renewal is
// more than three periods old, and not before; force-unlock with its ID
// frees the state. The lock object is rewritten with the renewal times a
// dead holder would have left, so no wall-clock wait decides the outcome
// (it slept four periods before, which a busy machine could stretch or the
// check could race).
func TestStaleLockIsReportedAndForceUnlocked(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "p")
	dead, err := b.Lock(ctx, "infercrane apply")
	if err != nil {
		t.Fatal(err)
	}
	// The holder is killed: it stops renewing, without releasing.
	close(dead.stop)
	<-dead.done
	b.RenewEvery = time.Hour // stale after 3 h without a renewal
	var le *LockedError
	// Renewed a minute ago: locked, not stale.
	renewedAt(t, b, time.Now().Add(-time.Minute))
	if _, err := b.Lock(ctx, "infercrane apply"); !errors.As(err, &le) || le.Stale || le.Holder.ID != dead.ID() {
		t.Fatalf("want a refusal naming %s, not stale, got %v", dead.ID(), err)
	}
	// Last renewed four periods ago: stale.
	renewedAt(t, b, time.Now().Add(-4*b.RenewEvery))
	_, err = b.Lock(ctx, "infercrane apply")
	if !errors.As(err, &le) || !le.Stale || le.Holder.ID != dead.ID() {
		t.Fatalf("want a stale-lock refusal naming %s, got %v", dead.ID(), err)
	}
	if !strings.Contains(err.Error(), "stale") {
		t.Errorf("the refusal does not say the lock is stale: %v", err)
	}
	if err := b.ForceUnlock(ctx, "0000"); err == nil || !strings.Contains(err.Error(), dead.ID()) {
		t.Errorf("force-unlock with a wrong ID: %v", err)
	}
	if err := b.ForceUnlock(ctx, dead.ID()); err != nil {
		t.Fatal(err)
	}
	l, err := b.Lock(ctx, "infercrane apply")
	if err != nil {
		t.Fatalf("lock after force-unlock: %v", err)
	}
	defer l.Release()
}

// renewedAt rewrites the lock object as its holder would have left it had
// it last renewed at at (conditionally on the object read, as a renewal).
func renewedAt(t *testing.T, b *Backend, at time.Time) {
	t.Helper()
	info, etag, err := b.ReadLock(ctx)
	if err != nil || info == nil {
		t.Fatalf("read the lock: %v %v", info, err)
	}
	info.Renewed = at.UTC().Format(time.RFC3339Nano)
	data, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.put(ctx, lockKey, data, false, etag); err != nil {
		t.Fatal(err)
	}
}

func TestAForcedOpenLockStopsItsApply(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "p")
	dir := t.TempDir()
	lock, err := b.Lock(ctx, "apply 1")
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.OpenReplicated(dir, "apply 1", b.Replica(lock))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := b.ForceUnlock(ctx, lock.ID()); err != nil {
		t.Fatal(err)
	}
	other, err := b.Lock(ctx, "apply 2")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Release()
	deadline := time.Now().Add(10 * time.Second)
	for lock.Held() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	err = st.StartLane("l1", "k", 1, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "no longer this apply's") {
		t.Fatalf("a write after the lock was taken over: %v", err)
	}
	if _, ok := f.objects(t)["p/"+journalRel(1)]; ok {
		t.Error("the apply that lost its lock still wrote to the journal")
	}
}

func TestTwoWritersCannotStoreOneEntry(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "p")
	l1, err := b.Lock(ctx, "one")
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Release()
	r1, r2 := b.Replica(l1), b.Replica(l1)
	if err := r1.AppendJournal(1, []byte("first\n")); err != nil {
		t.Fatal(err)
	}
	// The same bytes again (a retry after a lost answer) succeed...
	if err := r1.AppendJournal(1, []byte("first\n")); err != nil {
		t.Fatalf("idempotent retry: %v", err)
	}
	// ...other bytes under the same seq never overwrite them.
	if err := r2.AppendJournal(1, []byte("second\n")); err == nil {
		t.Fatal("a second writer overwrote journal entry 1")
	}
	if got := string(f.objects(t)["p/"+journalRel(1)]); got != "first\n" {
		t.Errorf("entry 1 = %q", got)
	}
}

// TestFaultsOnEveryRequestKind injects each fault on each kind of request
// an apply and a pull make: the operation succeeds after the SDK's retries
// (or the lost-response check), and the state pulled afterwards is exactly
// the state written.
func TestFaultsOnEveryRequestKind(t *testing.T) {
	kinds := []struct{ kind, match string }{
		{"put-lock", lockKey}, {"put-journal", journalDir}, {"put-deployment", deploymentsDir},
		{"put-file", "runs/"}, {"get", lockKey}, {"list", ""}, {"delete", lockKey},
	}
	for _, k := range kinds {
		for _, how := range []string{"500", "503", "cut", "lost"} {
			if how == "lost" && (k.kind == "get" || k.kind == "list") {
				continue // a lost read is a cut connection
			}
			t.Run(k.kind+"/"+how, func(t *testing.T) {
				f := newFakeStore(t)
				b := f.backendFor(t, "p")
				f.inject(fault{kind: k.kind, match: k.match, how: how, times: 1})
				a, c := t.TempDir(), t.TempDir()
				applyTo(t, b, a, []string{"l1"}, 2)
				if _, err := b.Pull(ctx, c); err != nil {
					t.Fatal(err)
				}
				if n := f.pending(); n != 0 {
					t.Fatalf("the fault never fired (%d pending): the test does not exercise %s", n, k.kind)
				}
				if got := completed(t, c); !reflect.DeepEqual(got, map[string][]int{"l1": {1, 2}}) {
					t.Errorf("pulled state %v", got)
				}
				if err := b.Check(ctx, a); err != nil {
					t.Error(err)
				}
			})
		}
	}
}

// TestAStoreThatKeepsFailingStopsTheApplyCleanly: when the store fails
// every journal write, the run is not counted anywhere, and what was
// journaled before is intact in the bucket.
func TestAStoreThatKeepsFailingStopsTheApplyCleanly(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "p")
	dir := t.TempDir()
	applyTo(t, b, dir, []string{"l1"}, 1)
	lock, err := b.Lock(ctx, "apply 2")
	if err != nil {
		t.Fatal(err)
	}
	st, err := state.OpenReplicated(dir, "apply 2", b.Replica(lock))
	if err != nil {
		t.Fatal(err)
	}
	f.inject(fault{kind: "put-journal", how: "503", times: 1000})
	err = st.StartLane("l2", "k2", 1, map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "resume") {
		t.Fatalf("want a failed write that says how to resume, got %v", err)
	}
	if err := st.StartLane("l3", "k3", 1, map[string]any{}); err == nil {
		t.Fatal("the store accepted a write after a failed one")
	}
	st.Close()
	f.mu.Lock()
	f.faults = nil
	f.mu.Unlock()
	c := t.TempDir()
	if _, err := b.Pull(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got := completed(t, c); !reflect.DeepEqual(got, map[string][]int{"l1": {1}}) {
		t.Errorf("after the failed apply the bucket holds %v", got)
	}
	if got := completed(t, dir); !reflect.DeepEqual(got, map[string][]int{"l1": {1}}) {
		t.Errorf("the cache counts %v, more than the bucket holds", got)
	}
}

func TestMigrateLocalToBucketAndBack(t *testing.T) {
	f := newFakeStore(t)
	local := t.TempDir()
	// A plain local state, written without a backend.
	st, err := state.Open(local, "local apply")
	if err != nil {
		t.Fatal(err)
	}
	st.StartLane("l1", "k", 2, map[string]any{"x": 1})
	for r := 1; r <= 2; r++ {
		st.CommitRun(state.RunRecord{Lane: "l1", Run: r, Summary: []byte(`{}`)}, func(w io.Writer) error {
			_, err := fmt.Fprintf(w, "{\"run\":%d}\n", r)
			return err
		})
	}
	st.SavePlan([]byte(`{"p":2}`))
	os.MkdirAll(filepath.Join(local, "reports"), 0o755)
	os.WriteFile(filepath.Join(local, "reports", "s.evidence.json"), []byte(`{"digest":"x"}`), 0o644)
	st.Close()

	b := f.backendFor(t, "migrated")
	pst, err := b.Push(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	if pst.Entries != 3 {
		t.Errorf("pushed %d entries, want 3", pst.Entries)
	}
	// Pushing again is a no-op; pushing another state into it is refused.
	if _, err := b.Push(ctx, local); err != nil {
		t.Errorf("re-running a migration: %v", err)
	}
	other := t.TempDir()
	st2, _ := state.Open(other, "x")
	st2.StartLane("zz", "k", 1, map[string]any{})
	st2.Close()
	if _, err := b.Push(ctx, other); err == nil || !strings.Contains(err.Error(), "different state") {
		t.Errorf("pushing a different state over it: %v", err)
	}
	back := t.TempDir()
	if _, err := b.Pull(ctx, back); err != nil {
		t.Fatal(err)
	}
	var names []string
	filepath.WalkDir(local, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(local, p)
			if rel != state.LockFile {
				names = append(names, rel)
			}
		}
		return nil
	})
	sort.Strings(names)
	for _, rel := range names {
		x, _ := os.ReadFile(filepath.Join(local, rel))
		y, err := os.ReadFile(filepath.Join(back, rel))
		if err != nil || sha256Hex(x) != sha256Hex(y) {
			t.Errorf("%s: digest differs after local -> s3 -> local (%v)", rel, err)
		}
	}
}

func TestACorruptObjectIsRefused(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "p")
	applyTo(t, b, t.TempDir(), []string{"l1"}, 1)
	// Replace the records object by hand, keeping its recorded digest.
	key := "p/runs/l1/1.jsonl"
	obj, err := f.backend.HeadObject(testBucket, key)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("{\"tampered\":true}\n")
	if _, err := f.backend.PutObject(testBucket, key, obj.Metadata, bytes.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatal(err)
	}
	_, err = b.Pull(ctx, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("pulling a tampered object: %v", err)
	}
}

// TestALostRenewalKeepsTheLock: a renewal the store applied but whose
// answer never arrived (or came after the renewal's deadline, as on a busy
// machine) changed the lock's ETag behind the holder's back; the next
// write with the old ETag is refused, and the holder took that for a
// force-unlock and stopped its apply ("it was forced open", the kill
// matrix's sim-s3-backend at load average 10). The lock still carries the
// holder's ID, so it is still the holder's: it keeps renewing.
func TestALostRenewalKeepsTheLock(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "p")
	lock, err := b.Lock(ctx, "apply 1")
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	f.inject(fault{kind: "put-lock", how: "lost", times: 1})
	deadline := time.Now().Add(20 * time.Second)
	for f.pending() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if f.pending() > 0 {
		t.Fatal("no renewal reached the store")
	}
	// Renewals after the lost one must land: the stored renewal time moves
	// on twice more.
	first, _, err := b.ReadLock(ctx)
	if err != nil || first == nil {
		t.Fatalf("read the lock: %+v, %v", first, err)
	}
	seen := 0
	for last := first.Renewed; seen < 2 && lock.Held() == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if cur, _, err := b.ReadLock(ctx); err == nil && cur != nil && cur.Renewed != last {
			last = cur.Renewed
			seen++
		}
	}
	if err := lock.Held(); err != nil {
		t.Fatalf("the holder gave its lock up after a lost renewal: %v", err)
	}
	if seen < 2 {
		t.Fatalf("the lock was renewed %d times after the lost renewal, want 2", seen)
	}
	if cur, _, _ := b.ReadLock(ctx); cur == nil || cur.ID != lock.ID() {
		t.Fatalf("the lock is %+v, not the holder's %s", cur, lock.ID())
	}
}

// TestALockJudgedLostIsStillReleased makes the renewal judge the lock lost
// while the object still carries the holder's ID (a renewal refused, then
// a read that finds no lock: what a busy machine's out-of-order answers
// look like): the apply stops writing, and Release still removes its own
// lock, so the next apply is not refused. Before the fix Release skipped
// the delete and the lock stayed (the kill-anywhere matrix under load,
// seed 1796188383355033823).
func TestALockJudgedLostIsStillReleased(t *testing.T) {
	f := newFakeStore(t)
	b := f.backendFor(t, "p")
	lock, err := b.Lock(ctx, "apply 1")
	if err != nil {
		t.Fatal(err)
	}
	f.inject(fault{kind: "put-lock", how: "412", times: 1})
	f.inject(fault{kind: "get", match: lockKey, how: "404", times: 1})
	deadline := time.Now().Add(60 * time.Second)
	for lock.Held() == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if lock.Held() == nil {
		t.Fatal("the renewal did not judge the lock lost")
	}
	if cur, _, err := b.ReadLock(ctx); err != nil || cur == nil || cur.ID != lock.ID() {
		t.Fatalf("before Release the lock is %+v (%v), want the holder's %s", cur, err, lock.ID())
	}
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	if cur, _, err := b.ReadLock(ctx); err != nil || cur != nil {
		t.Fatalf("after Release the lock is %+v (%v), want none", cur, err)
	}
	other, err := b.Lock(ctx, "apply 2")
	if err != nil {
		t.Fatalf("the next apply is refused: %v", err)
	}
	other.Release()
}

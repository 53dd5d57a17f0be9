package modal_test

import (
	"errors"
	"testing"
	"time"

	"github.com/infercrane/infercrane/executor"
	"github.com/infercrane/infercrane/plugins/modal"
	"github.com/infercrane/infercrane/plugins/modal/localcloud"
)

// An apply that crashed leaves sandboxes running; a later process (a fresh
// local cloud over the same directory, as `infercrane cleanup` would be)
// finds them by tag and terminates the old ones.
func TestCleanupOrphans(t *testing.T) {
	f := newFixture(t, nil, nil)
	var ids []string
	for _, dep := range []string{"dep1", "dep2"} {
		srv, err := f.exec.Deploy(t.Context(), f.deployment(dep))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, srv.Handle) // and no Teardown: the apply "crashed"
	}
	// A sandbox of another app and one without InferCrane's tag are not touched.
	other, err := f.cloud.Create(t.Context(), modal.SandboxSpec{App: "other", Command: []string{"sleep", "60"}, Tags: map[string]string{"infercrane": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	untagged, err := f.cloud.Create(t.Context(), modal.SandboxSpec{App: "infercrane", Command: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		other.Terminate(t.Context())
		untagged.Terminate(t.Context())
	}()

	later := localcloud.New(f.cloud.Dir, bin)
	now := time.Now()
	// Too young for -older-than 1h: kept.
	rep, err := modal.Cleanup(t.Context(), later, modal.CleanupOptions{OlderThan: time.Hour, Now: now})
	if err != nil || len(rep.Sandboxes) != 2 || rep.Terminated != 0 || rep.Sandboxes[0].Action != modal.ActionKept {
		t.Fatalf("older-than: %+v, %v", rep, err)
	}
	// Dry run two hours later: listed, not terminated.
	rep, err = modal.Cleanup(t.Context(), later, modal.CleanupOptions{OlderThan: time.Hour, Now: now.Add(2 * time.Hour), DryRun: true})
	if err != nil || rep.Terminated != 0 || rep.Sandboxes[1].Action != modal.ActionWould || rep.Sandboxes[0].Deployment == "" || rep.Sandboxes[0].Apply != "apply-1" {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	if len(f.cloud.Running()) != 4 {
		t.Fatalf("dry run terminated something: %v", f.cloud.Running())
	}
	rep, err = modal.Cleanup(t.Context(), later, modal.CleanupOptions{OlderThan: time.Hour, Now: now.Add(2 * time.Hour), Terminate: fast})
	if err != nil || rep.Terminated != 2 || rep.Failed != 0 {
		t.Fatalf("cleanup: %+v, %v", rep, err)
	}
	for _, id := range ids {
		f.mustBeGone(id)
	}
	running := f.cloud.Running()
	if len(running) != 2 {
		t.Fatalf("cleanup touched sandboxes it does not own: %v left of other %s, untagged %s", running, other.ID(), untagged.ID())
	}
	// The executor's own teardown afterwards is harmless.
	for _, id := range ids {
		if err := f.exec.Teardown(t.Context(), &executor.Server{Handle: id}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCleanupReportsTerminateFailure(t *testing.T) {
	f := newFixture(t, nil, nil)
	srv, err := f.exec.Deploy(t.Context(), f.deployment("dep1"))
	if err != nil {
		t.Fatal(err)
	}
	later := localcloud.New(f.cloud.Dir, bin)
	later.Hooks.BeforeTerminate = func(string) error { return errors.New("PERMISSION_DENIED: token lacks sandbox scope") }
	rep, err := modal.Cleanup(t.Context(), later, modal.CleanupOptions{Terminate: fast})
	wantErr(t, err, "1 of 1 sandboxes could not be terminated", "PERMISSION_DENIED")
	if rep.Failed != 1 || rep.Sandboxes[0].Action != modal.ActionFailed || rep.Sandboxes[0].Error == "" {
		t.Fatalf("%+v", rep)
	}
	if err := f.exec.Teardown(t.Context(), srv); err != nil {
		t.Fatal(err)
	}
}

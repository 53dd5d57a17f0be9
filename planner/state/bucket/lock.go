package bucket

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/user"
	"sync"
	"time"
)

// LockInfo is the content of the lock object: who holds the state, where,
// since when, and when they last said they were alive.
type LockInfo struct {
	// ID identifies this hold of the lock; force-unlock takes it.
	ID      string `json:"id"`
	Who     string `json:"who"`
	Host    string `json:"host"`
	PID     int    `json:"pid"`
	Command string `json:"command"`
	Created string `json:"created"`
	Renewed string `json:"renewed"`
}

// Age is how long ago the holder last renewed the lock.
func (i *LockInfo) Age(now time.Time) time.Duration {
	t, err := time.Parse(time.RFC3339Nano, i.Renewed)
	if err != nil {
		return 0
	}
	return now.Sub(t)
}

// LockedError is returned when another apply holds the state's lock.
type LockedError struct {
	Backend string
	Holder  LockInfo
	// Age is the time since the holder last renewed the lock.
	Age time.Duration
	// Stale is set when the holder stopped renewing (three periods): it
	// was most likely killed, and force-unlock with Holder.ID frees the state.
	Stale bool
}

func (e *LockedError) Error() string {
	h := e.Holder
	s := fmt.Sprintf("the state in %s is locked by %s (%q, PID %d on %s, lock ID %s) since %s, last renewed %s ago",
		e.Backend, h.Who, h.Command, h.PID, h.Host, h.ID, h.Created, e.Age.Round(time.Second))
	if e.Stale {
		s += "; the lock is stale: its holder stopped renewing it"
	}
	return s
}

// Lock is this process's hold of the state's lock, renewed in the
// background until Release.
type Lock struct {
	b  *Backend
	id string // info.ID, which never changes: read without mu
	// info is what the lock object last said (its renewal time moves).
	info LockInfo

	mu   sync.Mutex
	etag string
	err  error // set when the lock was lost

	stop chan struct{}
	done chan struct{}
}

// Lock takes the state's lock for command with a conditional write of the
// lock object (If-None-Match: *): of two applies on two machines exactly
// one succeeds, and the other gets a *LockedError naming the holder.
func (b *Backend) Lock(ctx context.Context, command string) (*Lock, error) {
	now := time.Now().UTC().Format(time.RFC3339Nano)
	host, _ := os.Hostname()
	who := "unknown"
	if u, err := user.Current(); err == nil {
		who = u.Username
	}
	info := LockInfo{ID: newID(), Who: who + "@" + host, Host: host, PID: os.Getpid(), Command: command, Created: now, Renewed: now}
	data, err := json.Marshal(info)
	if err != nil {
		return nil, err
	}
	etag, err := b.put(ctx, lockKey, data, true, "")
	var ce *conflictError
	if errors.As(err, &ce) {
		holder, _, rerr := b.ReadLock(ctx)
		if rerr != nil {
			return nil, rerr
		}
		if holder == nil {
			return nil, fmt.Errorf("the lock of %s changed hands while it was being taken; try again", b)
		}
		age := holder.Age(time.Now())
		return nil, &LockedError{Backend: b.String(), Holder: *holder, Age: age, Stale: age > 3*b.RenewEvery}
	}
	if err != nil {
		return nil, fmt.Errorf("take the lock: %w", err)
	}
	l := &Lock{b: b, id: info.ID, info: info, etag: etag, stop: make(chan struct{}), done: make(chan struct{})}
	go l.renew()
	return l, nil
}

// ReadLock returns the lock's holder and the lock object's ETag, or nil
// when the state is not locked.
func (b *Backend) ReadLock(ctx context.Context) (*LockInfo, string, error) {
	data, etag, err := b.get(ctx, lockKey)
	if err != nil || data == nil {
		return nil, "", err
	}
	var info LockInfo
	if err := json.Unmarshal(data, &info); err != nil {
		return nil, "", fmt.Errorf("%s/%s is not a lock: %w", b, lockKey, err)
	}
	return &info, etag, nil
}

// ForceUnlock removes the lock if its ID is id, as Terraform's
// force-unlock: for a lock whose holder was killed.
func (b *Backend) ForceUnlock(ctx context.Context, id string) error {
	info, etag, err := b.ReadLock(ctx)
	if err != nil {
		return err
	}
	if info == nil {
		return fmt.Errorf("the state in %s is not locked", b)
	}
	if info.ID != id {
		return fmt.Errorf("the state in %s is locked with ID %s (by %s), not %s", b, info.ID, info.Who, id)
	}
	return b.delete(ctx, lockKey, etag)
}

// ID is the lock's ID.
func (l *Lock) ID() string { return l.id }

// Held returns nil while the lock is this process's; after someone forced
// it open (and maybe another apply took it) it says so.
func (l *Lock) Held() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// renew rewrites the lock's renewal time every RenewEvery, conditionally
// on the lock being the one this process wrote (If-Match).
func (l *Lock) renew() {
	defer close(l.done)
	t := time.NewTicker(l.b.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		l.mu.Lock()
		info, etag := l.info, l.etag
		l.mu.Unlock()
		info.Renewed = time.Now().UTC().Format(time.RFC3339Nano)
		data, _ := json.Marshal(info)
		ctx, cancel := context.WithTimeout(context.Background(), l.b.RenewEvery)
		newTag, err := l.b.put(ctx, lockKey, data, false, etag)
		cancel()
		var ce *conflictError
		forced := false
		if errors.As(err, &ce) {
			// The lock changed since this process last wrote it, but that
			// write may be its own: a renewal the store applied whose
			// answer was lost or came after the deadline (a busy machine)
			// changed the ETag this process holds. The lock is still this
			// apply's while it carries its ID.
			ctx, cancel := context.WithTimeout(context.Background(), l.b.RenewEvery)
			holder, curTag, rerr := l.b.ReadLock(ctx)
			cancel()
			switch {
			case rerr != nil:
				// Unknown: retried at the next tick.
			case holder != nil && holder.ID == info.ID:
				l.mu.Lock()
				l.etag = curTag
				l.mu.Unlock()
			default:
				forced = true
			}
		}
		l.mu.Lock()
		switch {
		case err == nil:
			l.info, l.etag = info, newTag
		case forced:
			l.err = fmt.Errorf("the lock of %s is no longer this apply's (lock ID %s): it was forced open, and another apply may hold the state now", l.b, l.id)
		}
		// Other errors (the store unreachable for a moment) are retried at
		// the next tick; a lock not renewed for long is reported as stale.
		l.mu.Unlock()
		if forced {
			return
		}
	}
}

// Release stops renewing and removes the lock object if it still carries
// this hold's ID (also after the renewal judged the lock lost).
func (l *Lock) Release() error {
	select {
	case <-l.stop:
		return nil
	default:
	}
	close(l.stop)
	<-l.done
	// Even when the renewal concluded the lock was lost (a conflict, then a
	// read that found no lock or another holder: on a busy machine that
	// read can be answered out of order with this process's own late
	// writes), the object is removed if it still carries this hold's ID:
	// an apply that exits must never leave its own lock behind.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, etag, err := l.b.ReadLock(ctx)
	if err != nil {
		return fmt.Errorf("release the lock: %w", err)
	}
	if info == nil || info.ID != l.id {
		return nil
	}
	return l.b.delete(ctx, lockKey, etag)
}

func newID() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

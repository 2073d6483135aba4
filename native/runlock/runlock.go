// Package runlock is a writer's hold on one tracking run on this host. Two
// writers of one run would interleave its points, so `kv0 track` and the
// Python package take a run's lock before they start or resume it.
//
// The lock is an advisory lock (wal.LockFile) on
// <WAL root>/run-locks/<xxh3 of the repository's WAL key and the run id>.lock,
// which the kernel drops when the process dies. The file records the
// holder: its process, the id under which its repository handle claims
// runs (tracking.Repo.HolderID, recorded before the claim is made) and its
// last heartbeat (recorded before the heartbeat is logged). Across hosts
// the run's claims in the repository decide who writes it
// (tracking.ResumeRun); what the file records tells them that a holder of
// this host died, so that a later resume here takes its run over at once
// instead of waiting until the holder's last sign of life is old (see
// Previous.ResumeOptions).
package runlock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/wal"
)

// ErrHeld means another writer holds the run: a live process of this host
// (Acquire), or a writer elsewhere that holds the run's claim
// (tracking.ResumeRun). It is tracking.ErrHeld, so either name matches
// every such error; the errors say which (see Heldf).
var ErrHeld = tracking.ErrHeld

// Heldf returns an error with the formatted message that matches ErrHeld.
func Heldf(format string, args ...any) error { return &heldError{fmt.Sprintf(format, args...)} }

type heldError struct{ msg string }

func (e *heldError) Error() string        { return e.msg }
func (e *heldError) Is(target error) bool { return target == ErrHeld }

// Lock is a held run lock.
type Lock struct {
	mu   sync.Mutex
	f    *os.File
	path string
	rec  record
}

type record struct {
	PID       int       `json:"pid"`
	Repo      string    `json:"repo"`
	Run       string    `json:"run"`
	Holder    string    `json:"holder,omitempty"`
	Heartbeat time.Time `json:"heartbeat,omitzero"`
}

// Previous is what the last holder of a run on this host recorded: it has
// died or let the run go, since the lock was free.
type Previous struct {
	// Holder is the id its repository handle claimed the run under
	// (empty: none recorded).
	Holder string
	// Heartbeat is its last heartbeat (zero: none).
	Heartbeat time.Time
}

// ResumeOptions are the options of tracking.Repo.ResumeRun that resume a
// run only when no live writer holds it, counting this host's previous
// holder as dead.
func (p Previous) ResumeOptions() tracking.ResumeOptions {
	return tracking.ResumeOptions{OnlyAbandoned: true, DeadHolder: p.Holder, DeadHeartbeat: p.Heartbeat}
}

// Acquire takes the lock of run id of the repository whose WAL key is key
// (location.RepoWALKey), under the WAL root walDir names ("" for the
// default, as wal.Root), and returns what an earlier holder on this host
// recorded. A run held by a live process of this host fails with ErrHeld.
func Acquire(key, id, walDir string) (*Lock, Previous, error) {
	root, err := wal.Root(wal.Options{Dir: walDir})
	if err != nil {
		return nil, Previous{}, err
	}
	dir := filepath.Join(root, "run-locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, Previous{}, err
	}
	path := filepath.Join(dir, fmt.Sprintf("%016x.lock", xxh3.HashString(key+"\x00"+id)))
	f, err := lockFile(path)
	if errors.Is(err, ErrHeld) {
		var held record
		if b, rerr := os.ReadFile(path); rerr == nil {
			_ = json.Unmarshal(b, &held)
		}
		return nil, Previous{}, Heldf("run %s is written by another process of this host (pid %d)", id, held.PID)
	}
	if err != nil {
		return nil, Previous{}, fmt.Errorf("run lock %s: %w", path, err)
	}
	var prev record
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		_ = json.Unmarshal(b, &prev)
	}
	// The previous holder's record stays until this holder records its
	// own claim (RecordHolder): a process that dies before claiming
	// leaves it as it was.
	lk := &Lock{f: f, path: path, rec: record{PID: os.Getpid(), Repo: key, Run: id, Holder: prev.Holder, Heartbeat: prev.Heartbeat}}
	if err := lk.write(); err != nil {
		f.Close()
		return nil, Previous{}, err
	}
	return lk, Previous{Holder: prev.Holder, Heartbeat: prev.Heartbeat}, nil
}

// lockFile locks path: ErrHeld when another open file holds it. A holder
// releasing the lock removes the file, which can happen between our open
// and our lock; then the try starts over.
func lockFile(path string) (*os.File, error) {
	for {
		f, err := wal.LockFile(path)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, wal.ErrLocked) {
			return nil, err
		}
		if _, serr := os.Stat(path); !errors.Is(serr, fs.ErrNotExist) {
			return nil, ErrHeld // Acquire says by whom
		}
	}
}

func (lk *Lock) write() error {
	b, _ := json.Marshal(lk.rec)
	if err := lk.f.Truncate(0); err != nil {
		return err
	}
	_, err := lk.f.WriteAt(append(b, '\n'), 0)
	return err
}

// RecordHolder notes the holder id (tracking.Repo.HolderID) under which
// the holder is about to claim the run; call it before StartRun or
// ResumeRun. A released or nil lock does nothing.
func (lk *Lock) RecordHolder(holder string) error {
	if lk == nil {
		return nil
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.f == nil || lk.rec.Holder == holder {
		return nil
	}
	lk.rec.Holder = holder
	return lk.write()
}

// RecordHeartbeat notes a heartbeat about to be logged. A released or nil
// lock does nothing.
func (lk *Lock) RecordHeartbeat(at time.Time) {
	if lk == nil {
		return
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.f != nil && at.After(lk.rec.Heartbeat) {
		lk.rec.Heartbeat = at
		_ = lk.write()
	}
}

// Release gives the run up; clean (the run has ended and its writes are
// committed) also removes the file. A run left running keeps the file, so
// that the heartbeat it records still tells a later resume on this host
// that the newest heartbeat was this host's. A nil or released lock does
// nothing.
func (lk *Lock) Release(clean bool) {
	if lk == nil {
		return
	}
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if lk.f == nil {
		return
	}
	if clean {
		_ = os.Remove(lk.path)
	}
	_ = lk.f.Close()
	lk.f = nil
}

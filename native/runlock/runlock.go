// Package runlock is a writer's hold on one tracking run on this host. Two
// writers of one run would interleave its points, so `kv0 track` and the
// Python package take a run's lock before they start or resume it.
//
// The lock is an advisory lock (wal.LockFile) on
// <WAL root>/run-locks/<xxh3 of the repository's WAL key and the run id>.lock,
// which the kernel drops when the process dies. The file records the
// holder and its last heartbeat (recorded before the heartbeat is logged),
// so a later resume on this host can tell a run whose newest heartbeat came
// from a holder here that died (resumable at once) from one that a writer
// on another host keeps beating (refused while the heartbeat is fresh: see
// HeldElsewhere).
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

	"github.com/kv0/kv0/native/wal"
)

// ErrHeld means another writer holds the run: a live process of this host
// (Acquire) or, by its fresh heartbeat, a writer elsewhere (HeldElsewhere).
// Errors matching it say which (see Heldf).
var ErrHeld = errors.New("run is held by another writer")

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
	Heartbeat time.Time `json:"heartbeat,omitzero"`
}

// Acquire takes the lock of run id of the repository whose WAL key is key
// (location.RepoWALKey), under the WAL root walDir names ("" for the
// default, as wal.Root), and returns the last heartbeat an earlier holder
// on this host recorded (zero: none). A run held by a live process of this
// host fails with ErrHeld.
func Acquire(key, id, walDir string) (*Lock, time.Time, error) {
	root, err := wal.Root(wal.Options{Dir: walDir})
	if err != nil {
		return nil, time.Time{}, err
	}
	dir := filepath.Join(root, "run-locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, time.Time{}, err
	}
	path := filepath.Join(dir, fmt.Sprintf("%016x.lock", xxh3.HashString(key+"\x00"+id)))
	f, err := lockFile(path)
	if errors.Is(err, ErrHeld) {
		var held record
		if b, rerr := os.ReadFile(path); rerr == nil {
			_ = json.Unmarshal(b, &held)
		}
		return nil, time.Time{}, Heldf("run %s is written by another process of this host (pid %d)", id, held.PID)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("run lock %s: %w", path, err)
	}
	var prev record
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		_ = json.Unmarshal(b, &prev)
	}
	lk := &Lock{f: f, path: path, rec: record{PID: os.Getpid(), Repo: key, Run: id, Heartbeat: prev.Heartbeat}}
	if err := lk.write(); err != nil {
		f.Close()
		return nil, time.Time{}, err
	}
	return lk, prev.Heartbeat, nil
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

// HeldElsewhere reports whether a run read as status with its newest
// heartbeat, which Acquire found prev recorded for this host, is held by a
// live writer on another host: it is running and its heartbeat is newer
// than any a holder here recorded. (A run whose heartbeat grew old reads as
// crashed, not running, and is free.)
func HeldElsewhere(status string, heartbeat, prev time.Time) bool {
	return status == "running" && !heartbeat.IsZero() && (prev.IsZero() || heartbeat.After(prev))
}

func (lk *Lock) write() error {
	b, _ := json.Marshal(lk.rec)
	if err := lk.f.Truncate(0); err != nil {
		return err
	}
	_, err := lk.f.WriteAt(append(b, '\n'), 0)
	return err
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

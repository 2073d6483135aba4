package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/kv0/kv0/native/wal"
)

// runLock is kv0 track's hold on one run on this host: an advisory lock on
// <WAL root>/run-locks/<xxh3 of the WAL key and run id>.lock, which the
// kernel drops when the process dies. The file records the holder and its
// last heartbeat (written before the heartbeat is logged), so a later
// resume on this host can tell a run whose newest heartbeat came from a
// holder here that died (resumable at once) from one another host keeps
// beating (refused while the heartbeat is fresh).
type runLock struct {
	mu   sync.Mutex
	f    *os.File
	path string
	rec  runLockRecord
}

type runLockRecord struct {
	PID       int       `json:"pid"`
	Repo      string    `json:"repo"`
	Run       string    `json:"run"`
	Heartbeat time.Time `json:"heartbeat,omitzero"`
}

// errRunLocked means another process of this host holds the run.
var errRunLocked = errors.New("run lock held")

// acquireRunLock takes the lock of run id of the repository whose WAL key
// is key, and returns the last heartbeat an earlier holder on this host
// recorded (zero: none).
func acquireRunLock(key, id string) (*runLock, time.Time, error) {
	root, err := wal.Root(wal.Options{})
	if err != nil {
		return nil, time.Time{}, err
	}
	dir := filepath.Join(root, "run-locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, time.Time{}, err
	}
	path := filepath.Join(dir, fmt.Sprintf("%016x.lock", xxh3.HashString(key+"\x00"+id)))
	f, err := lockRunFile(path)
	if errors.Is(err, errRunLocked) {
		var held runLockRecord
		if b, rerr := os.ReadFile(path); rerr == nil {
			_ = json.Unmarshal(b, &held)
		}
		return nil, time.Time{}, fmt.Errorf("run %s is held by another kv0 track on this host (pid %d)", id, held.PID)
	}
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("run lock %s: %w", path, err)
	}
	var prev runLockRecord
	if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
		_ = json.Unmarshal(b, &prev)
	}
	lk := &runLock{f: f, path: path, rec: runLockRecord{PID: os.Getpid(), Repo: key, Run: id, Heartbeat: prev.Heartbeat}}
	if err := lk.write(); err != nil {
		f.Close()
		return nil, time.Time{}, err
	}
	return lk, prev.Heartbeat, nil
}

func (lk *runLock) write() error {
	b, _ := json.Marshal(lk.rec)
	if err := lk.f.Truncate(0); err != nil {
		return err
	}
	_, err := lk.f.WriteAt(append(b, '\n'), 0)
	return err
}

// recordHeartbeat notes a heartbeat about to be logged.
func (lk *runLock) recordHeartbeat(at time.Time) {
	lk.mu.Lock()
	defer lk.mu.Unlock()
	if at.After(lk.rec.Heartbeat) {
		lk.rec.Heartbeat = at
		_ = lk.write()
	}
}

// release gives the run up; clean (the run's writes are committed) also
// removes the file. A nil lock does nothing.
func (lk *runLock) release(clean bool) {
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

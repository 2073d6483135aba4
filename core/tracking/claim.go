package tracking

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/zeebo/xxh3"

	"github.com/kv0/kv0/core/internal/par"
	"github.com/kv0/kv0/core/store"
)

// Claims: who may write a run.
//
// A writing handle holds each run it writes under a generation number g,
// and the object
//
//	<repository>/_claims/<run id, escaped>/<g, 20 digits>.json
//
// records that generation: {"run", "gen", "kind", "holder", "at"}. A run
// started by StartRun is held at generation 0, which has no object (or,
// when claims of an earlier run with the same id exist, at the next one).
// ResumeRun takes the run over by creating the object of generation g+1
// with store.PutIfAbsent, so of two writers that resume the same run at
// once exactly one gets it; the other fails with ErrHeld. A holder learns
// that it lost the run at its next flush: before committing rows of a run
// it checks that the object of its generation + 1 does not exist (one
// Stat), and when it does, it drops those rows instead and its handle
// refuses further writes to the run (ErrHeld). A flush that carries the
// run's final status (Run.Finish, or Run.Update to a status other than
// running) or Run.Release creates generation g+1 itself, of kind "free",
// before it commits: a status is never committed by a writer that lost
// the run, and the run is free for the next writer at once.
//
// The claims live outside every Lance dataset of the repository, so the
// tables stay plain Lance. See docs/architecture.md.

// ClaimsDir is the folder of a repository that holds the runs' claims.
const ClaimsDir = "_claims"

// Claim kinds.
const (
	claimHold = "hold" // the holder writes the run
	claimFree = "free" // the holder ended or released the run
)

// ErrHeld means another writer holds the run: ResumeRun found a live
// holder (with ResumeOptions.OnlyAbandoned) or lost the race for the
// run's next claim, or a handle's run was taken over by another writer
// since it claimed it. Errors matching it are *HeldError values.
var ErrHeld = errors.New("run is held by another writer")

// HeldError is an ErrHeld: the run and why.
type HeldError struct {
	// RunID is the run concerned.
	RunID string
	// Gen is the generation of the claim that holds it (0: none).
	Gen uint64
	// Reason says what happened.
	Reason string
}

// Error implements error.
func (e *HeldError) Error() string {
	return fmt.Sprintf("run %s is held by another writer: %s", e.RunID, e.Reason)
}

// Is makes a HeldError match ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// claimBody is the content of a claim object.
type claimBody struct {
	Run    string    `json:"run"`
	Gen    uint64    `json:"gen"`
	Kind   string    `json:"kind"`
	Holder string    `json:"holder"`
	At     time.Time `json:"at"`
}

// claimState is a run this handle holds (or held): guarded by r.mu.
type claimState struct {
	gen    uint64
	holder string // the holder id the claims of gen and gen+1 name
	free   bool   // gen is a free claim of this handle: it ended or released the run
	lost   *HeldError
	// walEpoch is the WAL epoch (Repo.walEpoch) in which the claim was
	// last logged; the claim is logged again before the first row of the
	// run in each new epoch, so every log that holds rows of the run also
	// says which generation wrote them.
	walEpoch uint64
}

// maxClaimName is the longest escaped run id used as a folder name; longer
// ones are hashed.
const maxClaimName = 200

// claimDir returns the folder of the claims of run id: the id with every
// byte other than ASCII letters, digits, '-', '_' and a non-leading '.'
// written as "~" and two hex digits ('~' included, so the mapping is
// one-to-one), or "~h" and the xxh3-128 of the id when that is longer than
// maxClaimName.
func (r *Repo) claimDir(id string) string {
	var b strings.Builder
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_', c == '.' && i > 0:
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "~%02x", c)
		}
	}
	name := b.String()
	if len(name) > maxClaimName || name == "" {
		h := xxh3.HashString128(id).Bytes()
		name = "~h" + hex.EncodeToString(h[:])
	}
	return store.Join(r.root, ClaimsDir, name)
}

func (r *Repo) claimKey(id string, gen uint64) string {
	return r.claimDir(id) + "/" + fmt.Sprintf("%020d.json", gen)
}

// newestClaim returns the newest claim of run id (found false: none).
func (r *Repo) newestClaim(ctx context.Context, id string) (claimBody, bool, error) {
	prefix := r.claimDir(id) + "/"
	for attempt := 0; ; attempt++ {
		objs, err := r.st.List(ctx, store.ListOptions{Prefix: prefix})
		if err != nil {
			return claimBody{}, false, fmt.Errorf("tracking: claims of run %q: %w", id, err)
		}
		key, gen := "", uint64(0)
		for _, o := range objs {
			name := strings.TrimSuffix(strings.TrimPrefix(o.Key, prefix), ".json")
			g, err := strconv.ParseUint(name, 10, 64)
			if err != nil || len(name) != 20 || !strings.HasSuffix(o.Key, ".json") {
				continue // not a claim
			}
			if key == "" || g > gen {
				key, gen = o.Key, g
			}
		}
		if key == "" {
			return claimBody{}, false, nil
		}
		b, err := store.ReadAll(ctx, r.st, key)
		if errors.Is(err, store.ErrNotFound) && attempt < 3 {
			continue // removed meanwhile (a purge of the run): list again
		}
		if err != nil {
			return claimBody{}, false, fmt.Errorf("tracking: claim %s: %w", key, err)
		}
		var c claimBody
		if err := json.Unmarshal(b, &c); err != nil || c.Gen != gen || c.Run != id {
			return claimBody{}, false, fmt.Errorf("%w: claim %s does not hold generation %d of run %q", ErrCorrupt, key, gen, id)
		}
		return c, true, nil
	}
}

// putClaim creates the claim gen of run id: ErrHeld when it exists.
func (r *Repo) putClaim(ctx context.Context, id string, gen uint64, kind, holder string, reason string) error {
	b, _ := json.Marshal(claimBody{Run: id, Gen: gen, Kind: kind, Holder: holder, At: r.opts.Now().UTC()})
	err := r.st.PutIfAbsent(ctx, r.claimKey(id, gen), append(b, '\n'))
	if errors.Is(err, store.ErrExists) {
		return &HeldError{RunID: id, Gen: gen, Reason: reason}
	}
	if err != nil {
		return fmt.Errorf("tracking: claim %d of run %q: %w", gen, id, err)
	}
	return nil
}

// checkClaim marks c lost when the claim after it exists.
func (r *Repo) checkClaim(ctx context.Context, id string, c *claimState) error {
	r.mu.Lock()
	gen := c.gen
	r.mu.Unlock()
	_, err := r.st.Stat(ctx, r.claimKey(id, gen+1))
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("tracking: claim %d of run %q: %w", gen+1, id, err)
	}
	r.mu.Lock()
	if c.lost == nil && c.gen == gen {
		c.lost = &HeldError{RunID: id, Gen: gen + 1, Reason: fmt.Sprintf("another writer took it over (claim %d) after this handle claimed it (claim %d)", gen+1, gen)}
		if run := r.runs[id]; run != nil && run.claim == c {
			run.active = false
		}
	}
	r.mu.Unlock()
	return nil
}

// ResumeOptions are the optional parts of ResumeRun.
type ResumeOptions struct {
	// OnlyAbandoned refuses, with ErrHeld, a run that another writer may
	// still be writing: one whose newest claim is held (not freed) and
	// whose holder showed a sign of life (the claim's time or the run's
	// heartbeat, whichever is newer) less than RepoOptions.CrashedAfter
	// ago, or, for a run without claims, one whose stored status is
	// running with a heartbeat that young. Without it ResumeRun takes
	// any run over (the previous holder learns it at its next flush).
	OnlyAbandoned bool
	// DeadHolder, with OnlyAbandoned, is the holder id (Repo.HolderID) of
	// a writer known to have died (native/runlock records it beside the
	// lock of a run on one host): a run whose newest claim it holds is
	// free whatever its age.
	DeadHolder string
	// DeadHeartbeat, with OnlyAbandoned, is the last heartbeat that dead
	// writer recorded: a run without claims whose heartbeat is not newer
	// is free.
	DeadHeartbeat time.Time
}

// HolderID returns the id under which this handle claims runs. A process
// that records it (before resuming) can later tell, through
// ResumeOptions.DeadHolder, that the holder of a run died.
func (r *Repo) HolderID() string { return r.holder }

// checkAbandoned returns ErrHeld when o refuses to take over the run in,
// read after its newest claim c (found: there is one).
func (r *Repo) checkAbandoned(in RunInfo, c claimBody, found bool, o ResumeOptions) error {
	now := r.opts.Now()
	hint := func() string {
		if r.opts.CrashedAfter < 0 {
			return "; runs never count as crashed here (CrashedAfter is negative), so it stays held"
		}
		return fmt.Sprintf("; it can be resumed once that is older than %v", r.opts.CrashedAfter)
	}
	if !found {
		if in.Status == StatusRunning && !in.HeartbeatAt.IsZero() && (o.DeadHeartbeat.IsZero() || in.HeartbeatAt.After(o.DeadHeartbeat)) {
			return &HeldError{RunID: in.ID, Reason: fmt.Sprintf("a live writer on another host or handle (last heartbeat %v ago)%s",
				now.Sub(in.HeartbeatAt).Round(time.Millisecond), hint())}
		}
		return nil
	}
	if c.Kind == claimFree || o.DeadHolder != "" && c.Holder == o.DeadHolder {
		return nil
	}
	alive := c.At
	if in.HeartbeatAt.After(alive) {
		alive = in.HeartbeatAt
	}
	if r.opts.CrashedAfter < 0 || now.Sub(alive) <= r.opts.CrashedAfter {
		return &HeldError{RunID: in.ID, Gen: c.Gen, Reason: fmt.Sprintf("a live writer on another host or handle (claim %d, last sign of life %v ago)%s",
			c.Gen, now.Sub(alive).Round(time.Millisecond), hint())}
	}
	return nil
}

// fence checks, before a flush commits b, that this handle still holds
// every run it has rows of in b: for a run whose final status b carries
// (or that was released) it creates the next claim, of kind free; for
// the others it checks that the next claim does not exist. The rows of a
// run found lost are dropped from b, and its handle refuses further
// writes. It returns the HeldError of the runs found lost now (nil:
// none), and the store's error when a check failed (the flush must not
// commit then). Caller holds r.flushMu.
func (r *Repo) fence(ctx context.Context, b *buffer) (lost error, err error) {
	type check struct {
		id    string
		c     *claimState
		gen   uint64
		free  bool
		lost  *HeldError // set by the check
		freed bool       // the free claim gen+1 was created
	}
	r.mu.Lock()
	if len(r.claims) == 0 {
		r.mu.Unlock()
		return nil, nil
	}
	var checks, pending []*check
	seen := map[string]bool{}
	add := func(id string) {
		if seen[id] {
			return
		}
		seen[id] = true
		c := r.claims[id]
		if c == nil {
			return
		}
		ck := &check{id: id, c: c, gen: c.gen, free: b.ending[id], lost: c.lost}
		checks = append(checks, ck)
		if ck.lost == nil {
			pending = append(pending, ck) // runs known lost need no request
		}
	}
	for _, rw := range b.runs {
		if rw.fields != FieldDeleted {
			add(rw.info.ID)
		}
	}
	for _, p := range b.params {
		add(p.runID)
	}
	for _, s := range b.series {
		add(s.runID)
	}
	for _, e := range b.deltas {
		add(e.runID)
	}
	for id := range b.ending {
		add(id)
	}
	r.mu.Unlock()
	if len(checks) == 0 {
		return nil, nil
	}
	err = par.Do(ctx, len(pending), 8, func(ctx context.Context, i int) error {
		ck := pending[i]
		next := ck.gen + 1
		reason := fmt.Sprintf("another writer took it over (claim %d) after this handle claimed it (claim %d); "+
			"what this handle had not committed of it was dropped", next, ck.gen)
		if ck.free {
			err := r.putClaim(ctx, ck.id, next, claimFree, ck.c.holder, reason)
			var he *HeldError
			switch {
			case errors.As(err, &he):
				ck.lost = he
			case err == nil:
				ck.freed = true
			default:
				return err
			}
			return nil
		}
		_, err := r.st.Stat(ctx, r.claimKey(ck.id, next))
		switch {
		case err == nil:
			ck.lost = &HeldError{RunID: ck.id, Gen: next, Reason: reason}
		case !errors.Is(err, store.ErrNotFound):
			return fmt.Errorf("tracking: claim %d of run %q: %w", next, ck.id, err)
		}
		return nil
	})
	// Results count even when another check failed: a free claim
	// created is the run's generation now, a lost run stays lost.
	r.mu.Lock()
	defer r.mu.Unlock()
	gone := map[string]bool{}
	var errs []error
	for _, ck := range checks {
		switch {
		case ck.lost != nil:
			if ck.c.lost == nil {
				ck.c.lost = ck.lost
				errs = append(errs, ck.lost)
			}
			gone[ck.id] = true
			if run := r.runs[ck.id]; run != nil && run.claim == ck.c {
				run.active = false
			}
		case ck.freed:
			if ck.c.gen == ck.gen {
				ck.c.gen, ck.c.free, ck.c.walEpoch = ck.gen+1, true, 0
			}
			delete(b.ending, ck.id)
		}
	}
	if len(gone) > 0 {
		b.dropRuns(gone, false)
		for id := range gone {
			delete(b.ending, id)
		}
	}
	return errors.Join(errs...), err
}

// walClaim logs, before the first row of run id in the current WAL epoch,
// the claim under which this handle writes it. Caller holds r.mu.
func (r *Repo) walClaim(id string, c *claimState) error {
	if r.opts.WAL == nil || c == nil || c.walEpoch == r.walEpoch {
		return nil
	}
	b, _ := json.Marshal(walClaimJSON{Run: id, Gen: c.gen, Holder: c.holder})
	if err := r.walAppend(walClaimRec, b); err != nil {
		return err
	}
	c.walEpoch = r.walEpoch
	return nil
}

// walClaimOf is walClaim for a row that names its run only by id.
func (r *Repo) walClaimOf(id string) error {
	if r.opts.WAL == nil {
		return nil
	}
	return r.walClaim(id, r.claims[id])
}

// walClaimJSON is the body of a WAL claim record.
type walClaimJSON struct {
	Run    string `json:"run"`
	Gen    uint64 `json:"gen"`
	Holder string `json:"holder"`
}

// replayKeeps reports whether rows of a run that an abandoned writer
// logged under claim m may still be committed, the run's newest claim
// being n (found: there is one): when nobody took the run over since m,
// or only m's holder freed it (ending it; its log then holds the final
// status).
func replayKeeps(m walClaimJSON, n claimBody, found bool) bool {
	if !found {
		return m.Gen == 0
	}
	return n.Gen == m.Gen || n.Gen == m.Gen+1 && n.Kind == claimFree && n.Holder == m.Holder
}

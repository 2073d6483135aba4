package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/runlock"
)

// stdin is where kv0 track reads; tests replace it.
var stdin io.Reader = os.Stdin

// maxTrackLine is the longest input line kv0 track accepts.
const maxTrackLine = 16 << 20

// trackDetails is the help text of kv0 track: the input format and what
// survives a crash (docs/tracking.md says the same at more length).
const trackDetails = `kv0 track reads JSON Lines on stdin and writes them to one run of the tracking
repository REPO (a local folder, created when missing unless --create=false, or
s3://bucket/prefix). Each line is one JSON object of one of three kinds:

  {"name": "loss", "value": 0.25, "step": 10, "epoch": 1, "context": {"subset": "train"}, "timestamp": 1767323045.5}
      A point of the series (name, context). Required: name (a string) and value (a
      number, or NaN, Infinity, -Infinity: bare as Python's json.dumps writes them, or
      as the strings "NaN", "Infinity", "-Infinity"). Optional: step (an integer;
      default one past the series' last step), epoch (an integer), context (an
      object naming the series' variant) and timestamp (RFC 3339 such as
      "2026-01-02T03:04:05.5Z", or seconds since 1970-01-01 UTC as a number;
      default now), for back-filling.
  {"params": {"optimizer": {"lr": 0.001}, "batch_size": 32}}
      Parameters merged into the run's; nested objects become dotted keys
      (optimizer.lr).
  {"status": "failed"}
      The status the run ends with at end of input: finished, failed or aborted.

Blank lines are ignored. Malformed JSON, a field not listed above, a point
without "name" or "value", an unknown status and a line longer than 16 MiB are
errors, reported on stderr as "kv0 track: line N: ..."; the line is skipped
(with --strict kv0 track stops there, marks the run failed and exits with 1).

At end of input the run ends (status finished, or the last "status" line's): a
new run always, a resumed run when its input held a line or with --finish, so
that "kv0 track REPO --resume RUN < /dev/null" only replays a crashed writer's
log. SIGINT and SIGTERM commit what was read, mark the run aborted and exit with
status 1.

Points are committed to REPO every --flush-interval and every --flush-rows
points (and at the end); until then they sit in this host's write-ahead log
(unless --no-wal), which the next kv0 command writing to REPO from this host
replays after a crash, from any working directory. With --ack, each commit
prints one line on stdout: the number of the last input line it covers, in
decimal (lines count from 1, blank and skipped ones included). Every line up to
it is stored in REPO and survives a crash of this host.

A writer records a heartbeat in its run at flushes, at most every 30 s. kv0 runs
and kv0 run report a running run whose heartbeat is older than 5 minutes (or
$KV0_CRASHED_AFTER, a duration; 0: never; heartbeats then come every fifth of
it) as crashed. --resume refuses a run another live writer holds: one running
on this host (a lock beside the write-ahead log), or one whose holder showed a
sign of life (its claim of the run, a heartbeat) less than that long ago and is
not a writer of this host that has died. Of two writers resuming a run at once
only one gets it (a create-only claim object in REPO/_claims); a writer whose
run was taken over learns it at its next commit, drops what it had not
committed of the run and exits with status 1.
`

// repoFormatUsage is the help of track and demo --format.
const repoFormatUsage = "data file format `F` of a new repository: 2.1 (read by lance 8 and older) or 2.2 (the default); a repository keeps its format"

// trackFlags are kv0 track's options.
type trackFlags struct {
	run, experiment, resume string
	finish, noWAL, ack      bool
	strict, create          bool
	format                  string
	flushInterval           time.Duration
	flushRows               int
}

func cmdTrack(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("track")
	var tf trackFlags
	fs.StringVar(&tf.run, "run", "", "start a new run named `NAME`")
	fs.StringVar(&tf.experiment, "experiment", "", "experiment `E` of the new run")
	fs.StringVar(&tf.resume, "resume", "", "append to the existing run `RUN` (an id or a unique name) instead of starting one")
	fs.BoolVar(&tf.finish, "finish", false, "with --resume: finish the run at end of input even when the input is empty")
	tf.flushInterval, tf.flushRows = tracking.DefaultFlushInterval, tracking.DefaultFlushRows
	durationVar(fs, &tf.flushInterval, "flush-interval", time.Millisecond, 0, "commit buffered points at least every `D`")
	intVar(fs, &tf.flushRows, "flush-rows", 1, math.MaxInt32, "commit when `N` points are buffered")
	fs.BoolVar(&tf.ack, "ack", false, "after each commit print the number of the last input line it covers on stdout")
	fs.BoolVar(&tf.strict, "strict", false, "stop at the first bad line (default: report it and skip it)")
	fs.BoolVar(&tf.create, "create", true, "create the repository when there is none")
	fs.BoolVar(&tf.noWAL, "no-wal", false, "do not log writes in the local write-ahead log")
	formatVar(fs, &tf.format, repoFormatUsage)
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	switch {
	case tf.run == "" && tf.resume == "":
		return usagef("--run NAME or --resume RUN is required")
	case tf.run != "" && tf.resume != "":
		return usagef("--run and --resume exclude each other")
	case tf.experiment != "" && tf.resume != "":
		return usagef("--experiment names the experiment of a new run; it does not go with --resume")
	case tf.finish && tf.resume == "":
		return usagef("--finish goes with --resume (a new run is always finished at end of input)")
	case tf.flushInterval <= 0:
		return usagef("--flush-interval: want a positive duration, got %v", tf.flushInterval)
	case tf.flushRows <= 0:
		return usagef("--flush-rows: want a positive number, got %d", tf.flushRows)
	}
	// SIGTERM (what Slurm, Kubernetes and timeout send) ends the input as
	// SIGINT does; main already turns SIGINT into a cancelled ctx.
	sigCtx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	t := &tracker{flags: tf, stdout: stdout, stderr: stderr}
	return t.track(sigCtx, loc, stopSignals)
}

// tracker is one kv0 track invocation.
type tracker struct {
	flags          trackFlags
	stdout, stderr io.Writer

	repo *tracking.Repo
	run  *tracking.Run
	lock *runlock.Lock

	handed  atomic.Int64 // the last input line handed to the repository
	pending atomic.Int64 // points since the last commit the flusher started
	ackMu   sync.Mutex
	acked   int64
}

func (t *tracker) track(ctx context.Context, loc string, stopSignals func()) error {
	var lockPtr atomic.Pointer[runlock.Lock]
	opts := tracking.RepoOptions{
		DataFormat:    t.flags.format,
		FlushRows:     t.flags.flushRows,
		FlushInterval: -1, // the flusher below commits on time, so that it can acknowledge
		OnHeartbeat: func(at time.Time) {
			if lk := lockPtr.Load(); lk != nil {
				lk.RecordHeartbeat(at)
			}
		},
	}
	r, err := openRepoWith(ctx, loc, repoOpen{writable: true, create: t.flags.create, wal: !t.flags.noWAL, opts: opts})
	if err != nil {
		return err
	}
	t.repo = r
	key, err := location.RepoWALKey(loc)
	if err != nil {
		r.Close()
		return err
	}
	if err := t.startOrResume(ctx, key, &lockPtr); err != nil {
		r.Close()
		if t.lock != nil {
			t.lock.Release(false)
		}
		return err
	}
	fmt.Fprintln(t.stderr, "run", t.run.ID())
	// The run's creation (or nothing, on resume) is visible at once.
	if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
		return t.fail(err)
	}
	return t.loop(ctx, stopSignals)
}

// startOrResume starts the new run or resumes the one asked for, holding
// its run lock; a resume of a run another live writer holds is refused
// (the run's claim decides, see tracking.ResumeRun; the lock tells it
// whether the last holder of this host died).
func (t *tracker) startOrResume(ctx context.Context, key string, lockPtr *atomic.Pointer[runlock.Lock]) error {
	r := t.repo
	if t.flags.resume == "" {
		id := tracking.NewRunID()
		lk, _, err := runlock.Acquire(key, id, "")
		if err != nil {
			return err
		}
		t.lock = lk
		lockPtr.Store(lk)
		if err := lk.RecordHolder(r.HolderID()); err != nil {
			return err
		}
		t.run, err = r.StartRun(ctx, tracking.RunSpec{ID: id, Name: t.flags.run, Experiment: t.flags.experiment})
		return err
	}
	in, err := resolveRun(ctx, r, t.flags.resume)
	if err != nil {
		return err
	}
	lk, prev, err := runlock.Acquire(key, in.ID, "")
	if err != nil {
		return err
	}
	t.lock = lk
	if err := lk.RecordHolder(r.HolderID()); err != nil {
		return err
	}
	if resumeGate != nil {
		resumeGate()
	}
	lockPtr.Store(lk)
	t.run, err = r.ResumeRun(ctx, in.ID, prev.ResumeOptions())
	return err
}

// resumeGate, when set (by the process tests only), runs just before
// kv0 track claims the run it resumes, so that racing processes can be
// released at once.
var resumeGate func()

// inputLine is one line of stdin, or the error that ends or skips one.
type inputLine struct {
	no   int64
	text []byte
	err  error // errLineTooLong: the line was skipped; others end the input
}

var errLineTooLong = fmt.Errorf("is longer than %d MiB", maxTrackLine>>20)

// readLines sends stdin's lines on out, in batches (as many as were read
// without waiting, up to 256), until EOF, an error or ctx ends.
func readLines(ctx context.Context, in io.Reader, out chan<- []inputLine) {
	defer close(out)
	br := bufio.NewReaderSize(in, 1<<20)
	var (
		batch      []inputLine
		data       []byte // the batch's line texts, back to back
		starts     []int  // where each line's text starts in data (-1: none)
		no         int64
		lastLength int
	)
	send := func() bool {
		if len(batch) == 0 {
			return true
		}
		for i, st := range starts {
			if st >= 0 {
				end := len(data)
				for _, next := range starts[i+1:] {
					if next >= 0 {
						end = next
						break
					}
				}
				batch[i].text = data[st:end:end]
			}
		}
		select {
		case out <- batch:
		case <-ctx.Done():
			return false
		}
		batch, starts = make([]inputLine, 0, 16), starts[:0]
		data = make([]byte, 0, max(4096, lastLength))
		return true
	}
	add := func(l inputLine, text []byte) {
		batch = append(batch, l)
		if text == nil {
			starts = append(starts, -1)
			return
		}
		starts = append(starts, len(data))
		data = append(data, text...)
	}
	for {
		line, err := br.ReadSlice('\n')
		no++
		var long []byte
		tooLong := false
		for errors.Is(err, bufio.ErrBufferFull) {
			if !tooLong {
				long = append(long, line...)
				if len(long) > maxTrackLine {
					tooLong, long = true, nil
				}
			}
			line, err = br.ReadSlice('\n')
		}
		if long != nil {
			line = append(long, line...)
			if len(line) > maxTrackLine+1 || len(line) > maxTrackLine && line[len(line)-1] != '\n' {
				tooLong = true
			}
		}
		switch {
		case err != nil && !errors.Is(err, io.EOF):
			add(inputLine{no: no, err: err}, nil)
		case tooLong:
			add(inputLine{no: no, err: errLineTooLong}, nil)
		case len(line) > 0:
			add(inputLine{no: no}, line)
		}
		if err != nil || len(batch) >= 256 || br.Buffered() == 0 {
			lastLength = len(data)
			if !send() || err != nil {
				return
			}
		}
	}
}

// loop reads the input, writes it and ends the run.
func (t *tracker) loop(ctx context.Context, stopSignals func()) error {
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	lines := make(chan []inputLine, 16)
	go readLines(readCtx, stdin, lines)
	flushNow := make(chan struct{}, 1)
	flusherDone := make(chan error, 1)
	stopFlusher := make(chan struct{})
	go t.flusher(flushNow, stopFlusher, flusherDone)
	status := ""
	var points, skipped, accepted int64
	var endErr error
	flusherEnded := false
	// handle writes one line; false ends the input (endErr says why, if
	// for an error).
	handle := func(l inputLine) bool {
		if l.err != nil && !errors.Is(l.err, errLineTooLong) {
			endErr = fmt.Errorf("stdin: %w", l.err)
			return false
		}
		err := l.err
		var tl trackLine
		if err == nil {
			var blank bool
			if tl, blank, err = parseTrackLine(l.text); blank {
				t.handed.Store(l.no)
				return true
			}
		}
		if err == nil {
			if err = t.apply(tl, &status); err != nil && !errors.Is(err, tracking.ErrInvalid) {
				endErr = fmt.Errorf("line %d: %w", l.no, err) // not the line's fault: stop
				return false
			}
		}
		if err != nil {
			sep := ": "
			if errors.Is(err, errLineTooLong) {
				sep = " " // "line N is longer than 16 MiB"
			}
			if t.flags.strict {
				endErr = fmt.Errorf("line %d%s%w", l.no, sep, err)
				status = tracking.StatusFailed
				return false
			}
			skipped++
			fmt.Fprintf(t.stderr, "kv0 track: line %d%s%v (skipped)\n", l.no, sep, err)
			t.handed.Store(l.no)
			return true
		}
		accepted++
		t.handed.Store(l.no)
		if tl.isPoint() {
			points++
			if t.pending.Add(1) >= int64(t.flags.flushRows) {
				select {
				case flushNow <- struct{}{}:
				default:
				}
			}
		}
		return true
	}
	handleAll := func(b []inputLine) bool {
		for _, l := range b {
			if !handle(l) {
				return false
			}
		}
		return true
	}
read:
	for {
		select {
		case <-ctx.Done():
			// Write the lines already read before stopping.
			for {
				select {
				case b, ok := <-lines:
					if ok && handleAll(b) {
						continue
					}
				default:
				}
				break read
			}
		case err := <-flusherDone:
			endErr, flusherEnded = err, true
			break read
		case b, ok := <-lines:
			if !ok || !handleAll(b) {
				break read
			}
		}
	}
	interrupted := ctx.Err() != nil
	if interrupted {
		stopSignals() // a second signal kills at once
	}
	stopReading()
	close(stopFlusher)
	if !flusherEnded {
		if err := <-flusherDone; err != nil && endErr == nil {
			endErr = err
		}
	}
	switch {
	case interrupted:
		status = tracking.StatusAborted
	case endErr != nil && status == "":
		status = tracking.StatusFailed
	}
	// A run taken over by another writer is theirs: nothing more of it
	// is written, its status included.
	lost := errors.Is(endErr, tracking.ErrHeld)
	finish := !lost && (t.flags.resume == "" || accepted > 0 || t.flags.finish || interrupted || endErr != nil)
	var err error
	switch {
	case lost:
	case finish:
		err = t.run.Finish(context.Background(), status)
	default:
		// The run stays as it was, and free: another writer may resume
		// it at once.
		err = t.run.Release(context.Background())
	}
	if err == nil && !lost {
		t.ackHanded()
	}
	cerr := t.repo.Close()
	t.lock.Release(finish && err == nil && cerr == nil) // a run left running keeps its heartbeat record
	if err == nil {
		err = cerr
	}
	msg := fmt.Sprintf("tracked %d points", points)
	if skipped > 0 {
		msg += ", skipped " + plural(int(skipped), "bad line")
	}
	fmt.Fprintln(t.stderr, msg)
	switch {
	case lost:
		return errors.Join(endErr, err)
	case interrupted:
		return errors.Join(fmt.Errorf("interrupted: run %s marked aborted", t.run.ID()), err)
	case endErr != nil:
		return errors.Join(endErr, err)
	}
	return err
}

// flusher commits every --flush-interval and when flushNow says that
// --flush-rows points are buffered, acknowledging each commit; it ends
// when stop is closed (the final commit is the caller's).
func (t *tracker) flusher(flushNow <-chan struct{}, stop <-chan struct{}, done chan<- error) {
	tick := time.NewTicker(t.flags.flushInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			done <- nil
			return
		case <-tick.C:
		case <-flushNow:
		}
		t.pending.Store(0)
		line := t.handed.Load()
		if err := t.repo.Flush(context.Background()); err != nil {
			done <- err
			return
		}
		t.ack(line)
	}
}

func (t *tracker) ackHanded() { t.ack(t.handed.Load()) }

// ack prints line (with --ack) when it is newer than the last ack.
func (t *tracker) ack(line int64) {
	if !t.flags.ack {
		return
	}
	t.ackMu.Lock()
	defer t.ackMu.Unlock()
	if line > t.acked {
		t.acked = line
		fmt.Fprintln(t.stdout, line)
	}
}

// fail ends the run as failed after an error.
func (t *tracker) fail(err error) error {
	_ = t.run.Finish(context.Background(), tracking.StatusFailed)
	_ = t.repo.Close()
	t.lock.Release(false)
	return err
}

// apply writes one parsed line.
func (t *tracker) apply(tl trackLine, status *string) error {
	switch {
	case tl.Params != nil:
		return t.run.SetParams(tl.Params)
	case tl.Status != nil:
		*status = *tl.Status
		return nil
	}
	o := tracking.TrackOptions{Step: tl.Step, Epoch: tl.Epoch, Context: tl.Context}
	if tl.Timestamp != nil {
		o.Time = time.Time(*tl.Timestamp)
	}
	return t.run.Track(float64(*tl.Value), *tl.Name, o)
}

// trackLine is one line of kv0 track's input: a point, a parameter set or
// the final status (see trackHelp and docs/tracking.md).
type trackLine struct {
	Name      *string         `json:"name"`
	Value     *trackValue     `json:"value"`
	Step      *int64          `json:"step"`
	Epoch     *int64          `json:"epoch"`
	Context   map[string]any  `json:"context"`
	Timestamp *trackTime      `json:"timestamp"`
	Params    tracking.Params `json:"params"`
	Status    *string         `json:"status"`
}

func (tl *trackLine) isPoint() bool { return tl.Params == nil && tl.Status == nil }

// parseTrackLine decodes and checks one input line; blank reports a line
// of white space only.
func parseTrackLine(line []byte) (tl trackLine, blank bool, err error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return tl, true, nil
	}
	line = quoteNonFinite(line)
	if err := json.Unmarshal(line, &tl); err != nil {
		return tl, false, jsonLineError(err)
	}
	if k, ok := unknownField(line); ok {
		return tl, false, fmt.Errorf("unknown field %q", k)
	}
	point := tl.Name != nil || tl.Value != nil || tl.Step != nil || tl.Epoch != nil || tl.Context != nil || tl.Timestamp != nil
	kinds := 0
	for _, b := range []bool{point, tl.Params != nil, tl.Status != nil} {
		if b {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		return tl, false, errors.New(`want a point {"name", "value", ...}, {"params": {...}} or {"status": "..."}`)
	case kinds > 1:
		return tl, false, errors.New(`a line holds one of a point ("name", "value", ...), "params" or "status", not several`)
	case tl.Status != nil:
		switch *tl.Status {
		case tracking.StatusFinished, tracking.StatusFailed, tracking.StatusAborted:
		default:
			return tl, false, fmt.Errorf(`unknown "status" %q (want finished, failed or aborted)`, *tl.Status)
		}
	case point && tl.Name == nil:
		return tl, false, errors.New(`a point without "name"`)
	case point && tl.Value == nil:
		return tl, false, fmt.Errorf(`point %q without "value"`, *tl.Name)
	}
	return tl, false, nil
}

// jsonLineError words a decoding error by the field it concerns.
func jsonLineError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Errorf("want a JSON object, got a JSON %s", te.Value)
		}
		return fmt.Errorf("field %q: want %s, got a JSON %s", te.Field, typeName(te.Type.String()), te.Value)
	}
	var fe *fieldError
	if errors.As(err, &fe) {
		return err
	}
	return fmt.Errorf("malformed JSON: %s", strings.TrimPrefix(err.Error(), "json: "))
}

// trackFields are the fields of trackLine, as encoding/json matches them
// (case-insensitively).
var trackFields = [][]byte{[]byte("name"), []byte("value"), []byte("step"), []byte("epoch"), []byte("context"),
	[]byte("timestamp"), []byte("params"), []byte("status")}

// unknownField returns the first top-level key of the valid JSON object
// line that is not one of trackFields, and whether there is one. It is the
// check of json.Decoder.DisallowUnknownFields at a fraction of its cost.
func unknownField(line []byte) (string, bool) {
	depth, inString, escaped, expectKey, keyStart, keyEscaped := 0, false, false, false, -1, false
	for i, c := range line {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped, keyEscaped = true, keyEscaped || keyStart >= 0
			case c == '"':
				inString = false
				if keyStart >= 0 {
					key := line[keyStart:i]
					if keyEscaped {
						var k string
						_ = json.Unmarshal(line[keyStart-1:i+1], &k)
						key = []byte(k)
					}
					known := false
					for _, f := range trackFields {
						if bytes.EqualFold(key, f) {
							known = true
							break
						}
					}
					if !known {
						return string(key), true
					}
					keyStart, keyEscaped = -1, false
				}
			}
			continue
		}
		switch c {
		case '"':
			inString = true
			if depth == 1 && expectKey {
				keyStart, expectKey = i+1, false
			}
		case '{', '[':
			depth++
			expectKey = depth == 1 && c == '{'
		case '}', ']':
			depth--
		case ',':
			expectKey = depth == 1
		}
	}
	return "", false
}

func typeName(goType string) string {
	switch goType {
	case "int64":
		return "an integer"
	case "string":
		return "a string"
	case "map[string]interface {}":
		return "an object"
	}
	return goType
}

// fieldError is a bad value of a named field.
type fieldError struct {
	field string
	msg   string
}

func (e *fieldError) Error() string { return fmt.Sprintf("field %q: %s", e.field, e.msg) }

// trackValue is a point's value: a JSON number or "NaN", "Infinity",
// "-Infinity" (quoteNonFinite turns the bare forms into these strings).
type trackValue float64

// UnmarshalJSON implements json.Unmarshaler.
func (v *trackValue) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return &fieldError{"value", err.Error()}
		}
		switch s {
		case "NaN":
			*v = trackValue(math.NaN())
		case "Infinity":
			*v = trackValue(math.Inf(1))
		case "-Infinity":
			*v = trackValue(math.Inf(-1))
		default:
			return &fieldError{"value", fmt.Sprintf("want a number, NaN, Infinity or -Infinity, got the string %q", s)}
		}
		return nil
	}
	if string(b) == "null" {
		return &fieldError{"value", "want a number, got null"}
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return &fieldError{"value", fmt.Sprintf("want a number, got %s", b)}
	}
	*v = trackValue(f)
	return nil
}

// trackTime is a point's timestamp: an RFC 3339 string or a number of
// seconds since the Unix epoch.
type trackTime time.Time

// UnmarshalJSON implements json.Unmarshaler.
func (ts *trackTime) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return &fieldError{"timestamp", err.Error()}
		}
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return &fieldError{"timestamp", fmt.Sprintf("want RFC 3339 (2026-01-02T03:04:05Z) or seconds since the epoch, got %q", s)}
		}
		*ts = trackTime(t)
		return nil
	}
	f, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e11 {
		return &fieldError{"timestamp", fmt.Sprintf("want RFC 3339 or seconds since the epoch, got %s", b)}
	}
	sec, frac := math.Modf(f)
	*ts = trackTime(time.Unix(int64(sec), int64(math.Round(frac*1e6))*1e3).UTC())
	return nil
}

// quoteNonFinite rewrites the bare tokens NaN, Infinity and -Infinity
// outside strings (Python's json.dumps writes them) as the JSON strings
// "NaN", "Infinity" and "-Infinity".
func quoteNonFinite(line []byte) []byte {
	if !bytes.Contains(line, []byte("NaN")) && !bytes.Contains(line, []byte("Infinity")) {
		return line
	}
	out := make([]byte, 0, len(line)+8)
	inString, escaped := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if inString {
			out = append(out, c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out = append(out, c)
			continue
		}
		matched := false
		for _, tok := range []string{"NaN", "Infinity", "-Infinity"} {
			if bytes.HasPrefix(line[i:], []byte(tok)) && (i+len(tok) == len(line) || !isWordByte(line[i+len(tok)])) &&
				(i == 0 || !isWordByte(line[i-1])) {
				out = append(out, '"')
				out = append(out, tok...)
				out = append(out, '"')
				i += len(tok) - 1
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, c)
		}
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-' || c == '+'
}

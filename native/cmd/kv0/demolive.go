package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/runlock"
)

// demoDetails is the help text of kv0 demo.
const demoDetails = `The demo writes a new repository at REPO: --runs runs of each of four
experiments with --steps steps of train and val loss, accuracy and learning
rate, a few spikes, one failed run, and two records tables naming runs
(eval_samples, checkpoints); then it prints the runs and each series'
statistics.

--live then keeps two more runs of the experiment "live" running (their status
is running, with heartbeats): every --interval each appends one training step,
through the write-ahead log and the run locks that kv0 track uses, and commits
about every second, until SIGINT or SIGTERM, which commit what is buffered and
mark both runs aborted. On a REPO that already holds a repository, --live adds
the two runs to it without writing the demo again. --serve ADDR serves REPO
meanwhile in the same process, exactly as "kv0 serve REPO --listen ADDR" does
(the HTTP API, the dashboard and the wasm module; the URL is printed), and
stops with the writer: "make run" runs this beside the demo it writes, with
--web and --wasm (as kv0 serve's) naming the dashboard it just built.
`

// liveExperiment names the runs kv0 demo --live writes.
const liveExperiment = "live"

// liveCommitEvery is how often kv0 demo --live commits its points.
const liveCommitEvery = time.Second

// liveRun is one run kv0 demo --live appends to.
type liveRun struct {
	name string
	run  *tracking.Run
	lock *runlock.Lock
	e    demoExperiment
	rng  *rand.Rand
	step int64
}

// demoLive keeps two runs of the repository at loc appending (a step
// every interval) until ctx ends or SIGINT/SIGTERM; when serve.listen is
// set it serves loc meanwhile as kv0 serve does with serve's settings. It commits what is buffered,
// marks the runs aborted and closes the write-ahead log before it returns.
func demoLive(ctx context.Context, loc string, interval time.Duration, serve serveConfig, stdout, stderr io.Writer) error {
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	key, err := location.RepoWALKey(loc)
	if err != nil {
		return err
	}
	var runs []*liveRun
	var locks sync.Map // run id -> *runlock.Lock, for the heartbeats of the flusher
	opts := tracking.RepoOptions{
		FlushInterval: liveCommitEvery,
		OnHeartbeat: func(at time.Time) {
			locks.Range(func(_, lk any) bool {
				lk.(*runlock.Lock).RecordHeartbeat(at)
				return true
			})
		},
	}
	r, err := openRepoWith(ctx, loc, repoOpen{writable: true, create: true, wal: true, opts: opts})
	if err != nil {
		return err
	}
	// The server comes first: a bad address starts no run.
	var srv *server
	if serve.listen != "" {
		serve.loc = loc
		if srv, err = startServe(ctx, serve, stdout, stderr); err != nil {
			return errors.Join(err, r.Close())
		}
	}
	// release ends the runs (when ended) and gives up their locks.
	release := func(ended bool) {
		for _, lr := range runs {
			lr.lock.Release(ended)
		}
	}
	fail := func(err error) error {
		if srv != nil {
			err = errors.Join(err, srv.stop())
		}
		for _, lr := range runs {
			_ = lr.run.Finish(context.Background(), tracking.StatusFailed)
		}
		cerr := r.Close()
		release(cerr == nil)
		return errors.Join(err, cerr)
	}
	for i, e := range demoExperiments[:2] {
		id := tracking.NewRunID()
		lk, _, err := runlock.Acquire(key, id, "")
		if err != nil {
			return fail(err)
		}
		locks.Store(id, lk)
		if err := lk.RecordHolder(r.HolderID()); err != nil {
			lk.Release(false)
			return fail(err)
		}
		name := "live-" + e.name
		run, err := r.StartRun(ctx, tracking.RunSpec{
			ID:          id,
			Name:        name,
			Experiment:  liveExperiment,
			Description: fmt.Sprintf("%s training live: kv0 demo --live appends a step every %v", e.model, interval),
			Tags:        []string{e.model, "live"},
			Kind:        "training",
			Target:      fmt.Sprintf(`{"dataset":%q}`, e.name),
		})
		if err != nil {
			lk.Release(false)
			return fail(err)
		}
		runs = append(runs, &liveRun{name: name, run: run, lock: lk, e: e, rng: rand.New(rand.NewPCG(uint64(i)+100, 11))})
		if err := run.SetParams(map[string]any{
			"model":      map[string]any{"name": e.model},
			"optimizer":  map[string]any{"name": "adamw", "lr": e.baseLR},
			"batch_size": 128, "seed": i + 1,
		}); err != nil {
			return fail(err)
		}
	}
	// The runs are visible (running) before anything else is printed.
	if err := r.Flush(ctx); err != nil && ctx.Err() == nil {
		return fail(err)
	}
	names := make([]string, len(runs))
	for i, lr := range runs {
		names[i] = lr.name + " (" + lr.run.ID() + ")"
	}
	fmt.Fprintf(stdout, "demo: the runs %s append a step every %v until SIGINT or SIGTERM (Ctrl-C)\n", strings.Join(names, " and "), interval)
	if f, ok := stdout.(interface{ Sync() error }); ok {
		_ = f.Sync()
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var points int64
	var served <-chan error
	if srv != nil {
		served = srv.served
	}
	var endErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-served:
			// The server ended by itself (it only does on an error).
			if err == nil || errors.Is(err, context.Canceled) {
				err = errors.New("kv0 serve stopped")
			}
			endErr, srv = err, nil
			break loop
		case now := <-tick.C:
			for _, lr := range runs {
				n, err := lr.append(now)
				points += n
				if err != nil {
					endErr = err
					break loop
				}
			}
		}
	}
	stopSignals() // a second signal kills at once
	var serr error
	if srv != nil {
		serr = srv.stop()
	}
	status := tracking.StatusAborted
	if endErr != nil {
		status = tracking.StatusFailed
	}
	var ferr error
	for _, lr := range runs {
		ferr = errors.Join(ferr, lr.run.Finish(context.Background(), status))
	}
	cerr := r.Close()
	release(ferr == nil && cerr == nil)
	fmt.Fprintf(stderr, "demo: stopped after %d steps (%d points committed); the live runs are marked %s\n", runs[0].step, points, status)
	return errors.Join(endErr, serr, ferr, cerr)
}

// append writes the run's next step at now: train loss and learning rate
// every step, train accuracy every 10th, val loss and accuracy every 50th.
func (lr *liveRun) append(now time.Time) (int64, error) {
	step := lr.step
	e, rng := lr.e, lr.rng
	// The curves of a run of 20,000 steps; past them it keeps its floor.
	progress := math.Min(1, float64(step)/20000)
	loss := (e.floorLoss + 2.3*math.Exp(-e.speed*6*progress)) * (1 + 0.08*rng.NormFloat64())
	curLR := e.baseLR * 0.5 * (1 + math.Cos(math.Pi*progress))
	if step < 200 {
		curLR = e.baseLR * float64(step+1) / 200
	}
	epoch := step / 2000
	train := tracking.TrackOptions{Step: &step, Epoch: &epoch, Context: map[string]any{"subset": "train"}, Time: now}
	if err := lr.run.Track(loss, "loss", train); err != nil {
		return 0, err
	}
	if err := lr.run.Track(curLR, "lr", tracking.TrackOptions{Step: &step, Epoch: &epoch, Time: now}); err != nil {
		return 1, err
	}
	n := int64(2)
	acc := func(q float64) float64 {
		return math.Max(0, math.Min(0.99, (1-math.Exp(-e.speed*5*progress))*q+0.01*rng.NormFloat64()))
	}
	if step%10 == 0 {
		if err := lr.run.Track(acc(0.9), "accuracy", train); err != nil {
			return n, err
		}
		n++
	}
	if step%50 == 49 {
		val := tracking.TrackOptions{Step: &step, Epoch: &epoch, Context: map[string]any{"subset": "val"}, Time: now}
		if err := lr.run.Track(loss*1.1, "loss", val); err != nil {
			return n, err
		}
		if err := lr.run.Track(acc(0.88), "accuracy", val); err != nil {
			return n + 1, err
		}
		n += 2
	}
	lr.step++
	return n, nil
}

// demoRecords writes the demo's records tables: a few evaluation samples
// of the first run of each experiment, and a checkpoint of every
// finished run.
func demoRecords(r *tracking.Repo, runs []demoRunInfo) error {
	rng := rand.New(rand.NewPCG(3, 5))
	labels := []string{"airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"}
	for _, in := range runs {
		if in.k == 0 {
			for i := range 4 {
				label := labels[rng.IntN(len(labels))]
				pred := label
				if rng.IntN(4) == 0 {
					pred = labels[rng.IntN(len(labels))]
				}
				if err := r.PutRecord("eval_samples", in.id, fmt.Sprintf("sample-%d", i), map[string]any{
					"input": fmt.Sprintf("val/%05d", rng.IntN(10000)), "label": label, "prediction": pred,
					"correct": pred == label, "confidence": math.Round((0.5+0.5*rng.Float64())*1000) / 1000,
				}); err != nil {
					return err
				}
			}
		}
		if in.status == tracking.StatusFinished {
			if err := r.PutRecord("checkpoints", in.id, "final", map[string]any{
				"path": fmt.Sprintf("checkpoints/%s/step-%d.pt", in.name, in.steps-1), "step": in.steps - 1,
				"bytes": 44_000_000 + rng.IntN(1_000_000),
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// demoRunInfo is what demoRecords needs to know of a demo run.
type demoRunInfo struct {
	id, name, status string
	k, steps         int
}

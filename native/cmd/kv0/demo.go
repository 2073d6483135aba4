package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/kv0/kv0/core/tracking"
	"github.com/kv0/kv0/native/location"
)

// demoExperiment is one family of demo runs.
type demoExperiment struct {
	name      string
	model     string
	baseLR    float64
	floorLoss float64
	speed     float64
}

var demoExperiments = []demoExperiment{
	{"resnet-cifar10", "resnet18", 0.1, 0.18, 1.0},
	{"vit-cifar10", "vit-small", 3e-4, 0.25, 0.7},
	{"bert-sst2", "bert-base", 2e-5, 0.12, 1.3},
	{"gpt-tiny-shakespeare", "gpt-nano", 6e-4, 1.05, 0.5},
}

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := trackingFlags("demo")
	runsPer := intFlag(fs, "runs", 3, 1, 1000, "`N` runs per experiment (4 experiments), 1 to 1000")
	steps := intFlag(fs, "steps", 20000, 1, 10_000_000, "`N` training steps per run, 1 to 10^7")
	create := fs.Bool("create", true, "create the repository when there is none")
	live := fs.Bool("live", false, "then keep two running runs appending until SIGINT or SIGTERM")
	interval := 100 * time.Millisecond
	durationVar(fs, &interval, "interval", time.Millisecond, time.Minute, "with --live: a step of each live run every `D`")
	serveAddr := fs.String("serve", "", "with --live: serve REPO at `ADDR` meanwhile, as kv0 serve --listen ADDR does")
	webDir := fs.String("web", "", "with --serve: serve the dashboard from `DIR`, as kv0 serve --web DIR does")
	wasmDir := fs.String("wasm", "", "with --serve: serve the WebAssembly module from `DIR`, as kv0 serve --wasm DIR does")
	var format string
	formatVar(fs, &format, repoFormatUsage)
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	loc, err := onePath(pos)
	if err != nil {
		return err
	}
	if !*live {
		set := ""
		fs.Visit(func(f *flag.Flag) {
			if f.Name == "interval" || f.Name == "serve" {
				set = f.Name
			}
		})
		if set != "" {
			return usagef("--%s goes with --live", set)
		}
	}
	if *serveAddr == "" && (*webDir != "" || *wasmDir != "") {
		return usagef("--web and --wasm go with --serve")
	}
	serve := serveConfig{listen: *serveAddr, origin: "*", webDir: *webDir, wasmDir: *wasmDir}
	if interval <= 0 {
		return usagef("--interval: want a positive duration, got %v", interval)
	}
	if err := checkWritable(loc); err != nil {
		return err
	}
	if st, root, err := location.Open(ctx, loc, location.Options{}); err == nil {
		if ok, err := repoExists(ctx, st, root); err != nil {
			return fmt.Errorf("%s: %w", loc, err)
		} else if ok && *live {
			// The live runs join the repository already there.
			return demoLive(ctx, loc, interval, serve, stdout, stderr)
		} else if ok {
			return fmt.Errorf("%s already holds a repository; the demo writes a new one (choose another location)", loc)
		}
	}
	r, err := openRepoWith(ctx, loc, repoOpen{writable: true, create: *create, opts: tracking.RepoOptions{DataFormat: format}})
	if err != nil {
		return err
	}
	start := time.Now()
	total := int64(len(demoExperiments) * *runsPer * *steps)
	bar, endBar := progressBar(stderr, "demo")
	var done, points int64
	rng := rand.New(rand.NewPCG(42, 7))
	var written []demoRunInfo
	for _, e := range demoExperiments {
		for k := 0; k < *runsPer; k++ {
			info, n, err := demoRun(ctx, r, rng, e, k, *steps, func(step int) {
				if step%1000 == 0 {
					bar(done+int64(step), total)
				}
			})
			if err != nil {
				endBar()
				r.Close()
				return err
			}
			written = append(written, info)
			done += int64(*steps)
			points += n
			bar(done, total)
		}
	}
	endBar()
	if err := demoRecords(r, written); err != nil {
		r.Close()
		return err
	}
	if err := r.Flush(ctx); err != nil {
		r.Close()
		return err
	}
	elapsed := time.Since(start)
	fmt.Fprintf(stdout, "wrote %d runs, %d points in %.2fs (%.1fM points/s) to %s\n\n",
		len(demoExperiments)**runsPer, points, elapsed.Seconds(), float64(points)/elapsed.Seconds()/1e6, loc)
	if err := printSummary(ctx, r, stdout); err != nil {
		r.Close()
		return err
	}
	if err := r.Close(); err != nil || !*live {
		return err
	}
	fmt.Fprintln(stdout)
	return demoLive(ctx, loc, interval, serve, stdout, stderr)
}

// demoRun writes one run: noisy exponentially decaying loss with a warmup
// and cosine learning rate, accuracy rising towards a ceiling, an
// evaluation every 500 steps, and a few loss spikes.
func demoRun(ctx context.Context, r *tracking.Repo, rng *rand.Rand, e demoExperiment, k, steps int, tick func(int)) (demoRunInfo, int64, error) {
	name := fmt.Sprintf("%s-%d", e.name, k+1)
	info := demoRunInfo{name: name, k: k, steps: steps}
	n, err := demoRunPoints(ctx, r, rng, e, k, steps, tick, &info)
	return info, n, err
}

func demoRunPoints(ctx context.Context, r *tracking.Repo, rng *rand.Rand, e demoExperiment, k, steps int, tick func(int), info *demoRunInfo) (int64, error) {
	seed := 1 + k
	lr := e.baseLR * []float64{1, 0.5, 2, 0.25, 4}[k%5]
	bs := []int{128, 256, 64, 512, 32}[k%5]
	// The run is dated as if it had started hours ago and trained at
	// about six steps a second until now; its points fall between its
	// creation and its end.
	const perStep = 160 * time.Millisecond
	created := time.Now().Add(-time.Duration(steps)*perStep - time.Second)
	t0 := created.Add(time.Second)
	run, err := r.StartRun(ctx, tracking.RunSpec{
		CreatedAt:   created,
		Name:        info.name,
		Experiment:  e.name,
		Description: fmt.Sprintf("%s with lr %.2g, batch size %d", e.model, lr, bs),
		Tags:        []string{e.model, []string{"baseline", "sweep", "sweep"}[min(k, 2)]},
		Kind:        "training",
		Target:      fmt.Sprintf(`{"dataset":%q}`, e.name),
	})
	if err != nil {
		return 0, err
	}
	info.id = run.ID()
	err = run.SetParams(map[string]any{
		"model":      map[string]any{"name": e.model, "dropout": 0.1, "layers": 12},
		"optimizer":  map[string]any{"name": "adamw", "lr": lr, "weight_decay": 0.01, "betas": []float64{0.9, 0.999}},
		"batch_size": bs, "seed": seed, "epochs": 10, "amp": k%2 == 0,
	})
	if err != nil {
		return 0, err
	}
	warm := steps / 50
	quality := 1 + 0.15*rng.NormFloat64() // some runs end better than others
	var n int64
	stepsPerEpoch := int64(max(1, steps/10))
	train := map[string]any{"subset": "train"}
	val := map[string]any{"subset": "val"}
	for s := 0; s < steps; s++ {
		step := int64(s)
		epoch := step / stepsPerEpoch
		progress := float64(s) / float64(steps)
		curLR := lr * 0.5 * (1 + math.Cos(math.Pi*progress))
		if s < warm {
			curLR = lr * float64(s+1) / float64(warm)
		}
		loss := e.floorLoss*quality + 2.3*math.Exp(-e.speed*6*progress)
		loss *= 1 + 0.08*rng.NormFloat64()
		if rng.IntN(5000) == 0 {
			loss *= 3 + 2*rng.Float64() // a spike
		}
		at := t0.Add(time.Duration(s) * perStep)
		opts := tracking.TrackOptions{Step: &step, Epoch: &epoch, Context: train, Time: at}
		if err := run.Track(loss, "loss", opts); err != nil {
			return n, err
		}
		if err := run.Track(curLR, "lr", tracking.TrackOptions{Step: &step, Epoch: &epoch, Time: at}); err != nil {
			return n, err
		}
		n += 2
		if s%10 == 0 {
			acc := math.Max(0, math.Min(0.99, (1-math.Exp(-e.speed*5*progress))*(0.95-0.05*quality)+0.01*rng.NormFloat64()))
			if err := run.Track(acc, "accuracy", opts); err != nil {
				return n, err
			}
			n++
		}
		if s%500 == 499 || s == steps-1 {
			vloss := (e.floorLoss*quality+2.3*math.Exp(-e.speed*6*progress))*1.1 + 0.02*rng.NormFloat64()
			vacc := math.Max(0, math.Min(0.99, (1-math.Exp(-e.speed*5*progress))*(0.93-0.05*quality)+0.005*rng.NormFloat64()))
			vopts := tracking.TrackOptions{Step: &step, Epoch: &epoch, Context: val, Time: at}
			if err := run.Track(vloss, "loss", vopts); err != nil {
				return n, err
			}
			if err := run.Track(vacc, "accuracy", vopts); err != nil {
				return n, err
			}
			n += 2
		}
		tick(s)
	}
	status := tracking.StatusFinished
	if k == 2 && e.name == "vit-cifar10" {
		status = tracking.StatusFailed
	}
	info.status = status
	return n, run.Finish(ctx, status)
}

// printSummary prints the runs and each metric's statistics.
func printSummary(ctx context.Context, r *tracking.Repo, stdout io.Writer) error {
	if err := cmdRunsOn(ctx, r, tracking.RunFilter{}, false, stdout); err != nil {
		return err
	}
	runs, err := r.Runs(ctx, tracking.RunFilter{})
	if err != nil {
		return err
	}
	for _, in := range runs {
		fmt.Fprintf(stdout, "\n%s (%s, %s)\n", in.Name, in.Experiment, in.Status)
		if err := printSeries(ctx, r, in, false, stdout); err != nil {
			return err
		}
	}
	return nil
}

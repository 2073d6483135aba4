//go:build kv0_profile

package main

// Built with -tags kv0_profile (the API benchmarks' -apibench.profile),
// `kv0 serve` profiles itself when KV0_PROFILE_DIR names a folder: a CPU
// profile (cpu.pprof) and an execution trace (trace.out) from the start
// to the stop, and the block, mutex and heap profiles (block.pprof,
// mutex.pprof, heap.pprof) written at the stop. Release builds hold none
// of this.

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

func init() { serveProfile = startServeProfile }

func startServeProfile() (stop func() error, err error) {
	dir := os.Getenv("KV0_PROFILE_DIR")
	if dir == "" {
		return func() error { return nil }, nil
	}
	create := func(name string) (*os.File, error) { return os.Create(filepath.Join(dir, name)) }
	cpu, err := create("cpu.pprof")
	if err != nil {
		return nil, fmt.Errorf("KV0_PROFILE_DIR: %w", err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, fmt.Errorf("KV0_PROFILE_DIR: %w", err)
	}
	tr, err := create("trace.out")
	if err != nil {
		pprof.StopCPUProfile()
		cpu.Close()
		return nil, fmt.Errorf("KV0_PROFILE_DIR: %w", err)
	}
	if err := trace.Start(tr); err != nil {
		pprof.StopCPUProfile()
		cpu.Close()
		tr.Close()
		return nil, fmt.Errorf("KV0_PROFILE_DIR: %w", err)
	}
	runtime.SetBlockProfileRate(10_000) // a sample per 10 µs blocked
	runtime.SetMutexProfileFraction(10)
	return func() error {
		trace.Stop()
		pprof.StopCPUProfile()
		errs := []error{tr.Close(), cpu.Close()}
		for _, name := range []string{"block", "mutex", "heap"} {
			f, err := create(name + ".pprof")
			if err != nil {
				errs = append(errs, err)
				continue
			}
			errs = append(errs, pprof.Lookup(name).WriteTo(f, 0), f.Close())
		}
		for _, err := range errs {
			if err != nil {
				return fmt.Errorf("KV0_PROFILE_DIR: %w", err)
			}
		}
		return nil
	}, nil
}

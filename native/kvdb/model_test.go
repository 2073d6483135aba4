package kvdb_test

import (
	"cmp"
	"context"
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/kv/kvtest"
	"github.com/kv0/kv0/core/kv/lancelog"
	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/fsstore"
)

var (
	flagSeed  = flag.Uint64("kvdb.seed", 0, "seed of the model test on the Lance binding (0: fixed CI seeds)")
	flagSteps = flag.Int("kvdb.steps", 0, "steps per model-test run (0: default)")
	flagFor   = flag.Duration("kvdb.duration", 0, "run the model test with fresh seeds for this long")

	flagSeedShort = flag.Uint64("seed", 0, "short for -kvdb.seed")
	flagForShort  = flag.Duration("duration", 0, "short for -kvdb.duration")
)

// TestModelLance runs random histories through kv.DB on the real Lance
// binding: on a memory store, on a local folder, and on a memory store
// that fails commits now and then (the first two keep the stores' own
// optional fast paths, which a FaultStore hides). See kvtest.RunModel.
func TestModelLance(t *testing.T) {
	steps := 600
	if testing.Short() {
		steps = 150
	}
	if *flagSteps > 0 {
		steps = *flagSteps
	}
	stores := []struct {
		name   string
		faults bool
		open   func(t *testing.T) store.Store
	}{
		{"memory", false, func(t *testing.T) store.Store { return store.NewMemory() }},
		{"fsstore", false, func(t *testing.T) store.Store {
			st, err := fsstore.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
		{"memory-faults", true, func(t *testing.T) store.Store { return store.NewMemory() }},
	}
	for _, s := range stores {
		t.Run(s.name, func(t *testing.T) {
			kvtest.RunModel(t, kvtest.ModelConfig{
				Open: func(t *testing.T, seed uint64) kvtest.ModelBackend {
					rng := rand.New(rand.NewPCG(seed, seed*7+1))
					st := s.open(t)
					var faults *kvtest.FaultStore
					if s.faults {
						faults = &kvtest.FaultStore{Store: st}
						st = faults
					}
					log, err := lancelog.Open(context.Background(), st, "db.lance", lancelog.Options{})
					if err != nil {
						t.Fatal(err)
					}
					return kvtest.ModelBackend{
						Log:    log,
						Faults: faults,
						Options: kv.Options{
							LazyValueThreshold: []int{64, 4096, -1}[rng.IntN(3)],
							MaxFragments:       []int{-1, 4, 10}[rng.IntN(3)],
							ValueCacheSize:     []int64{-1, 8 << 10, 0}[rng.IntN(3)],
						},
					}
				},
				Seeds:    []uint64{1, 2, 3},
				Steps:    steps,
				Seed:     cmp.Or(*flagSeed, *flagSeedShort),
				Duration: cmp.Or(*flagFor, *flagForShort),
				SeedFlag: "kvdb.seed",
				Keys:     300,
			})
		})
	}
}

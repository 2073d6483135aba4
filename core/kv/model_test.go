package kv_test

import (
	"cmp"
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/kv/kvtest"
	"github.com/kv0/kv0/core/store"
)

var (
	flagSeed          = flag.Uint64("kv.seed", 0, "seed of the randomized model test (0: the fixed CI seeds)")
	flagDuration      = flag.Duration("kv.duration", 0, "run the model test with fresh seeds for this long")
	flagSeedShort     = flag.Uint64("seed", 0, "short for -kv.seed")
	flagDurationShort = flag.Duration("duration", 0, "short for -kv.duration")
)

// TestModel runs random histories through kv.DB on the fake op log, over
// a memory store that fails commits now and then. See kvtest.RunModel.
func TestModel(t *testing.T) {
	kvtest.RunModel(t, kvtest.ModelConfig{
		Open: func(t *testing.T, seed uint64) kvtest.ModelBackend {
			rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
			st := &kvtest.FaultStore{Store: store.NewMemory()}
			return kvtest.ModelBackend{
				Log:    kvtest.NewLog(st, "db/", nil),
				Faults: st,
				Options: kv.Options{
					LazyValueThreshold: []int{16, 4096, -1}[rng.IntN(3)],
					MaxFragments:       []int{-1, 3, 8}[rng.IntN(3)],
					ValueCacheSize:     []int64{-1, 1 << 14, 0}[rng.IntN(3)],
				},
			}
		},
		Seeds:      []uint64{1, 2, 3, 4, 5, 6},
		Steps:      2000,
		ShortSteps: 300,
		Seed:       cmp.Or(*flagSeed, *flagSeedShort),
		Duration:   cmp.Or(*flagDuration, *flagDurationShort),
		LongSteps:  3000,
		SeedFlag:   "kv.seed",
	})
}

package lance

import (
	"context"

	"github.com/kv0/kv0/core/internal/par"
)

// maxParallel bounds the requests one operation keeps in flight.
const maxParallel = 8

// parallel calls fn(ctx, i) for i in [0, n) with at most maxParallel calls
// running at once, and returns the first error (see par.Do).
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	return par.Do(ctx, n, maxParallel, fn)
}

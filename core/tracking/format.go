package tracking

import (
	"context"
	"errors"
	"fmt"

	"github.com/kv0/kv0/core/lance"
)

// dataFormat decides the data file format of the tables a writable handle
// creates: the format of the repository's runs table when there is one
// (so that a repository never mixes formats, which readers of lance 8 and
// older could not all read), else the one asked for, else the default. A
// format asked for that differs from an existing repository's fails with
// an error matching lance.ErrDataFormat.
func (r *Repo) dataFormat(ctx context.Context) (string, error) {
	want := r.opts.DataFormat
	if err := lance.CheckDataFormat(want); err != nil {
		return "", err
	}
	d, err := lance.Open(ctx, r.st, r.key(RunsTable), lance.OpenOptions{Files: r.files})
	if errors.Is(err, lance.ErrNotFound) {
		if want == "" {
			want = lance.DefaultDataFormat
		}
		return want, nil
	}
	if err != nil {
		return "", err
	}
	have := d.DataFormat()
	if want != "" && want != have {
		return "", fmt.Errorf("%w: the repository stores data files in format %s, not %s (a format is chosen when a repository is created)",
			lance.ErrDataFormat, have, want)
	}
	return have, nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"runtime"

	"github.com/kv0/kv0/core/version"
)

const versionDetails = `Prints "kv0 VERSION (GO-VERSION OS/ARCH)". VERSION is also the version of the
Python package (kv0.__version__) and of the npm package @kv0/wasm of the same
release.
`

// cmdVersion runs `kv0 version`.
func cmdVersion(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	pos, err := parseArgs(trackingFlags("version"), args, stderr)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return argsError(len(pos))
	}
	fmt.Fprintf(stdout, "kv0 %s (%s %s/%s)\n", version.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

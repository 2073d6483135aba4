//go:build !unix

package fsstore

// readFlags are the extra flags of a read's open (none here: the
// systems without them have no FIFOs in folders).
const readFlags = 0

// notOpenable reports whether err is the refusal to open a special file.
func notOpenable(err error) bool { return false }

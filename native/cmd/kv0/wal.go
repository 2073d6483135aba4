package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kv0/kv0/native/kvdb"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/wal"
)

// walGroupDetails is the help text of the wal group.
const walGroupDetails = `Writers log every write in a write-ahead log on this host before they
acknowledge it, until it is committed to the location: one log for a key-value
database (kv0 kv, kv0.DB), one for a tracking repository (kv0 track, kv0 demo
--live, kv0.tracking). Logs live under the WAL root: --wal-dir DIR, else
$KV0_WAL_DIR, else the user cache directory + /kv0/wal. LOCATION is the
database or repository as the other commands take it.

A writer killed in the middle of an append leaves a torn tail, which the next
writable open drops on its own. Any other damage (a record that fails its
checksum, a changed byte) makes every writable open of LOCATION fail with an
error naming the segment and "kv0 wal salvage LOCATION":

  kv0 wal check LOCATION     report the damage (exit status 1), change nothing
  kv0 wal salvage LOCATION   keep every record before the damage, move the
                             damaged segment aside, let writers open again

Salvage keeps the records before the damage in the log, where the next
writable open of LOCATION replays them (each exactly once), and moves the
damaged segment, with the same writer's later segments (written after the
damage, so not replayed), into the log's damaged/ folder: nothing is deleted.
It prints what it moved and how many bytes could not be read. On a healthy
log, or run again, it changes nothing.
`

const walCheckDetails = `Reads the write-ahead logs of LOCATION on this host and reports their intact
records, torn tails (not damage: the next writable open drops them) and damaged
segments: the segment, the offset of the first damaged record, how many records
of its writer are intact before it and how many bytes after it cannot be read.
Changes nothing. Exit status 1 when a segment is damaged. Logs of running
writers are skipped (reported as busy).
`

const walSalvageDetails = `For each damaged log of LOCATION on this host: keeps the records before the
damage for the next writable open to replay (each exactly once), moves the
damaged segment to <log>/damaged/<writer>/<segment>.damaged and the writer's
later segments beside it as .after-damage (not replayed: they were written
after records that are lost), and reports what moved and how many bytes could
not be read. Deletes nothing; changes nothing on a healthy log. Writers of
LOCATION may be running meanwhile: their own logs are skipped.
`

// walLog is one write-ahead log of a location: its kind and key.
type walLog struct {
	kind string // "key-value database" or "tracking repository"
	key  string // the key native/wal files it under
}

// walLogs returns the logs a location may have: the key-value one
// (kvdb.URI) and the tracking one (location.RepoWALKey); memory:// has
// none.
func walLogs(loc string) ([]walLog, error) {
	kvKey, err := kvdb.URI(loc)
	if err != nil {
		return nil, err
	}
	repoKey, err := location.RepoWALKey(loc)
	if err != nil {
		return nil, err
	}
	var out []walLog
	if kvKey != "" {
		out = append(out, walLog{"key-value database", kvKey})
	}
	if repoKey != "" {
		out = append(out, walLog{"tracking repository", repoKey})
	}
	return out, nil
}

// walJSON is one line of kv0 wal --json: a log and its report.
type walJSON struct {
	Kind string `json:"kind"`
	Key  string `json:"key"`
	*wal.Report
}

func cmdWALCheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWAL("check", args, stdout, stderr)
}

func cmdWALSalvage(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWAL("salvage", args, stdout, stderr)
}

// runWAL runs kv0 wal check or kv0 wal salvage.
func runWAL(sub string, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kv0 wal "+sub, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	walDir := fs.String("wal-dir", "", "root of the write-ahead logs (default $KV0_WAL_DIR or the user cache)")
	asJSON := fs.Bool("json", false, "one JSON object per log found (kind, key and the report) instead of text")
	pos, err := parseArgs(fs, args, stderr)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("missing LOCATION")
	}
	if len(pos) != 1 {
		return usagef("expected one LOCATION, got %d arguments: %s", len(pos), strings.Join(pos, " "))
	}
	loc := pos[0]
	logs, err := walLogs(loc)
	if err != nil {
		return err
	}
	o := wal.Options{Dir: *walDir}
	damaged, found := 0, 0
	for _, lg := range logs {
		var rep *wal.Report
		if sub == "salvage" {
			rep, err = wal.Salvage(lg.key, o)
		} else {
			rep, err = wal.Check(lg.key, o)
		}
		if err != nil {
			return fmt.Errorf("%s %s: %w", lg.kind, loc, err)
		}
		if !rep.Exists {
			continue
		}
		found++
		damaged += len(rep.Damaged)
		if *asJSON {
			b, err := json.Marshal(walJSON{lg.kind, lg.key, rep})
			if err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s\n", b)
			continue
		}
		writeWALReport(stdout, lg, loc, rep, sub == "salvage")
	}
	if found == 0 && !*asJSON {
		root, err := wal.Root(o)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "no write-ahead log of %s under %s: nothing was logged for it on this host\n", loc, root)
	}
	if damaged > 0 && sub == "check" {
		cmd := (&wal.CorruptError{Location: loc, WALDir: *walDir}).Command()
		return fmt.Errorf("%s: %d damaged write-ahead log segment(s) (%w); run \"%s\" to keep the records before the damage and let writers open again",
			loc, damaged, wal.ErrCorrupt, cmd)
	}
	return nil
}

// writeWALReport prints the report of one log as text.
func writeWALReport(w io.Writer, lg walLog, loc string, rep *wal.Report, salvaged bool) {
	fmt.Fprintf(w, "%s %s: write-ahead log %s\n", lg.kind, loc, rep.Dir)
	fmt.Fprintf(w, "  %d writer log(s) read, %d intact record(s): the next writable open replays them\n", rep.Writers, rep.Records)
	for _, d := range rep.Damaged {
		if salvaged {
			fmt.Fprintf(w, "  salvaged damaged segment %s (offset %d: %s)\n", d.Segment, d.Offset, d.Reason)
			fmt.Fprintf(w, "    kept: the %d record(s) of writer %s before the damage, left for the next writable open\n", d.Intact, d.Writer)
			fmt.Fprintf(w, "    moved aside: %s -> %s\n", d.Segment, d.MovedTo)
			fmt.Fprintf(w, "    lost: %d byte(s) from offset %d on could not be read\n", d.LostBytes, d.Offset)
			for i, p := range d.Later {
				fmt.Fprintf(w, "    set aside unreplayed (written after the damage): %s -> %s\n", p, d.LaterMovedTo[i])
			}
		} else {
			fmt.Fprintf(w, "  DAMAGED segment %s at offset %d: %s\n", d.Segment, d.Offset, d.Reason)
			fmt.Fprintf(w, "    intact before it: %d record(s) of writer %s\n", d.Intact, d.Writer)
			fmt.Fprintf(w, "    unreadable: %d byte(s) from offset %d on\n", d.LostBytes, d.Offset)
			for _, p := range d.Later {
				fmt.Fprintf(w, "    later segment of the writer (written after the damage, not replayed): %s\n", p)
			}
		}
		if len(d.Later) > 0 {
			fmt.Fprintf(w, "    the later segment(s) hold %d record(s), %d byte(s)\n", d.LaterRecords, d.LaterBytes)
		}
	}
	for _, t := range rep.Torn {
		fmt.Fprintf(w, "  torn tail (an append cut short by a crash, not damage; the next writable open drops it): %s at offset %d, %d byte(s)\n",
			t.Segment, t.Offset, t.Bytes)
	}
	for _, b := range rep.Busy {
		fmt.Fprintf(w, "  busy (held by a running writer, not read): %s\n", b)
	}
	var moved []string
	for _, d := range rep.Damaged {
		moved = append(moved, d.MovedTo)
		moved = append(moved, d.LaterMovedTo...)
	}
	for _, p := range rep.SetAside {
		if !slices.Contains(moved, p) {
			fmt.Fprintf(w, "  set aside by an earlier salvage: %s\n", p)
		}
	}
	if !salvaged && len(rep.Damaged) == 0 {
		fmt.Fprintln(w, "  no damage")
	}
	if salvaged && len(rep.Damaged) == 0 {
		fmt.Fprintln(w, "  no damage: nothing changed")
	}
}

// Package wal is kv0's local write-ahead log: the OS-bound half of the
// key-value layer's durability (package core/kv holds the rest and takes a
// Log through its kv.WAL interface).
//
// Layout on disk, under a root directory (Options.Dir, else $KV0_WAL_DIR,
// else the user cache directory + "/kv0/wal"):
//
//	<root>/<xxh3-64 of the dataset URI, hex>/
//	    view.snap                  snapshot of the last closed view (Snapshots)
//	    <writer id>/
//	        LOCK                   flock(2)-ed while the writer runs
//	        00000000000000000001.seg
//	        00000000000000000002.seg ...
//	    damaged/<writer id>/       segments set aside by Salvage (kv0 wal salvage)
//	        00000000000000000002.seg.damaged
//	        00000000000000000003.seg.after-damage ...
//
// Each open handle is one writer with its own directory. Open adopts an idle
// directory (left empty by a clean close) and claims the directories of
// writers that stopped without committing, so their records can be
// replayed; see Open. A new writer directory is made and locked as
// .new-<writer id> and then renamed, so concurrent Opens never race for it;
// a .new-* directory left by a process killed meanwhile holds no segments
// and is removed by the next Open. Segment files hold records framed as described in
// segment.go (len u32 | xxh3-64 u64 | payload). A flush seals the current
// segment (Rotate) and deletes the sealed ones once the commit covering them
// succeeded (Release).
//
// A record that fails its checksum or framing is damage unless it has the
// shape of an append cut short by a crash at the end of the last segment
// (see tornAt in segment.go), which Open drops. Damage fails Open with a
// *CorruptError (ErrCorrupt) naming the segment and `kv0 wal salvage
// LOCATION`; Check reports the damage of a log and Salvage keeps the
// records before it for replay and sets the damaged segment (and the
// writer's later ones) aside under damaged/, deleting nothing.
//
// Durability follows SyncMode: none, batch (the default; the owner calls
// Sync about every 100 ms) and always. In every mode a record is in the
// kernel's page cache before Append returns, so it survives a crash of the
// process. On Linux, none and batch map each segment (preallocated with
// fallocate, shared and writable) and copy records into the mapping, which
// puts them in the page cache without a system call per record; elsewhere,
// in always mode, and where space cannot be reserved, each record is one
// write(2).
package wal

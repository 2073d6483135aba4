package main

/*
#include "kv0out.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"

	"github.com/kv0/kv0/core/kv"
	"github.com/kv0/kv0/core/lance"
	"github.com/kv0/kv0/native/kvdb"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/native/wal"
)

// dbHandle is an open key-value database.
type dbHandle struct {
	db       *kv.DB
	wal      *wal.Log // nil without a WAL
	readOnly bool

	mu     sync.Mutex // guards closed and iters
	closed bool
	iters  map[int64]struct{}
}

// dbOptions are the options the Python side sends with an open, as JSON.
// Durations are in seconds; a negative one turns the timer off.
type dbOptions struct {
	ReadOnly           bool              `json:"read_only"`
	Version            uint64            `json:"version"`
	WriteBufferSize    int               `json:"write_buffer_size"`
	FlushInterval      *float64          `json:"flush_interval"`
	RefreshInterval    *float64          `json:"refresh_interval"`
	LazyValueThreshold int               `json:"lazy_value_threshold"`
	ValueCacheSize     int64             `json:"value_cache_size"`
	MaxFragments       int               `json:"max_fragments"`
	WALSync            string            `json:"wal_sync"`
	WALDir             string            `json:"wal_dir"`
	DisableWAL         bool              `json:"disable_wal"`
	DisableSnapshots   bool              `json:"disable_snapshots"`
	DataFormat         string            `json:"data_format"`
	StorageOptions     map[string]any    `json:"storage_options"`
	Env                map[string]string `json:"-"`
}

// seconds converts an option in seconds to a Duration (negative: -1, off).
func seconds(s *float64) time.Duration {
	switch {
	case s == nil:
		return 0
	case *s < 0:
		return -1
	}
	return time.Duration(*s * float64(time.Second))
}

// checkFormat checks data_format: "" (the default), "2.1" or "2.2".
func checkFormat(s string) error {
	if err := lance.CheckDataFormat(s); err != nil {
		return fmt.Errorf("%w: data_format %q (want %q or %q)", errInvalidArg, s, lance.DataFormat21, lance.DataFormat22)
	}
	return nil
}

// walMode parses wal_sync.
func walMode(s string) (wal.SyncMode, error) {
	switch s {
	case "", "batch":
		return wal.SyncBatch, nil
	case "none":
		return wal.SyncNone, nil
	case "always":
		return wal.SyncAlways, nil
	}
	return 0, fmt.Errorf("%w: wal_sync %q (want batch, none or always)", errInvalidArg, s)
}

func parseOptions(p unsafe.Pointer, n C.int64_t, v any) error {
	b := goBytes(p, n)
	if len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: options: %v", errInvalidArg, err)
	}
	return nil
}

// kv0_db_open opens the database at loc with the JSON options opts (see
// dbOptions) after applying the environment env (see applyEnv); the
// handle is out.num.
//
//export kv0_db_open
func kv0_db_open(loc unsafe.Pointer, locLen C.int64_t, opts unsafe.Pointer, optsLen C.int64_t,
	env unsafe.Pointer, envLen C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	var o dbOptions
	if err := parseOptions(opts, optsLen, &o); err != nil {
		return fail(out, err)
	}
	envMu.Lock()
	defer envMu.Unlock()
	if err := applyEnv(goBytes(env, envLen)); err != nil {
		return fail(out, err)
	}
	h, err := openDB(goString(loc, locLen), o)
	if err != nil {
		return fail(out, err)
	}
	out.num = C.int64_t(newHandle(h))
	return codeOK
}

func openDB(loc string, o dbOptions) (*dbHandle, error) {
	mode, err := walMode(o.WALSync)
	if err != nil {
		return nil, err
	}
	lo, err := locationOptions(o.StorageOptions)
	if err != nil {
		return nil, err
	}
	if err := checkFormat(o.DataFormat); err != nil {
		return nil, err
	}
	ko := kvdb.Options{
		WALDir: o.WALDir, WALMode: mode, DisableWAL: o.DisableWAL, DisableSnapshots: o.DisableSnapshots,
		Location: lo,
		DB: kv.Options{
			ReadOnly: o.ReadOnly, Version: o.Version,
			WriteBufferSize: o.WriteBufferSize, FlushInterval: seconds(o.FlushInterval),
			RefreshInterval: seconds(o.RefreshInterval), LazyValueThreshold: o.LazyValueThreshold,
			ValueCacheSize: o.ValueCacheSize, MaxFragments: o.MaxFragments,
		},
	}
	readOnly := o.ReadOnly || o.Version != 0 || location.ReadOnly(loc, location.Options{})
	if !readOnly {
		ko.Log.DataFormat = o.DataFormat
	}
	h := &dbHandle{readOnly: readOnly, iters: map[int64]struct{}{}}
	// The handle opens the WAL itself (where kvdb.Open would), so that
	// flush_wal can sync it.
	if !readOnly && !o.DisableWAL {
		uri, err := kvdb.URI(loc)
		if err != nil {
			return nil, err
		}
		if uri != "" {
			l, err := wal.Open(uri, wal.Options{Dir: o.WALDir, Mode: mode})
			if err != nil {
				return nil, fmt.Errorf("kv0: WAL of %s: %w", loc, err)
			}
			h.wal, ko.DB.WAL = l, l
		}
	}
	db, err := kvdb.Open(context.Background(), loc, ko)
	if err != nil {
		if h.wal != nil {
			_ = h.wal.Close(false)
		}
		return nil, err
	}
	h.db = db
	return h, nil
}

// db returns the open database of handle h.
func getDB(h C.int64_t) (*dbHandle, error) { return lookup[*dbHandle](h) }

func writeOptions(flags C.int32_t) *kv.WriteOptions {
	if flags == 0 {
		return nil
	}
	return &kv.WriteOptions{Sync: flags&1 != 0, DisableWAL: flags&2 != 0}
}

// kv0_db_put sets key k to value v. hf is the database handle shifted
// left by 2, or'ed with the flags: 1 sync, 2 disable the WAL (one argument
// fewer keeps the foreign call cheap). On an error the message is kept for
// kv0_take_error.
//
//export kv0_db_put
func kv0_db_put(hf C.int64_t, k unsafe.Pointer, kl C.int64_t, v unsafe.Pointer, vl C.int64_t) (code C.int32_t) {
	defer recoverThread(&code)
	d, err := getDB(hf >> 2)
	if err != nil {
		return failThread(err)
	}
	if err := d.db.Put(context.Background(), goBytesOrEmpty(k, kl), goBytesOrEmpty(v, vl), writeOptions(C.int32_t(hf&3))); err != nil {
		return failThread(err)
	}
	return codeOK
}

// kv0_db_get reads key k. A value of at most bufCap bytes is copied into
// buf (the caller's receive buffer), out.len its length and out.num 1; a
// longer one is returned in out.data with out.num 2; out.num is 0 when the
// key has no value.
//
//export kv0_db_get
func kv0_db_get(h C.int64_t, k unsafe.Pointer, kl C.int64_t, buf unsafe.Pointer, bufCap C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	v, err := d.db.Get(context.Background(), goBytesOrEmpty(k, kl))
	if errors.Is(err, kv.ErrNotFound) {
		out.num = 0
		return codeOK
	}
	if err != nil {
		return fail(out, err)
	}
	if buf != nil && len(v) <= int(bufCap) {
		copy(unsafe.Slice((*byte)(buf), len(v)), v)
		out.data, out.len, out.num = nil, C.int64_t(len(v)), 1
		return codeOK
	}
	setOut(out, v)
	out.num = 2
	return codeOK
}

// kv0_db_delete deletes key k (flags as kv0_db_put).
//
//export kv0_db_delete
func kv0_db_delete(h C.int64_t, k unsafe.Pointer, kl C.int64_t, flags C.int32_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	return done(out, d.db.Delete(context.Background(), goBytesOrEmpty(k, kl), writeOptions(flags)))
}

// kv0_db_delete_range deletes every key in [a, b) (flags as kv0_db_put).
//
//export kv0_db_delete_range
func kv0_db_delete_range(h C.int64_t, a unsafe.Pointer, al C.int64_t, b unsafe.Pointer, bl C.int64_t, flags C.int32_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	return done(out, d.db.DeleteRange(context.Background(), goBytesOrEmpty(a, al), goBytesOrEmpty(b, bl), writeOptions(flags)))
}

// Batch operation codes in a serialized write batch (see decodeBatch).
const (
	batchPut         = 0
	batchDelete      = 1
	batchDeleteRange = 2
)

// decodeBatch parses a write batch as the Python side serializes it: a
// sequence of operations, each op (u8) | len(a) (u32 LE) | len(b) (u32 LE)
// | a | b, where a is the key (the range start) and b the value (the range
// end; empty for a delete).
func decodeBatch(buf []byte, b *kv.Batch) error {
	for off := 0; off < len(buf); {
		if len(buf)-off < 9 {
			return fmt.Errorf("%w: write batch: truncated header at offset %d", errInvalidArg, off)
		}
		op := buf[off]
		la := int(binary.LittleEndian.Uint32(buf[off+1:]))
		lb := int(binary.LittleEndian.Uint32(buf[off+5:]))
		off += 9
		if la > len(buf)-off || lb > len(buf)-off-la {
			return fmt.Errorf("%w: write batch: operation at offset %d runs past the end", errInvalidArg, off-9)
		}
		a, bb := buf[off:off+la], buf[off+la:off+la+lb]
		switch op {
		case batchPut:
			b.Put(a, bb)
		case batchDelete:
			if lb != 0 {
				return fmt.Errorf("%w: write batch: delete at offset %d has a value", errInvalidArg, off-9)
			}
			b.Delete(a)
		case batchDeleteRange:
			b.DeleteRange(a, bb)
		default:
			return fmt.Errorf("%w: write batch: unknown operation %d at offset %d", errInvalidArg, op, off-9)
		}
		off += la + lb
	}
	return nil
}

// kv0_db_write applies the serialized batch at p (see decodeBatch)
// atomically (flags as kv0_db_put).
//
//export kv0_db_write
func kv0_db_write(h C.int64_t, p unsafe.Pointer, n C.int64_t, flags C.int32_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	var b kv.Batch
	if err := decodeBatch(goBytes(p, n), &b); err != nil {
		return fail(out, err)
	}
	return done(out, d.db.Write(context.Background(), &b, writeOptions(flags)))
}

// decodeKeys parses n keys, each len (u32 LE) | key.
func decodeKeys(buf []byte, n int) ([][]byte, error) {
	if n < 0 || n > len(buf)/4 {
		return nil, fmt.Errorf("%w: %d keys in a %d-byte buffer", errInvalidArg, n, len(buf))
	}
	keys := make([][]byte, 0, n)
	off := 0
	for range n {
		if len(buf)-off < 4 {
			return nil, fmt.Errorf("%w: keys: truncated at offset %d", errInvalidArg, off)
		}
		l := int(binary.LittleEndian.Uint32(buf[off:]))
		off += 4
		if l > len(buf)-off {
			return nil, fmt.Errorf("%w: keys: key at offset %d runs past the end", errInvalidArg, off-4)
		}
		keys = append(keys, buf[off:off+l:off+l])
		off += l
	}
	if off != len(buf) {
		return nil, fmt.Errorf("%w: keys: %d bytes after the last key", errInvalidArg, len(buf)-off)
	}
	return keys, nil
}

// kv0_db_multi_get reads n keys serialized as decodeKeys parses them and
// returns, per key in order, len (i64 LE; -1 when absent) | value.
//
//export kv0_db_multi_get
func kv0_db_multi_get(h C.int64_t, p unsafe.Pointer, pl C.int64_t, n C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	keys, err := decodeKeys(goBytes(p, pl), int(n))
	if err != nil {
		return fail(out, err)
	}
	vals, err := d.db.MultiGet(context.Background(), keys)
	if err != nil {
		return fail(out, err)
	}
	size := 8 * len(vals)
	for _, v := range vals {
		size += len(v)
	}
	buf := make([]byte, 0, size)
	for _, v := range vals {
		l := int64(len(v))
		if v == nil {
			l = -1
		}
		buf = binary.LittleEndian.AppendUint64(buf, uint64(l))
		buf = append(buf, v...)
	}
	setOut(out, buf)
	out.num = C.int64_t(len(vals))
	return codeOK
}

// kv0_db_flush commits every buffered write.
//
//export kv0_db_flush
func kv0_db_flush(h C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	return done(out, d.db.Flush(context.Background()))
}

// kv0_db_flush_wal makes every write made so far durable in the WAL (an
// fsync); without a WAL it does nothing.
//
//export kv0_db_flush_wal
func kv0_db_flush_wal(h C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return fail(out, kv.ErrClosed)
	}
	if d.wal == nil {
		return codeOK
	}
	return done(out, d.wal.Sync())
}

// kv0_db_compact_range rewrites the log as the live view.
//
//export kv0_db_compact_range
func kv0_db_compact_range(h C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	return done(out, d.db.CompactRange(context.Background(), nil, nil))
}

// kv0_db_versions returns the stored versions as JSON:
// [{"version": N, "timestamp": "RFC 3339"}...], oldest first (the shape of
// `kv0 kv versions --json`).
//
//export kv0_db_versions
func kv0_db_versions(h C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	vs, err := d.db.Versions(context.Background())
	if err != nil {
		return fail(out, err)
	}
	type version struct {
		Version   uint64 `json:"version"`
		Timestamp string `json:"timestamp"`
	}
	list := make([]version, len(vs))
	for i, v := range vs {
		list[i] = version{v.Version, v.Timestamp.UTC().Format(time.RFC3339Nano)}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return fail(out, err)
	}
	setOut(out, b)
	return codeOK
}

// kv0_db_cleanup_old_versions removes versions older than secs seconds;
// out.num is how many.
//
//export kv0_db_cleanup_old_versions
func kv0_db_cleanup_old_versions(h C.int64_t, secs C.double, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	if secs < 0 {
		return fail(out, fmt.Errorf("%w: cleanup_old_versions: negative age %g", errInvalidArg, float64(secs)))
	}
	n, err := d.db.CleanupOldVersions(context.Background(), time.Duration(float64(secs)*float64(time.Second)))
	out.num = C.int64_t(n)
	return done(out, err)
}

// kv0_db_purge removes deleted data from storage (force: delete tags
// that keep it).
//
//export kv0_db_purge
func kv0_db_purge(h C.int64_t, force C.int32_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	return done(out, d.db.Purge(context.Background(), force != 0))
}

// kv0_db_close flushes and closes the database and its iterators. Closing
// a closed handle does nothing.
//
//export kv0_db_close
func kv0_db_close(h C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, ok := take[*dbHandle](h)
	if !ok {
		return codeOK
	}
	d.mu.Lock()
	d.closed = true
	iters := d.iters
	d.iters = map[int64]struct{}{}
	d.mu.Unlock()
	for ih := range iters {
		if it, ok := take[*iterHandle](C.int64_t(ih)); ok {
			it.close()
		}
	}
	return done(out, d.db.Close())
}

// iterHandle is an iterator of a database. Its mutex makes concurrent use
// from several threads safe (if not meaningful).
type iterHandle struct {
	mu       sync.Mutex
	it       *kv.Iterator
	keysOnly bool
	db       *dbHandle
	h        int64
}

func (it *iterHandle) close() {
	it.mu.Lock()
	_ = it.it.Close()
	it.mu.Unlock()
	it.db.mu.Lock()
	delete(it.db.iters, it.h)
	it.db.mu.Unlock()
}

// kv0_iter_new makes an unpositioned iterator over the database; out.num
// is its handle. A keys-only iterator returns empty values.
//
//export kv0_iter_new
func kv0_iter_new(h C.int64_t, keysOnly C.int32_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	d, err := getDB(h)
	if err != nil {
		return fail(out, err)
	}
	it, err := d.db.NewIter(context.Background(), nil)
	if err != nil {
		return fail(out, err)
	}
	ih := &iterHandle{it: it, keysOnly: keysOnly != 0, db: d}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		_ = it.Close()
		return fail(out, kv.ErrClosed)
	}
	n := newHandle(ih)
	ih.h = n
	d.iters[n] = struct{}{}
	out.num = C.int64_t(n)
	return codeOK
}

// iterChunkBytes bounds the keys and values one kv0_iter_seek returns
// (at least one entry is always returned).
const iterChunkBytes = 4 << 20

// Iterator positioning operations of kv0_iter_seek.
const (
	seekNone  = 0 // stay: continue from the current position
	seekFirst = 1
	seekLast  = 2
	seekGE    = 3
	seekLE    = 4
)

// kv0_iter_seek positions the iterator (op: seekNone keeps its position)
// and returns up to max entries from there, moving forward (dir 1) or
// backward (dir -1). The iterator is left on the first entry not returned.
// It stops early once the entries hold iterChunkBytes. The buffer is n
// (u32 LE), more (u32 LE: 1 when the iterator is still on an entry), then
// per entry len(key), len(value) (u32 LE each), then the keys and values
// in order (values are empty for a keys-only iterator). out.num is n.
//
//export kv0_iter_seek
func kv0_iter_seek(ih C.int64_t, op C.int32_t, k unsafe.Pointer, kl C.int64_t, dir C.int32_t, max C.int64_t, out *C.kv0_out) (code C.int32_t) {
	defer recoverTo(out, &code)
	it, err := lookup[*iterHandle](ih)
	if err != nil {
		return fail(out, err)
	}
	it.mu.Lock()
	defer it.mu.Unlock()
	key := goBytesOrEmpty(k, kl)
	var ok bool
	switch op {
	case seekNone:
		ok = it.it.Valid()
	case seekFirst:
		ok = it.it.First()
	case seekLast:
		ok = it.it.Last()
	case seekGE:
		ok = it.it.SeekGE(key)
	case seekLE:
		ok = it.it.SeekLE(key)
	default:
		return fail(out, fmt.Errorf("%w: iterator operation %d", errInvalidArg, op))
	}
	head, data, n, err := it.chunk(ok, dir < 0, int(max))
	if err != nil {
		return fail(out, err)
	}
	setOut2(out, head, data)
	out.num = C.int64_t(n)
	return codeOK
}

// kv0_iter_close releases an iterator (a closed one: nothing).
//
// chunk encodes up to max entries from the current position (valid tells
// whether there is one) moving backward or forward, as kv0_iter_seek
// returns them: the header and lengths, then the data to append to them.
func (it *iterHandle) chunk(valid, backward bool, max int) ([]byte, []byte, int, error) {
	move := it.it.Next
	if backward {
		move = it.it.Prev
	}
	le := binary.LittleEndian
	lens := make([]byte, 8, 8+8*min(max, 1024))
	var data []byte
	if valid {
		// Room for max entries the size of the first, within the bound.
		per := len(it.it.Key())
		if !it.keysOnly {
			per += len(it.it.Value())
		}
		data = make([]byte, 0, min(iterChunkBytes+per, max*per+1))
	}
	n := 0
	for ; valid && n < max && len(data) < iterChunkBytes; n++ {
		k := it.it.Key()
		lens = le.AppendUint32(lens, uint32(len(k)))
		data = append(data, k...)
		if it.keysOnly {
			lens = le.AppendUint32(lens, 0)
		} else {
			v := it.it.Value()
			lens = le.AppendUint32(lens, uint32(len(v)))
			data = append(data, v...)
		}
		valid = move()
	}
	if err := it.it.Error(); err != nil {
		return nil, nil, 0, err
	}
	le.PutUint32(lens[0:], uint32(n))
	if valid {
		le.PutUint32(lens[4:], 1)
	}
	return lens, data, n, nil
}

//export kv0_iter_close
func kv0_iter_close(ih C.int64_t) {
	defer func() { _ = recover() }()
	if it, ok := take[*iterHandle](ih); ok {
		it.close()
	}
}

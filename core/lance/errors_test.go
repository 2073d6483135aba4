package lance

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/kv0/kv0/core/store"
)

func TestNotFound(t *testing.T) {
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 3, NamingV2, 3)
	for _, tc := range []struct {
		name string
		st   store.Store
		root string
		opts OpenOptions
		want string
	}{
		{"no dataset", mem, "nope.lance", OpenOptions{}, "no dataset"},
		{"no dataset, no listing", noList{mem}, "nope.lance", OpenOptions{}, "no dataset"},
		{"no version", mem, "t.lance", OpenOptions{Version: 4}, "version 4"},
		{"no tag", mem, "t.lance", OpenOptions{Tag: "prod"}, `tag "prod"`},
		{"bad tag name", mem, "t.lance", OpenOptions{Tag: "../x"}, `tag "../x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Open(t.Context(), tc.st, tc.root, tc.opts)
			if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrNotFound mentioning %q", err, tc.want)
			}
		})
	}
}

func TestTags(t *testing.T) {
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 3, NamingV2, 3)
	ctx := t.Context()
	// lance 8 writes pretty-printed JSON with more keys.
	mem.Put(ctx, "t.lance/_refs/tags/v1.0.json", []byte("{\n  \"branch\": null,\n  \"version\": 2,\n  \"createdAt\": \"2026-01-01T00:00:00Z\",\n  \"manifestSize\": 750,\n  \"metadata\": {}\n}"))
	mem.Put(ctx, "t.lance/_refs/tags/first.json", []byte(`{"version":1,"manifestSize":1}`))
	d, err := Open(ctx, mem, "t.lance", OpenOptions{Tag: "v1.0"})
	if err != nil || d.Version() != 2 {
		t.Fatal(d, err)
	}
	tags, err := ListTags(ctx, mem, "t.lance")
	if err != nil || len(tags) != 2 || tags[0] != (Tag{"first", 1}) || tags[1] != (Tag{"v1.0", 2}) {
		t.Fatal(tags, err)
	}
	log, err := Log(ctx, mem, "t.lance")
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 3 || log[0].Tags[0] != "first" || log[1].Tags[0] != "v1.0" || log[2].Tags != nil {
		t.Fatalf("%+v", log)
	}
	if _, err := Open(ctx, mem, "t.lance", OpenOptions{Tag: "v1.0", Version: 1}); err == nil {
		t.Fatal("version and tag accepted together")
	}
	mem.Put(ctx, "t.lance/_refs/tags/br.json", []byte(`{"branch":"dev","version":1}`))
	if _, err := Open(ctx, mem, "t.lance", OpenOptions{Tag: "br"}); !errors.Is(err, ErrUnsupportedFeature) {
		t.Fatalf("branch tag: %v", err)
	}
	mem.Put(ctx, "t.lance/_refs/tags/bad.json", []byte(`{"version":`))
	if _, err := Open(ctx, mem, "t.lance", OpenOptions{Tag: "bad"}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "bad.json") {
		t.Fatalf("bad tag: %v", err)
	}
	// Log on a store that cannot list still works, without tags.
	mem.Delete(ctx, "t.lance/_refs/tags/bad.json")
	log, err = Log(ctx, noList{mem}, "t.lance")
	if err != nil || len(log) != 3 || log[2].Operation != "Append" || log[0].Operation != "Create" {
		t.Fatalf("%+v %v", log, err)
	}
}

func TestListVersions(t *testing.T) {
	mem := store.NewMemory()
	putVersions(t, mem, "t.lance", 12, NamingV1, 12)
	ctx := t.Context()
	// Junk that must be ignored.
	for _, k := range []string{"13.manifest-0b7d", ".tmp_14.manifest", "d5.manifest", "007.manifest", "x/1.manifest"} {
		mem.Put(ctx, "t.lance/_versions/"+k, []byte("junk"))
	}
	refs, err := ListVersions(ctx, mem, "t.lance")
	if err != nil || len(refs) != 12 {
		t.Fatal(refs, err)
	}
	for i, r := range refs {
		if r.Version != uint64(i+1) || r.Naming != NamingV1 || r.Size == 0 {
			t.Fatalf("%+v", r)
		}
	}
	if v, err := LatestVersion(ctx, mem, "t.lance"); v != 12 || err != nil {
		t.Fatal(v, err)
	}
	if v, err := LatestVersion(ctx, noList{mem}, "t.lance"); v != 12 || err != nil {
		t.Fatal(v, err)
	}
	refs, err = ListVersions(ctx, noList{mem}, "t.lance")
	if err != nil || len(refs) != 12 || refs[11].Size == 0 {
		t.Fatal(refs, err)
	}
}

func TestManifestNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    uint64
		n    Naming
		ok   bool
	}{
		{"1.manifest", 1, NamingV1, true},
		{"1234.manifest", 1234, NamingV1, true},
		{"18446744073709551614.manifest", 1, NamingV2, true},
		{"18446744073709550615.manifest", 1000, NamingV2, true},
		{"00000000000000000000.manifest", 1<<64 - 1, NamingV2, true},
		{"18446744073709551615.manifest", 0, 0, false}, // version 0
		{"0.manifest", 0, 0, false},
		{"01.manifest", 0, 0, false},
		{"d3.manifest", 0, 0, false},
		{"3.manifest-abc", 0, 0, false},
		{".manifest", 0, 0, false},
		{"latest_version_hint.json", 0, 0, false},
		{"+1.manifest", 0, 0, false},
	} {
		v, n, ok := parseManifestName(tc.name)
		if v != tc.v || n != tc.n || ok != tc.ok {
			t.Errorf("%s: got %d %v %v", tc.name, v, n, ok)
		}
		if ok && manifestName(v, n) != tc.name {
			t.Errorf("%s: round trip gives %s", tc.name, manifestName(v, n))
		}
	}
}

func TestCorruptManifest(t *testing.T) {
	good := encodeManifest(t, testManifest(1), nil)
	key := "t.lance/_versions/" + manifestName(1, NamingV2)
	flip := func(off int, b byte) []byte {
		c := append([]byte(nil), good...)
		c[off] = b
		return c
	}
	pos := binary.LittleEndian.Uint64(good[len(good)-16:])
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "too small"},
		{"truncated", good[:len(good)-1], "magic"},
		{"tail cut", good[5:], "length prefix"},
		{"bad magic", flip(len(good)-1, 'X'), "at offset " + strconv.Itoa(len(good)-4)},
		{"bad position", flip(len(good)-9, 0x7f), "manifest position"},
		{"bad length", flip(int(pos), good[pos]+1), "at offset " + strconv.Itoa(int(pos))},
		{"bad protobuf", flip(int(pos)+4, 0xff), "at offset " + strconv.Itoa(int(pos)+4)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := store.NewMemory()
			mem.Put(t.Context(), key, tc.data)
			_, err := Open(t.Context(), mem, "t.lance", OpenOptions{})
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want ErrCorrupt naming %s and %q", err, key, tc.want)
			}
		})
	}
}

func TestFeatureFlags(t *testing.T) {
	for _, tc := range []struct {
		flags uint64
		ok    bool
		want  string
	}{
		{0, true, ""},
		{1 | 2 | 8 | 16 | 32, true, ""},
		{64, false, "64 (data overlays)"},
		{1 | 4096 | 1<<40, false, "4096, 1099511627776"},
	} {
		mem := store.NewMemory()
		m := testManifest(1)
		m.ReaderFeatureFlags = tc.flags
		mem.Put(t.Context(), "t.lance/_versions/"+manifestName(1, NamingV2), encodeManifest(t, m, nil))
		_, err := Open(t.Context(), mem, "t.lance", OpenOptions{})
		if tc.ok && err != nil {
			t.Errorf("flags %d: %v", tc.flags, err)
		}
		if !tc.ok && (!errors.Is(err, ErrUnsupportedFeature) || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("flags %d: got %v, want ErrUnsupportedFeature naming %s", tc.flags, err, tc.want)
		}
	}
}

// A manifest larger than the 64 KiB tail read, with its transaction section
// outside the tail, costs one more read each.
func TestLargeManifest(t *testing.T) {
	m := testManifest(1)
	m.SchemaMetadata = map[string][]byte{"big": []byte(strings.Repeat("x", 200<<10))}
	mem := store.NewMemory()
	mem.Put(t.Context(), "t.lance/_versions/"+manifestName(1, NamingV2), encodeManifest(t, m, deleteTxn("x > 1")))
	mem.ResetCounters()
	d, err := Open(t.Context(), mem, "t.lance", OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := mem.Counters(); c.Requests() != 3 { // list, tail, head
		t.Fatalf("%+v", c)
	}
	if len(d.Schema().Metadata["big"]) != 200<<10 {
		t.Fatal("metadata lost")
	}
	log, err := Log(t.Context(), mem, "t.lance")
	if err != nil || log[0].Predicate != "x > 1" {
		t.Fatal(log, err)
	}
}

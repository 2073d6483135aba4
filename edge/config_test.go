package main

import (
	"strings"
	"testing"
)

func TestConfigSource(t *testing.T) {
	for _, c := range []struct {
		cfg  config
		want source
		err  string
	}{
		{config{Origin: "https://data.example/repo"}, fromOrigin, ""},
		{config{Origin: "http://127.0.0.1:9/x/", Bucket: true, Prefix: "p"}, fromOrigin, ""}, // the origin wins
		{config{Bucket: true}, fromBucket, ""},
		{config{Bucket: true, Prefix: "/repos/main/"}, fromBucket, ""},
		{config{Origin: "ftp://x/y", Bucket: true}, fromNone, "KV0_ORIGIN"},
		{config{Origin: "/local/path"}, fromNone, "KV0_ORIGIN"},
		{config{Bucket: true, Prefix: "a/../b"}, fromNone, "KV0_PREFIX"},
		{config{Bucket: true, Prefix: "a\\b"}, fromNone, "KV0_PREFIX"},
		{config{Prefix: "p"}, fromNone, "nowhere to read"},
	} {
		got, err := c.cfg.source()
		if got != c.want || (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: source = %v, %v; want %v, error with %q", c.cfg, got, err, c.want, c.err)
		}
	}
	if r := (config{Prefix: " /repos/main/ "}).root(); r != "repos/main" {
		t.Errorf("root = %q", r)
	}
}

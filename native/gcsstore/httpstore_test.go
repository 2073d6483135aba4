package gcsstore_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"testing"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/gcsstore"
)

// jsonSigner hands out fake-gcs-server URLs of the JSON API (media
// downloads and objects.list) for one repository prefix, as a GCS signer
// would: the emulator needs no signature.
type jsonSigner struct {
	endpoint, repo string
}

func (g jsonSigner) Sign(_ context.Context, op httpstore.Op, key string, list httpstore.ListParams) (string, error) {
	base := g.endpoint + "/storage/v1/b/" + bucket + "/o"
	switch op {
	case httpstore.OpGet:
		return g.endpoint + "/download/storage/v1/b/" + bucket + "/o/" + url.PathEscape(g.repo+key) + "?alt=media", nil
	case httpstore.OpList:
		q := url.Values{"prefix": {g.repo + key}}
		if list.StartAfter != "" {
			q.Set("startOffset", g.repo+list.StartAfter)
		}
		if list.ContinuationToken != "" {
			q.Set("pageToken", list.ContinuationToken)
		}
		if list.MaxKeys > 0 {
			q.Set("maxResults", strconv.Itoa(list.MaxKeys))
		}
		return base + "?" + q.Encode(), nil
	}
	return "", fmt.Errorf("cannot sign %v", op)
}

// TestHTTPStoreReadsGCSListing runs the read-only conformance suite on
// httpstore's signed mode over fake-gcs-server: ranged media downloads
// and JSON object lists (whose answers do not repeat the prefix).
func TestHTTPStoreReadsGCSListing(t *testing.T) {
	endpoint, _ := fake(t, nil)
	var n int
	var writer *gcsstore.Store
	storetest.Run(t, func(t *testing.T) store.Store {
		n++
		repo := fmt.Sprintf("httpstore/%d/", n)
		w, err := gcsstore.Open(context.Background(), "gs://"+bucket+"/"+repo, gcsstore.Options{Endpoint: endpoint})
		if err != nil {
			t.Fatal(err)
		}
		writer = w
		s, err := httpstore.OpenSigned(jsonSigner{endpoint: endpoint, repo: repo}, httpstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{ReadOnly: true, Seed: func(t *testing.T, objects map[string][]byte) {
		for k, v := range objects {
			if err := writer.Put(context.Background(), k, v); err != nil {
				t.Fatal(err)
			}
		}
	}})
}

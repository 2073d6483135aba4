package azblobstore_test

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/core/store/storetest"
	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/tests/azure"
)

// sasSigner hands out URLs under one container SAS (read and list) for a
// repository prefix: Get Blob of a key, and List Blobs of a prefix with
// the store's page size and marker. Azurite checks the SAS.
type sasSigner struct {
	container string // the container URL, without query
	query     string // the SAS
	repo      string
}

func (g sasSigner) Sign(_ context.Context, op httpstore.Op, key string, list httpstore.ListParams) (string, error) {
	switch op {
	case httpstore.OpGet:
		return g.container + "/" + (&url.URL{Path: g.repo + key}).EscapedPath() + "?" + g.query, nil
	case httpstore.OpList:
		q := url.Values{"restype": {"container"}, "comp": {"list"}, "prefix": {g.repo + key}}
		if list.ContinuationToken != "" {
			q.Set("marker", list.ContinuationToken)
		}
		if list.MaxKeys > 0 {
			q.Set("maxresults", strconv.Itoa(list.MaxKeys))
		}
		return g.container + "?" + q.Encode() + "&" + g.query, nil
	}
	return "", fmt.Errorf("cannot sign %v", op)
}

// TestHTTPStoreReadsAzureListing runs the read-only conformance suite on
// httpstore's signed mode over Azurite: ranged Get Blob and List Blobs
// answers (EnumerationResults), through a container SAS.
func TestHTTPStoreReadsAzureListing(t *testing.T) {
	azure.Skip(t, server, skipWhy)
	name := newContainer(t)
	c, err := azblobstore.NewContainerClient(name, azblobstore.Options{Account: azure.Account, AccountKey: azure.Key, Endpoint: server.BlobEndpoint})
	if err != nil {
		t.Fatal(err)
	}
	signed, err := c.GetSASURL(sas.ContainerPermissions{Read: true, List: true}, time.Now().Add(time.Hour), nil)
	if err != nil {
		t.Fatal(err)
	}
	base, query, _ := strings.Cut(signed, "?")
	var n int
	var writer *azblobstore.Store
	storetest.Run(t, func(t *testing.T) store.Store {
		n++
		repo := fmt.Sprintf("httpstore/%d/", n)
		writer = open(t, name, repo, azblobstore.Options{})
		s, err := httpstore.OpenSigned(sasSigner{container: base, query: query, repo: repo}, httpstore.Options{})
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
	// Without the SAS the service refuses, and httpstore says forbidden.
	s, err := httpstore.OpenSigned(sasSigner{container: base, query: "sv=2020-01-01", repo: "httpstore/1/"}, httpstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.List(context.Background(), store.ListOptions{}); err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("List with a broken SAS: %v", err)
	}
}

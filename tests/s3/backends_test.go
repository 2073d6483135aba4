package s3

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fsouza/fake-gcs-server/fakestorage"

	"github.com/kv0/kv0/core/store"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/gcsstore"
	"github.com/kv0/kv0/native/location"
	"github.com/kv0/kv0/tests/azure"
)

// backend is an object store the Lance, key-value and tracking suites run
// on: versitygw (S3), fake-gcs-server (GCS, in process) or Azurite (Azure).
type backend struct {
	need   func(testing.TB)
	newURI func(name string) string
	open   func(testing.TB, string) store.Store
	loc    location.Options
}

func s3Backend() backend {
	return backend{need: need, newURI: newURI,
		open: func(t testing.TB, uri string) store.Store { return openStore(t, uri) },
		loc:  location.Options{S3: s3Options()}}
}

var (
	gcsEndpoint string // the in-process fake-gcs-server
	azurite     *azure.Server
	azuriteWhy  string
)

// startCloudEmulators starts fake-gcs-server in process and Azurite (with
// CI=true a missing Azurite exits the test binary) and creates the test
// bucket and container. It returns a function that stops them.
func startCloudEmulators() (func(), error) {
	fake, err := fakestorage.NewServerWithOptions(fakestorage.Options{NoListener: true, PublicHost: "127.0.0.1", Writer: io.Discard})
	if err != nil {
		return nil, fmt.Errorf("fake-gcs-server: %w", err)
	}
	fake.CreateBucketWithOpts(fakestorage.CreateBucketOpts{Name: bucket})
	hs := httptest.NewServer(fake.HTTPHandler())
	gcsEndpoint = hs.URL
	azurite, azuriteWhy = azure.Require()
	stop := func() { hs.Close(); fake.Stop(); azurite.Stop() }
	if azurite != nil {
		c, err := azblobstore.NewContainerClient(bucket, azblobstore.Options{ConnectionString: azurite.ConnectionString})
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_, err = c.Create(ctx, nil)
			cancel()
		}
		if err != nil {
			stop()
			return nil, fmt.Errorf("creating the Azurite container: %w", err)
		}
	}
	return stop, nil
}

func gcsBackend() backend {
	opts := gcsstore.Options{Endpoint: gcsEndpoint, Timeout: time.Minute}
	return backend{
		need:   func(testing.TB) {},
		newURI: func(name string) string { return "gs" + strings.TrimPrefix(newURI(name), "s3") },
		open: func(t testing.TB, uri string) store.Store {
			s, err := gcsstore.Open(context.Background(), uri, opts)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		loc: location.Options{GCS: opts},
	}
}

func azureBackend() backend {
	var opts azblobstore.Options
	if azurite != nil {
		opts = azblobstore.Options{ConnectionString: azurite.ConnectionString, Timeout: time.Minute}
	}
	return backend{
		need:   func(t testing.TB) { t.Helper(); azure.Skip(t, azurite, azuriteWhy) },
		newURI: func(name string) string { return "az" + strings.TrimPrefix(newURI(name), "s3") },
		open: func(t testing.TB, uri string) store.Store {
			s, err := azblobstore.Open(context.Background(), uri, opts)
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		loc: location.Options{Azure: opts},
	}
}

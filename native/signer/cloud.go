package signer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/gcsstore"
)

// GCSSigning selects the key GCS URLs are signed with. Left zero, the
// signer finds one as the client library does: the private key of
// service-account credentials (Application Default Credentials), else
// the IAM Credentials signBlob call as the service account that
// impersonated credentials or the metadata server name.
type GCSSigning struct {
	// GoogleAccessID is the service account's e-mail address.
	GoogleAccessID string
	// PrivateKey is its PEM private key (RSA, PKCS #1 or #8).
	PrivateKey []byte
}

// cloudSigner signs the reads of GCS and Azure repositories; keys are
// full object names (the repository prefix included). start is the
// signing time (the window's start), expires when the URL expires.
type cloudSigner interface {
	get(ctx context.Context, object string, start, expires time.Time) (string, error)
	// list signs a listing of names starting with prefix; repo is the
	// repository prefix StartAfter is relative to.
	list(ctx context.Context, prefix, repo string, list httpstore.ListParams, start, expires time.Time) (string, error)
}

// gcsSigner signs V4 URLs of the XML API: an object GET, and a bucket GET
// with list-type=2 (answered as a ListBucketResult, S3's format).
type gcsSigner struct {
	bucket string
	v4     gcsV4
}

func newGCS(ctx context.Context, uri string, expiry time.Duration, opts Options) (*Signer, error) {
	bucket, prefix, err := gcsstore.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		prefix += "/"
	}
	o := gcsstore.OptionsFromEnv(opts.GCS)
	v := gcsV4{accessID: opts.GCSSigning.GoogleAccessID, host: "storage.googleapis.com"}
	if o.Endpoint != "" {
		// An emulator: sign for its host, as it serves the XML API paths.
		u, err := url.Parse(o.Endpoint)
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("signer: bad GCS endpoint %q", o.Endpoint)
		}
		v.host, v.insecure = u.Host, u.Scheme == "http"
	}
	switch {
	case len(opts.GCSSigning.PrivateKey) > 0:
		if v.accessID == "" {
			return nil, errors.New("signer: a GCS signing key needs its service account's e-mail (GoogleAccessID)")
		}
		if v.sign, err = rsaSigner(opts.GCSSigning.PrivateKey); err != nil {
			return nil, err
		}
	default:
		id, sign, err := detectGCSSigning(ctx)
		if err != nil {
			return nil, err
		}
		if v.accessID == "" {
			v.accessID = id
		}
		v.sign = sign
	}
	return &Signer{prefix: prefix, expiry: expiry, cloud: &gcsSigner{bucket: bucket, v4: v}}, nil
}

func (g *gcsSigner) get(ctx context.Context, object string, start, expires time.Time) (string, error) {
	u, _, _, err := g.v4.signURL(ctx, http.MethodGet, g.bucket, object, nil, start, expires.Sub(start))
	return u, err
}

func (g *gcsSigner) list(ctx context.Context, prefix, repo string, list httpstore.ListParams, start, expires time.Time) (string, error) {
	q := url.Values{"list-type": {"2"}, "prefix": {prefix}}
	if list.StartAfter != "" {
		q.Set("start-after", repo+list.StartAfter)
	}
	if list.ContinuationToken != "" {
		q.Set("continuation-token", list.ContinuationToken)
	}
	if list.MaxKeys > 0 {
		q.Set("max-keys", strconv.Itoa(min(list.MaxKeys, 1000)))
	}
	u, _, _, err := g.v4.signURL(ctx, http.MethodGet, g.bucket, "", q, start, expires.Sub(start))
	return u, err
}

// azureSigner signs SAS URLs with the account's shared key: a blob SAS
// (read) for each Get Blob, and a container SAS (list) for List Blobs.
// A List Blobs SAS cannot be limited to a prefix: it lists the names and
// sizes of the whole container (never the contents, which need a blob's
// own SAS). Keep one repository per container when names must not leak.
type azureSigner struct {
	client *container.Client
}

func newAzure(uri string, expiry time.Duration, opts Options) (*Signer, error) {
	name, prefix, err := azblobstore.ParseURI(uri)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		prefix += "/"
	}
	client, err := azblobstore.NewContainerClient(name, azblobstore.OptionsFromEnv(opts.Azure))
	if err != nil {
		return nil, err
	}
	return &Signer{prefix: prefix, expiry: expiry, cloud: &azureSigner{client: client}}, nil
}

func (a *azureSigner) get(_ context.Context, object string, start, expires time.Time) (string, error) {
	return a.client.NewBlobClient(object).GetSASURL(sas.BlobPermissions{Read: true}, expires, &blob.GetSASURLOptions{StartTime: &start})
}

func (a *azureSigner) list(_ context.Context, prefix, _ string, list httpstore.ListParams, start, expires time.Time) (string, error) {
	signed, err := a.client.GetSASURL(sas.ContainerPermissions{List: true}, expires, &container.GetSASURLOptions{StartTime: &start})
	if err != nil {
		return "", err
	}
	base, sasQuery, _ := strings.Cut(signed, "?")
	q := url.Values{"restype": {"container"}, "comp": {"list"}, "prefix": {prefix}}
	if list.ContinuationToken != "" {
		q.Set("marker", list.ContinuationToken)
	}
	if list.MaxKeys > 0 {
		q.Set("maxresults", strconv.Itoa(min(list.MaxKeys, 5000)))
	}
	return base + "?" + q.Encode() + "&" + sasQuery, nil
}

package signer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/storage"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/sas"

	"github.com/kv0/kv0/httpstore"
	"github.com/kv0/kv0/native/azblobstore"
	"github.com/kv0/kv0/native/gcsstore"
)

// GCSSigning selects the key GCS URLs are signed with. Left zero, the
// client library signs with the service account of the credentials (a
// key file, or the IAM signBlob call of an attached service account).
type GCSSigning struct {
	// GoogleAccessID is the service account's e-mail address.
	GoogleAccessID string
	// PrivateKey is its PEM private key.
	PrivateKey []byte
}

// cloudSigner signs the reads of GCS and Azure repositories; keys are
// full object names (the repository prefix included).
type cloudSigner interface {
	get(ctx context.Context, object string, expires time.Time) (string, error)
	// list signs a listing of names starting with prefix; repo is the
	// repository prefix StartAfter is relative to.
	list(ctx context.Context, prefix, repo string, list httpstore.ListParams, expires time.Time) (string, error)
}

// gcsSigner signs V4 URLs of the XML API: an object GET, and a bucket GET
// with list-type=2 (answered as a ListBucketResult, S3's format).
type gcsSigner struct {
	bucket *storage.BucketHandle
	opts   storage.SignedURLOptions
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
	client, err := gcsstore.NewClient(ctx, o)
	if err != nil {
		return nil, err
	}
	so := storage.SignedURLOptions{
		Scheme:         storage.SigningSchemeV4,
		Method:         http.MethodGet,
		GoogleAccessID: opts.GCSSigning.GoogleAccessID,
		PrivateKey:     opts.GCSSigning.PrivateKey,
	}
	if o.Endpoint != "" {
		// An emulator: sign for its host, as it serves the XML API paths.
		u, err := url.Parse(o.Endpoint)
		if err != nil {
			return nil, fmt.Errorf("signer: bad endpoint %q", o.Endpoint)
		}
		so.Hostname, so.Insecure = u.Host, u.Scheme == "http"
	}
	return &Signer{prefix: prefix, expiry: expiry, cloud: &gcsSigner{bucket: client.Bucket(bucket), opts: so}}, nil
}

func (g *gcsSigner) get(_ context.Context, object string, expires time.Time) (string, error) {
	o := g.opts
	o.Expires = expires
	return g.bucket.SignedURL(object, &o)
}

func (g *gcsSigner) list(_ context.Context, prefix, repo string, list httpstore.ListParams, expires time.Time) (string, error) {
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
	o := g.opts
	o.Expires = expires
	o.QueryParameters = q
	return g.bucket.SignedURL("", &o)
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

func (a *azureSigner) get(_ context.Context, object string, expires time.Time) (string, error) {
	return a.client.NewBlobClient(object).GetSASURL(sas.BlobPermissions{Read: true}, expires, nil)
}

func (a *azureSigner) list(_ context.Context, prefix, _ string, list httpstore.ListParams, expires time.Time) (string, error) {
	signed, err := a.client.GetSASURL(sas.ContainerPermissions{List: true}, expires, nil)
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

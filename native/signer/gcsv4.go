package signer

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"cloud.google.com/go/auth/credentials"
	"cloud.google.com/go/compute/metadata"
	"google.golang.org/api/iamcredentials/v1"
	"google.golang.org/api/option"
)

// gcsV4 signs V4 URLs of the GCS XML API ("GOOG4-RSA-SHA256", path
// style, only the host header signed, UNSIGNED-PAYLOAD) at a signing
// time of the caller's choice, which the client library's SignedURL
// cannot take (it signs at the current second): URLs signed in the same
// window are the same URL, so browsers' caches hit.
type gcsV4 struct {
	accessID string // the service account's e-mail address
	sign     func(ctx context.Context, b []byte) ([]byte, error)
	host     string // storage.googleapis.com, or an emulator's host:port
	insecure bool   // http:// (an emulator)
}

// gcsV4Scope is the credential scope's fixed part.
const gcsV4Scope = "auto/storage/goog4_request"

// escapeV4 percent-encodes s as the V4 canonical form wants: every byte
// but unreserved characters (A-Z a-z 0-9 - . _ ~), a space as %20.
func escapeV4(s string) string {
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// canonicalQueryV4 sorts the parameters by name (then value) and
// joins them escaped.
func canonicalQueryV4(q url.Values) string {
	return strings.ReplaceAll(q.Encode(), "+", "%20")
}

// signURL returns the signed URL of method on object in bucket (the
// bucket itself when object is ""), with the extra query parameters,
// signed at `at` (whole seconds, UTC) for expires; also the canonical
// request and the string to sign, for tests.
func (g *gcsV4) signURL(ctx context.Context, method, bucket, object string, extra url.Values, at time.Time, expires time.Duration) (signed, canonical, toSign string, err error) {
	at = at.UTC()
	secs := int64(expires / time.Second)
	if secs < 1 || secs > int64(MaxExpiry/time.Second) {
		return "", "", "", fmt.Errorf("signer: GCS URL lifetime %v out of range [1s, 7 days]", expires)
	}
	path := bucket
	if object != "" {
		path += "/" + object
	}
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = escapeV4(s)
	}
	rawPath := "/" + strings.Join(segs, "/")
	date := at.Format("20060102")
	stamp := at.Format("20060102T150405Z")
	q := url.Values{
		"X-Goog-Algorithm":     {"GOOG4-RSA-SHA256"},
		"X-Goog-Credential":    {g.accessID + "/" + date + "/" + gcsV4Scope},
		"X-Goog-Date":          {stamp},
		"X-Goog-Expires":       {strconv.FormatInt(secs, 10)},
		"X-Goog-SignedHeaders": {"host"},
	}
	for k, vs := range extra {
		q[k] = append(q[k], vs...)
	}
	query := canonicalQueryV4(q)
	// The host header is signed without a port (as Google's reference
	// signers do).
	hostname := g.host
	if h, _, err := net.SplitHostPort(g.host); err == nil {
		hostname = h
	}
	canonical = method + "\n" + rawPath + "\n" + query + "\nhost:" + hostname + "\n\nhost\nUNSIGNED-PAYLOAD"
	sum := sha256.Sum256([]byte(canonical))
	toSign = "GOOG4-RSA-SHA256\n" + stamp + "\n" + date + "/" + gcsV4Scope + "\n" + hex.EncodeToString(sum[:])
	sig, err := g.sign(ctx, []byte(toSign))
	if err != nil {
		return "", "", "", err
	}
	scheme := "https"
	if g.insecure {
		scheme = "http"
	}
	return scheme + "://" + g.host + rawPath + "?" + query + "&X-Goog-Signature=" + hex.EncodeToString(sig), canonical, toSign, nil
}

// rsaSigner signs with a PEM private key (PKCS #1 or PKCS #8 RSA),
// RSASSA-PKCS1-v1_5 over SHA-256.
func rsaSigner(pemKey []byte) (func(context.Context, []byte) ([]byte, error), error) {
	block, _ := pem.Decode(pemKey)
	der := pemKey
	if block != nil {
		der = block.Bytes
	}
	var key *rsa.PrivateKey
	if k, err := x509.ParsePKCS1PrivateKey(der); err == nil {
		key = k
	} else if k, err := x509.ParsePKCS8PrivateKey(der); err == nil {
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, errors.New("signer: the GCS signing key is not an RSA key")
		}
		key = rk
	} else {
		return nil, errors.New("signer: the GCS signing key is not a PEM RSA private key")
	}
	return func(_ context.Context, b []byte) ([]byte, error) {
		sum := sha256.Sum256(b)
		return rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	}, nil
}

// iamClientOptions are added to the IAM Credentials client's options
// (tests point it at a fake service).
var iamClientOptions []option.ClientOption

// detectGCSSigning finds how to sign when no key is given, as the
// client library does: the private key of service-account credentials
// (Application Default Credentials from a key file), else the IAM
// Credentials signBlob call as the service account that impersonated or
// external-account credentials name, or that the metadata server of a
// GCE/GKE/Cloud Run host reports.
func detectGCSSigning(ctx context.Context) (accessID string, sign func(context.Context, []byte) ([]byte, error), err error) {
	creds, err := credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}})
	if err != nil {
		return "", nil, fmt.Errorf("signer: GCS signing needs a service account key or credentials: %w", err)
	}
	if j := creds.JSON(); len(j) > 0 {
		var sa struct {
			Type             string `json:"type"`
			ClientEmail      string `json:"client_email"`
			PrivateKey       string `json:"private_key"`
			ImpersonationURL string `json:"service_account_impersonation_url"`
		}
		if err := json.Unmarshal(j, &sa); err != nil {
			return "", nil, fmt.Errorf("signer: unreadable GCS credentials: %w", err)
		}
		switch sa.Type {
		case "service_account":
			if sa.ClientEmail == "" || sa.PrivateKey == "" {
				return "", nil, errors.New("signer: the service account credentials have no client_email or private_key")
			}
			sign, err := rsaSigner([]byte(sa.PrivateKey))
			return sa.ClientEmail, sign, err
		case "impersonated_service_account", "external_account":
			// .../serviceAccounts/EMAIL:generateAccessToken
			u := sa.ImpersonationURL
			start, end := strings.LastIndex(u, "/"), strings.LastIndex(u, ":")
			if end <= start {
				return "", nil, errors.New("signer: cannot find the service account of the impersonation URL")
			}
			accessID = u[start+1 : end]
		default:
			return "", nil, fmt.Errorf("signer: GCS signing cannot use %q credentials (give a service account key)", sa.Type)
		}
	} else if metadata.OnGCE() {
		if accessID, err = metadata.EmailWithContext(ctx, "default"); err != nil || accessID == "" {
			return "", nil, fmt.Errorf("signer: no service account e-mail from the metadata server: %v", err)
		}
	} else {
		return "", nil, errors.New("signer: GCS signing needs a service account key (credentials of type service_account) or a service account to impersonate")
	}
	svc, err := iamcredentials.NewService(ctx, append([]option.ClientOption{option.WithAuthCredentials(creds)}, iamClientOptions...)...)
	if err != nil {
		return "", nil, fmt.Errorf("signer: IAM credentials client: %w", err)
	}
	name := "projects/-/serviceAccounts/" + accessID
	return accessID, func(ctx context.Context, b []byte) ([]byte, error) {
		resp, err := svc.Projects.ServiceAccounts.SignBlob(name, &iamcredentials.SignBlobRequest{
			Payload: base64.StdEncoding.EncodeToString(b)}).Context(ctx).Do()
		if err != nil {
			return nil, fmt.Errorf("signBlob as %s: %w", accessID, err)
		}
		return base64.StdEncoding.DecodeString(resp.SignedBlob)
	}, nil
}

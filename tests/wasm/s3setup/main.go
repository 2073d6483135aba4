// Command s3setup prepares the bucket of the wasm suites' signed mode: it
// creates the bucket, sets the CORS rules a browser reader needs (see
// docs/object-stores.md) for one origin, and uploads a local folder under a
// prefix, marking the objects Lance never rewrites (data files, version
// manifests, deletion and transaction files) cacheable for a year, as
// docs/object-stores.md advises, so a browser's HTTP cache serves them
// again under the same presigned URL. Credentials come from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
//
//	s3setup -endpoint http://127.0.0.1:7070 -bucket B -origin http://127.0.0.1:PORT -dir DIR -prefix P
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/kv0/kv0/native/s3store"
)

func main() {
	endpoint := flag.String("endpoint", "", "S3 endpoint URL")
	bucket := flag.String("bucket", "", "bucket to create")
	origin := flag.String("origin", "", "origin the CORS rule allows")
	dir := flag.String("dir", "", "folder to upload")
	prefix := flag.String("prefix", "", "key prefix of the upload")
	flag.Parse()
	if err := setup(*endpoint, *bucket, *origin, *dir, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "s3setup:", err)
		os.Exit(1)
	}
}

func setup(endpoint, bucket, origin, dir, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client, err := s3store.NewClient(ctx, s3store.Options{Endpoint: endpoint, Region: "us-east-1",
		AccessKey: os.Getenv("AWS_ACCESS_KEY_ID"), Secret: os.Getenv("AWS_SECRET_ACCESS_KEY"), PathStyle: true, AllowHTTP: true, Timeout: time.Minute})
	if err != nil {
		return err
	}
	if _, err := client.CreateBucket(ctx, &awss3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("create bucket: %w", err)
	}
	_, err = client.PutBucketCors(ctx, &awss3.PutBucketCorsInput{Bucket: aws.String(bucket), CORSConfiguration: &types.CORSConfiguration{
		CORSRules: []types.CORSRule{{
			AllowedOrigins: []string{origin},
			AllowedMethods: []string{"GET"},
			AllowedHeaders: []string{"Range"},
			ExposeHeaders:  []string{"Content-Range", "Content-Length", "ETag"},
			MaxAgeSeconds:  aws.Int32(3600),
		}},
	}})
	if err != nil {
		return fmt.Errorf("put bucket CORS: %w", err)
	}
	return upload(ctx, client, bucket, dir, prefix)
}

// upload puts every file under dir (following symbolic links) at prefix.
func upload(ctx context.Context, client *awss3.Client, bucket, dir, prefix string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		key := prefix + "/" + e.Name()
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if info.IsDir() {
			if err := upload(ctx, client, bucket, path, key); err != nil {
				return err
			}
			continue
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		in := &awss3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}
		if immutable(key) {
			in.CacheControl = aws.String("public, max-age=31536000, immutable")
		}
		if _, err := client.PutObject(ctx, in); err != nil {
			return fmt.Errorf("put %s: %w", key, err)
		}
	}
	return nil
}

// immutable reports whether key is an object Lance writes once and never
// changes: a data, deletion or transaction file, or a version's manifest
// (not latest_version_hint.json, which each commit rewrites).
func immutable(key string) bool {
	dir, name := path.Split(key)
	switch path.Base(dir) {
	case "data", "_deletions", "_transactions":
		return true
	case "_versions":
		return strings.HasSuffix(name, ".manifest")
	}
	return false
}

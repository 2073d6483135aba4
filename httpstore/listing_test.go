package httpstore

import "testing"

// TestParseListing reads the three listing formats signed list URLs
// return: S3 (and GCS XML) ListBucketResult, Azure EnumerationResults and
// GCS JSON, whose prefix comes from the URL.
func TestParseListing(t *testing.T) {
	for _, c := range []struct {
		name, url, body string
		prefix, token   string
		keys            []string
		sizes           []int64
	}{
		{"s3", "http://h/b?list-type=2&prefix=r%2Fv%2F",
			`<?xml version="1.0"?><ListBucketResult><Prefix>r/v/</Prefix><IsTruncated>true</IsTruncated><NextContinuationToken>tok</NextContinuationToken><Contents><Key>r/v/1</Key><Size>5</Size></Contents></ListBucketResult>`,
			"r/v/", "tok", []string{"r/v/1"}, []int64{5}},
		{"azure", "http://h/acct/c?restype=container&comp=list&prefix=r%2Fv%2F",
			`<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://h/acct" ContainerName="c"><Prefix>r/v/</Prefix><MaxResults>2</MaxResults><Blobs><Blob><Name>r/v/1</Name><Properties><Content-Length>7</Content-Length></Properties></Blob><Blob><Name>r/v/2</Name><Properties><Content-Length>0</Content-Length></Properties></Blob></Blobs><NextMarker>m2</NextMarker></EnumerationResults>`,
			"r/v/", "m2", []string{"r/v/1", "r/v/2"}, []int64{7, 0}},
		{"azure last page", "http://h/acct/c?comp=list&prefix=",
			`<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>`, "", "", nil, nil},
		{"gcs json", "http://h/storage/v1/b/b/o?prefix=r%2Fv%2F&maxResults=2",
			` {"kind":"storage#objects","items":[{"name":"r/v/1","size":"12"}],"nextPageToken":"p2"}`,
			"r/v/", "p2", []string{"r/v/1"}, []int64{12}},
	} {
		res, err := parseListing(c.url, []byte(c.body))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if res.Prefix != c.prefix || res.NextContinuationToken != c.token || res.IsTruncated != (c.token != "") || len(res.Contents) != len(c.keys) {
			t.Fatalf("%s: %+v", c.name, res)
		}
		for i, k := range c.keys {
			if res.Contents[i].Key != k || res.Contents[i].Size != c.sizes[i] {
				t.Fatalf("%s: entry %d = %+v", c.name, i, res.Contents[i])
			}
		}
	}
	for _, body := range []string{`{"items":[{"name":"a","size":"-1"}]}`, `{"items":[{"name":"a","size":"x"}]}`, `{"items":`, `<EnumerationResults><Blobs>`, `<ListBucketResult>`, ``,
		`<EnumerationResults><Blobs><Blob><Name>a</Name><Properties><Content-Length>-4</Content-Length></Properties></Blob></Blobs></EnumerationResults>`} {
		if _, err := parseListing("http://h/?prefix=", []byte(body)); err == nil {
			t.Errorf("parseListing(%q): no error", body)
		}
	}
	if _, ok := pastEndRange("bytes 0--1/0"); !ok {
		t.Error(`pastEndRange("bytes 0--1/0")`)
	}
	if _, ok := pastEndRange("bytes 0-1/2"); ok {
		t.Error(`pastEndRange("bytes 0-1/2")`)
	}
}

// FuzzParseListing: any answer parses or fails with an error, never a
// panic, and parsed sizes are never negative.
func FuzzParseListing(f *testing.F) {
	f.Add("http://h/?prefix=a", `{"items":[{"name":"a/1","size":"3"}],"nextPageToken":"t"}`)
	f.Add("http://h/", `<EnumerationResults><Prefix>a</Prefix><Blobs><Blob><Name>a/1</Name><Properties><Content-Length>3</Content-Length></Properties></Blob></Blobs></EnumerationResults>`)
	f.Add("http://h/", `<ListBucketResult><Contents><Key>k</Key><Size>1</Size></Contents></ListBucketResult>`)
	f.Fuzz(func(t *testing.T, u, body string) {
		res, err := parseListing(u, []byte(body))
		if err != nil {
			if res != nil {
				t.Fatal("a result with an error")
			}
			return
		}
		for _, c := range res.Contents {
			if c.Size < 0 {
				t.Fatalf("negative size %d", c.Size)
			}
		}
	})
}

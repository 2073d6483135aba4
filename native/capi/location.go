package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kv0/kv0/native/location"
)

// locationOptions turns storage_options (the names lance and object_store
// use) into location options. Unknown names are ignored: the bag is
// permissive, like the engine options.
func locationOptions(so map[string]any) (location.Options, error) {
	var o location.Options
	for k, v := range so {
		s := fmt.Sprint(v)
		switch strings.ToLower(k) {
		case "aws_endpoint", "aws_endpoint_url", "endpoint", "endpoint_url":
			o.S3.Endpoint = s
		case "aws_region", "region", "aws_default_region":
			o.S3.Region = s
		case "aws_access_key_id", "access_key_id":
			o.S3.AccessKey = s
		case "aws_secret_access_key", "secret_access_key":
			o.S3.Secret = s
		case "aws_session_token", "session_token", "aws_token", "token":
			o.S3.SessionToken = s
		case "aws_profile", "profile":
			o.S3.Profile = s
		case "allow_http", "aws_allow_http":
			b, err := strconv.ParseBool(s)
			if err != nil {
				return o, fmt.Errorf("%w: storage option %s=%q is not a boolean", errInvalidArg, k, s)
			}
			o.S3.AllowHTTP = b
		case "aws_virtual_hosted_style_request", "virtual_hosted_style_request":
			b, err := strconv.ParseBool(s)
			if err != nil {
				return o, fmt.Errorf("%w: storage option %s=%q is not a boolean", errInvalidArg, k, s)
			}
			o.S3.PathStyle = !b
		case "aws_path_style", "path_style", "force_path_style":
			b, err := strconv.ParseBool(s)
			if err != nil {
				return o, fmt.Errorf("%w: storage option %s=%q is not a boolean", errInvalidArg, k, s)
			}
			o.S3.PathStyle = b
		}
	}
	return o, nil
}

//go:build !linux

package wal

import (
	"errors"
	"os"
)

func mapSegment(string, int) (*os.File, []byte, error) {
	return nil, nil, errors.New("wal: mapped segments need Linux")
}

func unmapSegment([]byte) error { return nil }

const canMap = false

func mapFile(string) ([]byte, func(), error) {
	return nil, nil, errors.New("wal: mapped files need Linux")
}

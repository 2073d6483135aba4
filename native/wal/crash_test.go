package wal

func crashChild() {}

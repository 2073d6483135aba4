// The result record of every kv0 C ABI call (see main.go).
#ifndef KV0_OUT_H
#define KV0_OUT_H
#include <stdint.h>
#include <stdlib.h>
#include <pthread.h>

// kv0_thread names the calling thread (for errors kept per thread).
static inline uint64_t kv0_thread(void) { return (uint64_t)pthread_self(); }

typedef struct {
	void   *data; // malloc'ed result or error message, or NULL; free with kv0_free
	int64_t len;  // length of data in bytes
	int64_t num;  // a handle, count or flag, per call
} kv0_out;
#endif

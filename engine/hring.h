/* A job's completions handed to it by whichever job polled their shared
 * queue pair (qpairs_shared=): a ring of pointers, one producer at a time
 * (the jobs that poll the pair do so under its lock) and one consumer (the
 * owning job), without a lock between them. Sized once, before any I/O. */
#ifndef HRING_H
#define HRING_H
#include <stdbool.h>
#include <stdint.h>

struct hring {
	void **slot;
	uint32_t mask;          /* slots - 1: a power of two */
	uint32_t head, tail;    /* free-running: head the producer's, tail the consumer's */
};

/* At least `cap` entries. 0, or -1 out of memory. */
int hring_init(struct hring *r, uint32_t cap);
void hring_free(struct hring *r);
/* The producer: false when full (nothing is overwritten). */
bool hring_push(struct hring *r, void *p);
/* The consumer: the oldest entry, or NULL when empty. */
void *hring_pop(struct hring *r);
/* Entries waiting (either side may ask; the answer may be stale at once). */
uint32_t hring_count(const struct hring *r);

#endif

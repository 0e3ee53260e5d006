/* A registry of what the jobs of one process share, each thing made once,
 * by the first job to ask for it, and counted by the jobs holding it
 * (qpairs_shared='s queue pairs, keyed by their controller). The making
 * (connects, which may wait for a slow target up to their timeouts)
 * happens outside the registry's lock: a lookup of another key never waits
 * for it, and one of the same key waits for its outcome, up to a deadline
 * that the maker moves forward as it makes progress (shreg_progress): a
 * waiter gives up only on a maker that stopped getting anywhere. */
#ifndef SHREG_H
#define SHREG_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum shreg_state { SHREG_MAKING, SHREG_MADE, SHREG_UNMADE };

/* The head of each entry: the caller's own struct starts with one. */
struct shreg_entry {
	struct shreg_entry *next;
	const void *key;
	enum shreg_state state;   /* under the registry's lock */
	unsigned int refs;        /* the maker and the waiters count, as the holders */
	pthread_cond_t made;      /* (monotonic) the maker's outcome or progress, for the waiters */
	uint64_t deadline_ms;     /* (CLOCK_MONOTONIC) the latest the maker said it would be done by */
	int err;                  /* a failed make's error code (the caller's kind), for the waiters */
	char why[640];            /* a failed make's message (the library's, 512 at most, and what failed) */
};

struct shreg {
	pthread_mutex_t lock;
	struct shreg_entry *head;
};
#define SHREG_INIT {.lock = PTHREAD_MUTEX_INITIALIZER, .head = NULL}

/* What shreg_get found. */
enum {
	SHREG_MAKE = 1,       /* none: *out is new (size bytes, zeroed, its head set up), the caller's to
			       * make outside the lock and then shreg_publish */
	SHREG_GOT = 0,        /* a made one, *out, held */
	SHREG_ENOMEM = -1,    /* none could be made */
	SHREG_FAILED = -2,    /* the make this lookup waited for failed: why holds its message, *err its code */
	SHREG_TIMEDOUT = -3,  /* the make passed its deadline without progress: given up (it goes on) */
};

/* key's entry, held (one reference). A new one's first deadline is
 * wait_ms from now. One being made is waited for until wait_ms from now or
 * the maker's deadline, whichever is later, that deadline followed as the
 * maker moves it. On a negative answer nothing is held. err may be NULL. */
int shreg_get(struct shreg *r, const void *key, size_t size, uint64_t wait_ms, struct shreg_entry **out,
	      char *why, size_t len, int *err);
/* The maker's progress: it expects to be done (or to call this again)
 * within wait_ms from now; its waiters wait at least that long. */
void shreg_progress(struct shreg *r, struct shreg_entry *e, uint64_t wait_ms);
/* The maker's outcome. why NULL: made, and the waiters get it. Else the
 * make failed with err (the caller has released what it made): each
 * waiter is told err and why, the entry leaves the registry at once (the
 * next lookup makes another) and the maker's reference goes; the last
 * holder frees it. */
void shreg_publish(struct shreg *r, struct shreg_entry *e, int err, const char *why);
/* Lets go of a reference. true: the last, the entry out of the registry:
 * the caller releases what it holds, then shreg_free. */
bool shreg_put(struct shreg *r, struct shreg_entry *e);
void shreg_free(struct shreg_entry *e);

#endif

/* The registry of shared things (shreg.h). An entry is in the list from
 * its lookup's reservation until its last holder lets go, or until its
 * make fails: a failed entry lives on, out of the list, only for the
 * waiters that still have to read why. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "shreg.h"

static void unlink_entry(struct shreg *r, struct shreg_entry *e)
{
	for (struct shreg_entry **pp = &r->head; *pp; pp = &(*pp)->next)
		if (*pp == e) {
			*pp = e->next;
			return;
		}
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct shreg_entry *reserve(struct shreg *r, const void *key, size_t size, uint64_t wait_ms)
{
	struct shreg_entry *e = calloc(1, size < sizeof(*e) ? sizeof(*e) : size);
	if (!e)
		return NULL;
	e->key = key;
	e->state = SHREG_MAKING;
	e->refs = 1;
	e->deadline_ms = mono_ms() + wait_ms;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	/* the waiters' deadline, whatever the wall clock does */
	int rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(&e->made, &ca);
	pthread_condattr_destroy(&ca);
	if (rc) {
		free(e);
		return NULL;
	}
	e->next = r->head;
	r->head = e;
	return e;
}

int shreg_get(struct shreg *r, const void *key, size_t size, uint64_t wait_ms, struct shreg_entry **out,
	      char *why, size_t len, int *err)
{
	struct shreg_entry *e;
	*out = NULL;
	pthread_mutex_lock(&r->lock);
	for (e = r->head; e && e->key != key; e = e->next)
		;
	if (!e) {
		e = reserve(r, key, size, wait_ms);
		pthread_mutex_unlock(&r->lock);
		*out = e;
		return e ? SHREG_MAKE : SHREG_ENOMEM;
	}
	e->refs++; /* held while it waits: a failed make's entry outlives its maker */
	uint64_t own = mono_ms() + wait_ms;
	while (e->state == SHREG_MAKING) {
		/* read again at each wake-up: the maker's progress moves it */
		uint64_t end = e->deadline_ms > own ? e->deadline_ms : own;
		struct timespec until = {.tv_sec = (time_t)(end / 1000), .tv_nsec = (long)(end % 1000) * 1000000L};
		if (pthread_cond_timedwait(&e->made, &r->lock, &until) == ETIMEDOUT && e->state == SHREG_MAKING &&
		    e->deadline_ms <= end)
			break;
	}
	if (e->state == SHREG_MADE) {
		pthread_mutex_unlock(&r->lock);
		*out = e;
		return SHREG_GOT;
	}
	int rc = e->state == SHREG_UNMADE ? SHREG_FAILED : SHREG_TIMEDOUT;
	if (rc == SHREG_FAILED && len)
		snprintf(why, len, "%s", e->why);
	if (rc == SHREG_FAILED && err)
		*err = e->err;
	/* the maker holds a making entry: only a failed one can be let go last */
	bool last = --e->refs == 0;
	pthread_mutex_unlock(&r->lock);
	if (last)
		shreg_free(e);
	return rc;
}

void shreg_progress(struct shreg *r, struct shreg_entry *e, uint64_t wait_ms)
{
	pthread_mutex_lock(&r->lock);
	e->deadline_ms = mono_ms() + wait_ms;
	pthread_cond_broadcast(&e->made);
	pthread_mutex_unlock(&r->lock);
}

void shreg_publish(struct shreg *r, struct shreg_entry *e, int err, const char *why)
{
	bool last = false;
	pthread_mutex_lock(&r->lock);
	if (!why) {
		e->state = SHREG_MADE;
	} else {
		e->state = SHREG_UNMADE;
		e->err = err;
		snprintf(e->why, sizeof(e->why), "%s", why);
		unlink_entry(r, e);
		last = --e->refs == 0;
	}
	pthread_cond_broadcast(&e->made);
	pthread_mutex_unlock(&r->lock);
	if (last)
		shreg_free(e);
}

bool shreg_put(struct shreg *r, struct shreg_entry *e)
{
	pthread_mutex_lock(&r->lock);
	bool last = --e->refs == 0;
	if (last)
		unlink_entry(r, e);
	pthread_mutex_unlock(&r->lock);
	return last;
}

void shreg_free(struct shreg_entry *e)
{
	pthread_cond_destroy(&e->made);
	free(e);
}

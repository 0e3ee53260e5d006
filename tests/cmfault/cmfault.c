/*
 * TEST ONLY: faults in the RDMA CM's answer to a connect, which the real
 * target cannot be made to give on purpose: a CM connect whose
 * ESTABLISHED event turns into a CONNECT_ERROR (a failure the connect
 * retries), or never comes (silence, until the step's timeout). It stands
 * in for librdmacm's rdma_get_cm_event and passes every other event, and
 * every event once its faults are spent, through unchanged.
 * A third fault: a target that never answers our disconnect request
 * (cmfault_mute_disconnect): every DISCONNECTED event is taken and never
 * handed on, as if the target's answer were lost. cmfault_events_asked()
 * counts the calling thread's requests for an event: a close that waited
 * for that answer would ask for it.
 *
 * Two ways in:
 *  - libcmfault.so, preloaded (LD_PRELOAD) into a whole program (fio with
 *    the engine): NVMEOF_CMFAULT="SKIP,N,error|silent" lets the process's
 *    first SKIP ESTABLISHED events through, then faults the next N. Read
 *    at the process's first CM event: a forked child that had none yet
 *    (fio's probe, a job's process) counts from the start on its own.
 *  - linked into a test program (target_core), whose calls into the
 *    library it then takes: cmfault_arm(SKIP, N, silent) sets the same,
 *    counting anew; cmfault_left() says how many faults are still to come.
 * Never linked into anything shipped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_cma.h>

void cmfault_arm(unsigned skip, unsigned n, bool silent);
unsigned cmfault_left(void);
void cmfault_mute_disconnect(bool on);
unsigned cmfault_events_asked(void);

static __thread unsigned asked; /* this thread's calls of rdma_get_cm_event */
unsigned cmfault_events_asked(void) { return asked; }

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool armed, silent, mute_disc;
static unsigned skip, left;

void cmfault_arm(unsigned s, unsigned n, bool quiet)
{
	pthread_mutex_lock(&lock);
	armed = true;
	skip = s;
	left = n;
	silent = quiet;
	pthread_mutex_unlock(&lock);
}

unsigned cmfault_left(void)
{
	pthread_mutex_lock(&lock);
	unsigned n = left;
	pthread_mutex_unlock(&lock);
	return n;
}

void cmfault_mute_disconnect(bool on)
{
	__atomic_store_n(&mute_disc, on, __ATOMIC_RELAXED);
}

/* the environment's setting, at the first event (unless armed already) */
static void from_env(void)
{
	const char *e = getenv("NVMEOF_CMFAULT");
	char mode[16] = "";
	unsigned s = 0, n = 0;
	armed = true;
	if (!e || sscanf(e, "%u,%u,%15s", &s, &n, mode) != 3)
		return;
	skip = s;
	left = n;
	silent = !strcmp(mode, "silent");
}

/* Whether this ESTABLISHED event is one to fault. */
static bool fault_this(void)
{
	bool f = false;
	pthread_mutex_lock(&lock);
	if (!armed)
		from_env();
	if (skip)
		skip--;
	else if (left) {
		left--;
		f = true;
	}
	pthread_mutex_unlock(&lock);
	return f;
}

int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **ev)
{
	typedef int (*get_fn)(struct rdma_event_channel *, struct rdma_cm_event **);
	static get_fn next; /* several threads connect at once (reconnects) */
	get_fn f = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
	asked++;
	if (!f) {
		f = (get_fn)dlsym(RTLD_NEXT, "rdma_get_cm_event");
		__atomic_store_n(&next, f, __ATOMIC_RELEASE);
	}
	int rc = f(ch, ev);
	if (!rc && (*ev)->event == RDMA_CM_EVENT_DISCONNECTED && __atomic_load_n(&mute_disc, __ATOMIC_RELAXED)) {
		rdma_ack_cm_event(*ev); /* the answer never came */
		*ev = NULL;
		errno = EAGAIN;
		return -1;
	}
	if (rc || (*ev)->event != RDMA_CM_EVENT_ESTABLISHED || !fault_this())
		return rc;
	if (!silent) {
		(*ev)->event = RDMA_CM_EVENT_CONNECT_ERROR;
		(*ev)->status = -ETIMEDOUT;
		return 0;
	}
	/* silence: the event is taken and nothing is said; the library's
	 * channel is non-blocking, so "nothing yet" is EAGAIN */
	rdma_ack_cm_event(*ev);
	*ev = NULL;
	errno = EAGAIN;
	return -1;
}

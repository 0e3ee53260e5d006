/*
 * Asynchronous events. Asynchronous Event Requests stay outstanding on the
 * admin queue (no command timeout: the target answers only when something
 * happens). Their completions arrive in whatever poll of the admin queue
 * runs next, always under the admin lock: the keep-alive thread's commands,
 * a user's admin call, or the event thread below, which polls every
 * POLL_MS whether or not KATO is set (with KATO 0 nothing else would look).
 * The completion callback only records the event and re-issues the AER;
 * the event thread then reads the log page the event names (which also
 * lets the next event of its kind come), for a namespace change updates
 * the namespace table, and calls the user's callback with no lock held.
 * The library's own owners (a multipath per namespace) are listeners: a
 * controller's events go to each, so the multipaths of two namespaces can
 * share the same controllers.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "adminio.h"
#include "aer.h"
#include "ctrl.h"
#include "internal.h"
#include "protocol.h"
#include "queue.h"
#include "util.h"

#define POLL_MS 20
#define RING 64
#define RETRY_MS 1000

struct listener {
	nvmeof_event_cb cb;
	void *arg;
	uint32_t key; /* what the listener follows (a multipath's NSID): one each */
	bool calling; /* its callback runs now: the entry is not reused until it returns */
};

/* Test-only fault: this many AER submissions fail as if no slot were free
 * (0 in use: nothing sets it but a test). */
uint32_t aer_fault_submits;

struct aer {
	struct nvmeof_ctrl *c;
	struct listener l[AER_LISTENERS]; /* under lock; cb NULL: free */
	bool user;                  /* nvmeof_ctrl_events' callback: the events are its alone */
	uint8_t sqe[NVME_SQE_SIZE]; /* copied into a slot at each issue */
	/* under the admin lock (callbacks run in admin queue polls) */
	uint32_t want, outstanding;
	bool need_config;
	uint64_t next_try_ms;
	/* under lock */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop, running;
	uint32_t ring[RING], head, n;
	uint64_t lost, delivered;
	pthread_t thread;
};

static void aer_done(void *arg, const struct nvmeof_cpl *cpl);

static bool fault_now(void)
{
	uint32_t n = __atomic_load_n(&aer_fault_submits, __ATOMIC_RELAXED);
	while (n && !__atomic_compare_exchange_n(&aer_fault_submits, &n, n - 1, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	return n != 0;
}

/* Admin lock held. Only while the controller is live: an event request is
 * a command on the association, and one sent after an I/O queue's loss
 * ended it (the fence due, from an answered event's re-arm or after
 * configure()) would keep the old controller's keep-alive timer satisfied. */
static void submit_aers(struct aer *a)
{
	struct nvmeof_queue *aq = ctrl_admin(a->c);
	if (!ctrl_may(a->c, CTRL_DO_EVENTS))
		return;
	while (a->outstanding < a->want && q_connected(aq)) {
		if (fault_now() ||
		    q_submit_aer(aq, a->sqe, aer_done, a))
			break; /* no slot now: the next tick tries again */
		a->outstanding++;
	}
}

static void aer_done(void *arg, const struct nvmeof_cpl *cpl)
{
	struct aer *a = arg;
	a->outstanding--;
	if (cpl->err) {
		/* Connection loss or reset (the features are gone with the
		 * association), shutdown, or "AER Limit Exceeded". */
		if (cpl->err == NVMEOF_ENVME && nvme_status_code(cpl->status) == NVME_SC_AER_LIMIT &&
		    a->want > 1)
			a->want--;
		else
			a->need_config = true;
		return;
	}
	pthread_mutex_lock(&a->lock);
	if (a->n < RING)
		a->ring[(a->head + a->n++) % RING] = cpl->cdw0;
	else
		a->lost++;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	submit_aers(a);
}

/* Set Features Asynchronous Event Configuration; admin lock held. */
static int configure(struct aer *a)
{
	const struct nvmeof_ctrl_info *ci = nvmeof_ctrl_info(a->c);
	struct nvmeof_queue *aq = ctrl_admin(a->c);
	uint8_t sqe[NVME_SQE_SIZE];
	struct nvmeof_cpl cpl;
	nvme_sqe_set_features(sqe, 0, NVME_FEAT_ASYNC_EVENT, nvme_aec_cdw11(ci->oaes));
	int rc = q_exec(aq, sqe, 0, ctrl_cmd_timeout(a->c), &cpl);
	if (rc == NVMEOF_ENVME && nvme_status_code(cpl.status) == NVME_SC_INVALID_FIELD) {
		/* Invalid Field: a controller (a discovery one) without SMART warnings */
		nvme_sqe_set_features(sqe, 0, NVME_FEAT_ASYNC_EVENT, nvme_aec_cdw11(ci->oaes) & ~0x1fu);
		rc = q_exec(aq, sqe, 0, ctrl_cmd_timeout(a->c), &cpl);
	}
	if (rc)
		return nvmeof_err_prefix(rc, "Set Features Asynchronous Event Configuration");
	a->need_config = false;
	return 0;
}

/* The controller reports no further event of a kind until the host reads
 * the log page the last one named with RAE cleared (NVMe base,
 * Asynchronous Event Request; nvmet masks the kind until then), and the
 * user's own reads keep RAE set. So the log is read here, before the
 * callback: a change after this read brings a new event. A read that fails
 * leaves the kind masked; that is a lost association in practice, and the
 * new one starts unmasked. */
static void rearm(struct aer *a, uint8_t lid)
{
	struct nvmeof_ctrl_info ci; /* a copy: a reassociation may rewrite the controller's */
	uint32_t ana_len = 0;
	if (nvmeof_ctrl_get_info(a->c, &ci))
		return;
	if (lid == NVMEOF_LOG_ANA) {
		uint8_t *id = malloc(NVME_IDENTIFY_SIZE);
		if (id && !nvmeof_identify(a->c, NVME_CNS_CTRL, 0, id))
			ana_len = nvme_ana_log_len(id);
		free(id);
	}
	uint32_t len = nvme_aer_log_len(lid, ci.elpe, ana_len);
	uint8_t *buf = len ? malloc(len) : NULL;
	if (!buf)
		return;
	struct nvmeof_log_req r = {.lid = lid, .rae = false};
	nvmeof_get_log_page(a->c, &r, buf, len);
	free(buf);
}

static void deliver(struct aer *a, uint32_t dw0)
{
	struct nvmeof_event ev;
	nvme_aer_decode(dw0, &ev);
	if (ev.type == NVMEOF_AER_NOTICE && ev.info == NVMEOF_AER_NOTICE_NS_CHANGED) {
		uint32_t ids[NVME_NS_LIST_MAX];
		bool ovf = false;
		/* the list both re-arms the event and says what to rescan */
		if (!nvmeof_get_log_changed_ns(a->c, false, ids, NVME_NS_LIST_MAX, &ev.nchanged, &ovf)) {
			ev.changed_overflow = ovf;
			memcpy(ev.changed, ids, (ev.nchanged < 16 ? ev.nchanged : 16) * sizeof(ids[0]));
			admin_ns_rescan(a->c, ovf ? NULL : ids, ev.nchanged);
		} else {
			admin_ns_rescan(a->c, NULL, 0);
		}
	} else {
		rearm(a, ev.lid);
	}
	/* Each listener as it is now (one detached meanwhile is skipped), marked
	 * while its callback runs: a detach waits for its own listener's call,
	 * never for another's. */
	pthread_mutex_lock(&a->lock);
	for (int i = 0; i < AER_LISTENERS; i++) {
		struct listener l = a->l[i];
		if (!l.cb)
			continue;
		a->l[i].calling = true;
		pthread_mutex_unlock(&a->lock);
		l.cb(l.arg, &ev);
		pthread_mutex_lock(&a->lock);
		a->l[i].calling = false;
		pthread_cond_broadcast(&a->cond);
	}
	a->delivered++;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->lock);
}

static void *aer_main(void *arg)
{
	struct aer *a = arg;
	pthread_mutex_t *alock = ctrl_admin_lock(a->c);
	struct nvmeof_queue *aq = ctrl_admin(a->c);
	for (;;) {
		ctrl_admin_take(a->c); /* a due fence first (cstate.c) */
		if (ctrl_may(a->c, CTRL_DO_EVENTS) && q_connected(aq)) {
			uint64_t now = nvmeof_now_ms();
			if (a->need_config && now >= a->next_try_ms && configure(a))
				a->next_try_ms = now + RETRY_MS;
			if (!a->need_config)
				submit_aers(a);
			nvmeof_queue_poll(aq, 0);
		}
		pthread_mutex_unlock(alock);

		pthread_mutex_lock(&a->lock);
		while (a->n && !a->stop) {
			uint32_t dw0 = a->ring[a->head];
			a->head = (a->head + 1) % RING;
			a->n--;
			pthread_mutex_unlock(&a->lock);
			deliver(a, dw0);
			pthread_mutex_lock(&a->lock);
		}
		if (!a->stop) {
			struct timespec ts = nvmeof_deadline_ts(POLL_MS);
			pthread_cond_timedwait(&a->cond, &a->lock, &ts);
		}
		bool stop = a->stop;
		pthread_mutex_unlock(&a->lock);
		if (stop)
			return NULL;
	}
}

static int attach_to(struct nvmeof_ctrl *c, struct aer *a, nvmeof_event_cb cb, void *arg, uint32_t key);

/* Written under the admin lock once, read by callers without it. */
static struct aer *get(struct nvmeof_ctrl *c)
{
	return __atomic_load_n(ctrl_aer(c), __ATOMIC_ACQUIRE);
}

/* The event thread, unless it runs or was stopped. */
static int start(struct aer *a)
{
	int rc = 0;
	pthread_mutex_lock(&a->lock);
	if (!a->running && !a->stop) {
		if ((rc = pthread_create(&a->thread, NULL, aer_main, a)))
			rc = nvmeof_err(NVMEOF_ENOMEM, "enable events: thread: %s", strerror(rc));
		else
			a->running = true;
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

/* user: the public call, whose callback has the events alone; otherwise a
 * listener, added to the events another listener enabled. */
static int enable(struct nvmeof_ctrl *c, nvmeof_event_cb cb, void *arg, uint32_t key, bool user)
{
	if (!c)
		return nvmeof_err(NVMEOF_EINVAL, "enable events: no controller");
	if (get(c) && user)
		return nvmeof_err(NVMEOF_EBUSY, "enable events: already enabled on this controller");
	/* configured on the association that answers: while it is re-created,
	 * once it is back */
	int rc = ctrl_wait_live(c, ctrl_cmd_timeout(c), "enable events");
	if (rc)
		return rc;
	struct aer *a = calloc(1, sizeof(*a));
	if (!a)
		return nvmeof_err(NVMEOF_ENOMEM, "enable events: out of memory");
	a->c = c;
	a->l[0] = (struct listener){.cb = cb, .arg = arg, .key = key};
	a->user = user;
	nvme_sqe_async_event(a->sqe, 0);
	uint32_t aerl = (uint32_t)nvmeof_ctrl_info(c)->aerl + 1;
	a->want = aerl < AER_MAX ? aerl : AER_MAX;
	pthread_mutex_init(&a->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&a->cond, &ca);
	pthread_condattr_destroy(&ca);

	pthread_mutex_t *alock = ctrl_admin_lock(c);
	ctrl_admin_take(c); /* a due fence first: configure() sends */
	/* Checked again where it is set: two threads enabling events at once
	 * (fio jobs initialising in parallel) must not both install one, the
	 * first left running with its callback after the second took its
	 * place. */
	struct aer *other = *ctrl_aer(c);
	if (other) {
		pthread_mutex_unlock(alock);
		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		free(a);
		if (!user) /* set once, freed with the controller: it outlives this call */
			return attach_to(c, other, cb, arg, key);
		return nvmeof_err(NVMEOF_EBUSY, "enable events: enabled on this controller by another thread meanwhile");
	}
	rc = configure(a);
	if (!rc) {
		/* Installed once configured: an AER not sent now (no slot, the
		 * connection just lost) is sent by the event thread's next tick. */
		__atomic_store_n(ctrl_aer(c), a, __ATOMIC_RELEASE);
		submit_aers(a);
	}
	pthread_mutex_unlock(alock);
	if (rc) {
		pthread_cond_destroy(&a->cond);
		pthread_mutex_destroy(&a->lock);
		free(a);
		return rc;
	}
	if ((rc = start(a))) {
		/* AERs already sent stay with the admin queue until it closes;
		 * their callbacks need a, so it stays, freed with the controller,
		 * without this caller's listener; the next attach starts it. */
		pthread_mutex_lock(&a->lock);
		a->l[0] = (struct listener){0};
		a->user = false;
		pthread_mutex_unlock(&a->lock);
	}
	return rc;
}

int nvmeof_ctrl_events(struct nvmeof_ctrl *c, nvmeof_event_cb cb, void *arg)
{
	return enable(c, cb, arg, 0, true);
}

uint64_t nvmeof_ctrl_event_count(struct nvmeof_ctrl *c)
{
	struct aer *a = c ? get(c) : NULL;
	if (!a)
		return 0;
	pthread_mutex_lock(&a->lock);
	uint64_t n = a->delivered;
	pthread_mutex_unlock(&a->lock);
	return n;
}

void aer_stop(struct nvmeof_ctrl *c)
{
	struct aer *a = get(c);
	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	bool running = a->running;
	pthread_cond_signal(&a->cond);
	pthread_mutex_unlock(&a->lock);
	if (running)
		pthread_join(a->thread, NULL);
	pthread_mutex_lock(&a->lock);
	a->running = false;
	pthread_mutex_unlock(&a->lock);
}

void aer_free(struct nvmeof_ctrl *c)
{
	struct aer *a = *ctrl_aer(c);
	if (!a)
		return;
	pthread_cond_destroy(&a->cond);
	pthread_mutex_destroy(&a->lock);
	free(a);
	*ctrl_aer(c) = NULL;
}

int aer_detach(struct nvmeof_ctrl *c, const void *arg, uint32_t timeout_ms)
{
	struct aer *a = get(c);
	if (!a)
		return 0;
	pthread_mutex_lock(&a->lock);
	int i = 0;
	while (i < AER_LISTENERS && !(a->l[i].cb && a->l[i].arg == arg))
		i++;
	if (i == AER_LISTENERS) { /* another owner's: not ours to take away */
		pthread_mutex_unlock(&a->lock);
		return 0;
	}
	a->l[i] = (struct listener){.calling = a->l[i].calling};
	/* Its callback already running finishes first (its owner frees what it
	 * uses), unless this is that callback, on the event thread. */
	bool self = a->running && pthread_equal(pthread_self(), a->thread);
	uint64_t end = nvmeof_now_ms() + timeout_ms;
	while (a->l[i].calling && !self && nvmeof_now_ms() < end) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 50 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&a->cond, &a->lock, &ts);
	}
	bool busy = a->l[i].calling && !self;
	pthread_mutex_unlock(&a->lock);
	return busy ? nvmeof_err(NVMEOF_ETIMEDOUT, "detach events: the event callback ran past %u ms", timeout_ms) : 0;
}

static int add_listener(struct aer *a, nvmeof_event_cb cb, void *arg, uint32_t key)
{
	int rc = 0, free_at = -1;
	pthread_mutex_lock(&a->lock);
	for (int i = 0; i < AER_LISTENERS && !rc; i++) {
		if (!a->l[i].cb && !a->l[i].calling)
			free_at = free_at < 0 ? i : free_at;
		else if (!a->l[i].cb)
			continue; /* detached, its callback still running */
		else if (a->user)
			rc = nvmeof_err(NVMEOF_EBUSY, "enable events: this controller's events already go to a callback "
					"(a multipath takes them: pass your callback in its options)");
		else if (a->l[i].key == key)
			rc = nvmeof_err(NVMEOF_EBUSY, "enable events: namespace %u through this controller already has a multipath", key);
	}
	if (!rc && free_at < 0)
		rc = nvmeof_err(NVMEOF_EBUSY, "enable events: this controller's events already go to %d multipaths", AER_LISTENERS);
	if (!rc) {
		a->user = false; /* a user's callback detached (none can) or none: listeners now */
		a->l[free_at] = (struct listener){.cb = cb, .arg = arg, .key = key};
	}
	pthread_mutex_unlock(&a->lock);
	return rc;
}

static int attach_to(struct nvmeof_ctrl *c, struct aer *a, nvmeof_event_cb cb, void *arg, uint32_t key)
{
	int rc = add_listener(a, cb, arg, key);
	if (!rc && (rc = start(a))) /* its first start failed: the thread comes with this listener */
		aer_detach(c, arg, 0);
	return rc;
}

int aer_attach(struct nvmeof_ctrl *c, nvmeof_event_cb cb, void *arg, uint32_t key)
{
	struct aer *a = get(c);
	return a ? attach_to(c, a, cb, arg, key) : enable(c, cb, arg, key, false);
}

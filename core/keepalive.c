/* Keep Alive from a thread of the controller: no user polling needed. */
#include <stdio.h>
#include <time.h>

#include "cpriv.h"

/* Keep Alive on the admin queue every ka_interval_ms, so the target keeps
 * the association without the user ever touching the admin queue. */
void *ctrl_ka_main(void *arg)
{
	struct nvmeof_ctrl *c = arg;
	uint8_t sqe[NVME_SQE_SIZE];
	pthread_mutex_lock(&c->lock);
	while (!c->ka_stop) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		uint64_t ns = (uint64_t)ts.tv_nsec + (uint64_t)c->o.ka_interval_ms * 1000000u;
		ts.tv_sec += (time_t)(ns / 1000000000u);
		ts.tv_nsec = (long)(ns % 1000000000u);
		while (!c->ka_stop && pthread_cond_timedwait(&c->ka_cond, &c->lock, &ts) == 0)
			;
		if (c->ka_stop)
			continue;
		nvme_sqe_keep_alive(sqe, 0);
		pthread_mutex_unlock(&c->lock);
		pthread_mutex_lock(&c->admin_lock);
		/* the timeout is KATO: an answer later than that no longer helps */
		int rc = q_exec(c->admin, sqe, 0, c->o.kato_ms, NULL);
		pthread_mutex_unlock(&c->admin_lock);
		pthread_mutex_lock(&c->lock);
		/* One late answer is not the end: the health call reports it,
		 * and the next Keep Alive goes out on time regardless. */
		if (rc) {
			c->ka_err = rc;
			snprintf(c->ka_msg, sizeof(c->ka_msg), "Keep Alive: %s", nvmeof_errmsg());
		} else {
			c->ka_err = 0;
			c->ka_sent++;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

void ctrl_ka_stop(struct nvmeof_ctrl *c)
{
	if (!c->ka_running)
		return;
	pthread_mutex_lock(&c->lock);
	c->ka_stop = true;
	pthread_cond_signal(&c->ka_cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->ka_thread, NULL);
	c->ka_running = false;
}

int nvmeof_ctrl_health(struct nvmeof_ctrl *c, char *msg, size_t len)
{
	pthread_mutex_lock(&c->lock);
	int rc = c->ka_err;
	if (msg && len)
		snprintf(msg, len, "%s", rc ? c->ka_msg : "healthy");
	pthread_mutex_unlock(&c->lock);
	return rc;
}

uint64_t nvmeof_ctrl_keep_alives(struct nvmeof_ctrl *c)
{
	pthread_mutex_lock(&c->lock);
	uint64_t n = c->ka_sent;
	pthread_mutex_unlock(&c->lock);
	return n;
}

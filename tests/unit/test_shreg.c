/* qpairs_shared=: the registry of the pairs the jobs share (engine/shreg.c),
 * made outside its lock. Threads stand in for the jobs (run under TSan by
 * make test-unit). */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "shreg.h"

struct thing {
	struct shreg_entry e;
	int made;
};

/* A job's lookup, on a thread of its own. */
struct job {
	pthread_t t;
	struct shreg *r;
	const void *key;
	uint64_t wait_ms;
	int rc, done, err;
	struct shreg_entry *e;
	char why[sizeof(((struct shreg_entry *)0)->why)];
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	j->rc = shreg_get(j->r, j->key, sizeof(struct thing), j->wait_ms, &j->e, j->why, sizeof(j->why), &j->err);
	/* a make of its own is done at once */
	if (j->rc == SHREG_MAKE) {
		((struct thing *)j->e)->made = 1;
		shreg_publish(j->r, j->e, 0, NULL);
	}
	__atomic_store_n(&j->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void job_start(struct job *j, struct shreg *r, const void *key, uint64_t wait_ms)
{
	memset(j, 0, sizeof(*j));
	j->r = r;
	j->key = key;
	j->wait_ms = wait_ms;
	CHECK_EQ(pthread_create(&j->t, NULL, job_main, j), 0);
}

/* Until e has n holders (the maker and its waiters), 10 s at most. */
static unsigned int await_refs(struct shreg *r, struct shreg_entry *e, unsigned int n)
{
	unsigned int got = 0;
	for (int i = 0; i < 10000; i++) {
		pthread_mutex_lock(&r->lock);
		got = e->refs;
		pthread_mutex_unlock(&r->lock);
		if (got == n)
			break;
		usleep(1000);
	}
	return got;
}

static char key_a, key_b;

/* Key a's make begun here, and n jobs (of j) waiting for it, each holding it. */
static struct shreg_entry *make_awaited(struct shreg *r, struct job *j, unsigned int n)
{
	struct shreg_entry *a;
	CHECK_EQ(shreg_get(r, &key_a, sizeof(struct thing), 1000, &a, NULL, 0, NULL), SHREG_MAKE);
	for (unsigned int i = 0; i < n; i++)
		job_start(&j[i], r, &key_a, 60000);
	CHECK_EQ(await_refs(r, a, n + 1), n + 1);
	return a;
}

/* A job making key a's thing (a slow connect, here one that waits for the
 * test) holds up no lookup of another key: that job makes its own. */
TEST(a_make_in_progress_holds_up_no_other_key)
{
	struct shreg r = SHREG_INIT;
	struct shreg_entry *a = make_awaited(&r, NULL, 0);
	struct job j;
	job_start(&j, &r, &key_b, 60000);
	for (int i = 0; i < 10000 && !__atomic_load_n(&j.done, __ATOMIC_ACQUIRE); i++)
		usleep(1000);
	CHECK(__atomic_load_n(&j.done, __ATOMIC_ACQUIRE)); /* a's make still out */
	pthread_join(j.t, NULL);
	CHECK_EQ(j.rc, SHREG_MAKE);
	CHECK(j.e != a);
	shreg_publish(&r, a, 0, NULL);
	CHECK(shreg_put(&r, j.e));
	shreg_free(j.e);
	CHECK(shreg_put(&r, a));
	shreg_free(a);
	CHECK(r.head == NULL);
}

/* The jobs that ask while the first makes it wait, and get what it made:
 * the one entry, each holding it; the last to let go takes it out. */
TEST(jobs_asking_during_the_make_get_what_it_made)
{
	struct shreg r = SHREG_INIT;
	struct job j[3];
	struct shreg_entry *a = make_awaited(&r, j, 3);
	((struct thing *)a)->made = 1;
	shreg_publish(&r, a, 0, NULL);
	for (int i = 0; i < 3; i++) {
		pthread_join(j[i].t, NULL);
		CHECK_EQ(j[i].rc, SHREG_GOT);
		CHECK(j[i].e == a);
		CHECK_EQ(((struct thing *)j[i].e)->made, 1);
	}
	struct shreg_entry *again;
	CHECK_EQ(shreg_get(&r, &key_a, sizeof(struct thing), 1000, &again, NULL, 0, NULL), SHREG_GOT);
	CHECK(again == a);
	for (int i = 0; i < 4; i++)
		CHECK(!shreg_put(&r, a));
	CHECK(shreg_put(&r, a));
	CHECK(r.head == NULL);
	shreg_free(a);
}

/* A make that fails is reported to each job that waited for it, with the
 * maker's message; the registry keeps nothing of it, so the next job to
 * ask makes anew. A failure nobody waited for is freed at once (ASan: no
 * leak). */
TEST(a_failed_make_is_told_to_each_waiter_and_leaves_the_registry_clean)
{
	struct shreg r = SHREG_INIT;
	struct job j[2];
	struct shreg_entry *a = make_awaited(&r, j, 2);
	shreg_publish(&r, a, 111, "nvmeof: shared queue pair 1 of 2: connect refused");
	CHECK(r.head == NULL); /* at once, whatever the waiters still hold */
	for (int i = 0; i < 2; i++) {
		pthread_join(j[i].t, NULL);
		CHECK_EQ(j[i].rc, SHREG_FAILED);
		CHECK(j[i].e == NULL);
		CHECK(strcmp(j[i].why, "nvmeof: shared queue pair 1 of 2: connect refused") == 0);
		CHECK_EQ(j[i].err, 111); /* the maker's error, not a stand-in */
	}
	struct shreg_entry *fresh;
	CHECK_EQ(shreg_get(&r, &key_a, sizeof(struct thing), 1000, &fresh, NULL, 0, NULL), SHREG_MAKE);
	CHECK_EQ(((struct thing *)fresh)->made, 0);
	shreg_publish(&r, fresh, 111, "refused again"); /* no waiter: freed here */
	CHECK(r.head == NULL);
}

/* A make that outlasts a job's bound: that job gives up, holding nothing,
 * and the make goes on for the others. */
TEST(a_job_gives_up_on_a_make_past_its_bound)
{
	struct shreg r = SHREG_INIT;
	struct shreg_entry *a = make_awaited(&r, NULL, 0);
	struct job j;
	job_start(&j, &r, &key_a, 20);
	pthread_join(j.t, NULL);
	CHECK_EQ(j.rc, SHREG_TIMEDOUT);
	CHECK(j.e == NULL);
	CHECK_EQ(await_refs(&r, a, 1), 1);
	shreg_publish(&r, a, 0, NULL);
	CHECK(shreg_put(&r, a));
	shreg_free(a);
	CHECK(r.head == NULL);
}

/* A make that goes on past a waiter's first bound, saying so as it goes
 * (shreg_progress, as before each pair's connect): the waiter waits on
 * and gets what it made. Without the progress it would have given up
 * (the test above). */
TEST(a_job_waits_on_while_the_make_makes_progress)
{
	struct shreg r = SHREG_INIT;
	struct shreg_entry *a;
	CHECK_EQ(shreg_get(&r, &key_a, sizeof(struct thing), 50, &a, NULL, 0, NULL), SHREG_MAKE);
	struct job j;
	job_start(&j, &r, &key_a, 50);
	CHECK_EQ(await_refs(&r, a, 2), 2);
	/* four steps, each well past the first 50 ms, each announced */
	for (int i = 0; i < 4; i++) {
		shreg_progress(&r, a, 60000);
		usleep(100000);
		CHECK(!__atomic_load_n(&j.done, __ATOMIC_ACQUIRE));
	}
	((struct thing *)a)->made = 1;
	shreg_publish(&r, a, 0, NULL);
	pthread_join(j.t, NULL);
	CHECK_EQ(j.rc, SHREG_GOT);
	CHECK(j.e == a);
	CHECK(!shreg_put(&r, a));
	CHECK(shreg_put(&r, a));
	shreg_free(a);
	CHECK(r.head == NULL);
}

int main(void)
{
	static const struct test_case all[] = {T(a_make_in_progress_holds_up_no_other_key),
					       T(jobs_asking_during_the_make_get_what_it_made),
					       T(a_failed_make_is_told_to_each_waiter_and_leaves_the_registry_clean),
					       T(a_job_gives_up_on_a_make_past_its_bound),
					       T(a_job_waits_on_while_the_make_makes_progress)};
	return run_tests("unit-shreg", all, sizeof(all) / sizeof(all[0]));
}

/* qpairs_shared=: the ring that hands a job the completions another job's
 * poll found for it (engine/hring.c). */
#include <pthread.h>
#include <stdint.h>

#include "check.h"
#include "hring.h"

/* Rounded up to a power of two; full refuses without overwriting; order kept. */
TEST(full_ring_refuses_and_keeps_order)
{
	struct hring r;
	int v[8];
	CHECK_EQ(hring_init(&r, 5), 0);
	CHECK_EQ(r.mask, 7);
	for (int i = 0; i < 8; i++)
		CHECK(hring_push(&r, &v[i]));
	CHECK(!hring_push(&r, &v[0]));
	CHECK_EQ(hring_count(&r), 8);
	for (int i = 0; i < 8; i++)
		CHECK(hring_pop(&r) == &v[i]);
	CHECK(hring_pop(&r) == NULL);
	CHECK_EQ(hring_count(&r), 0);
	hring_free(&r);
}

/* Many times round: the indices wrap past the slots (and past 2^32 would
 * too: they are free-running, compared by difference). */
TEST(wraps_in_order)
{
	struct hring r;
	int v[3];
	CHECK_EQ(hring_init(&r, 4), 0);
	r.head = r.tail = UINT32_MAX - 5; /* as after 4 billion hand-offs */
	for (int round = 0; round < 1000; round++) {
		for (int i = 0; i < 3; i++)
			CHECK(hring_push(&r, &v[i]));
		for (int i = 0; i < 3; i++)
			CHECK(hring_pop(&r) == &v[i]);
	}
	CHECK(hring_pop(&r) == NULL);
	hring_free(&r);
}

/* One producer thread, the consumer here: every entry arrives once, in
 * order, what the producer wrote before pushing visible (run under TSan
 * by make test-unit). */
#define N 20000
static struct hring shared_ring;
static uintptr_t written[N];

static void *producer(void *arg)
{
	(void)arg;
	for (uintptr_t i = 0; i < N;) {
		written[i] = i * 3 + 1;
		if (hring_push(&shared_ring, &written[i]))
			i++;
	}
	return NULL;
}

TEST(one_producer_one_consumer)
{
	pthread_t t;
	CHECK_EQ(hring_init(&shared_ring, 16), 0);
	CHECK_EQ(pthread_create(&t, NULL, producer, NULL), 0);
	uintptr_t next = 0;
	while (next < N) {
		uintptr_t *p = hring_pop(&shared_ring);
		if (!p)
			continue;
		CHECK(p == &written[next]);
		CHECK_EQ(*p, next * 3 + 1);
		next++;
	}
	pthread_join(t, NULL);
	CHECK(hring_pop(&shared_ring) == NULL);
	hring_free(&shared_ring);
}

int main(void)
{
	static const struct test_case all[] = {T(full_ring_refuses_and_keeps_order), T(wraps_in_order),
					       T(one_producer_one_consumer)};
	return run_tests("unit-hring", all, sizeof(all) / sizeof(all[0]));
}

/*
 * The ids and event channels that exist now. Every entry point that takes one looks it up here before it reads
 * anything through the pointer, so a program that calls on an id or channel it has destroyed (perftest's -R
 * client does, on its retry after a REJ: rdma_cm_destroy_cma, then rdma_resolve_addr on the ids it destroyed) gets
 * an error instead of a crash: a pointer not in the set is never dereferenced, whatever it points to now.
 *
 * An open-addressing hash set of pointers (linear probing, tombstones), grown by doubling; one mutex.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "rc.h"

#define TOMB ((const void *)1)

struct live_set {
	const void **slots; /* NULL free, TOMB removed */
	size_t cap;         /* a power of two, or 0 */
	size_t used;        /* live entries */
	size_t filled;      /* live entries and tombstones */
};

static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct live_set sets[2]; /* RC_LIVE_ID, RC_LIVE_CHANNEL */

static size_t slot_of(const void *p, size_t cap)
{
	uint64_t h = (uint64_t)(uintptr_t)p;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return (size_t)h & (cap - 1);
}

/* the slot holding p, or (SIZE_MAX) none */
static size_t find(const struct live_set *s, const void *p)
{
	if (s->cap == 0)
		return SIZE_MAX;
	for (size_t i = slot_of(p, s->cap), n = 0; n < s->cap; i = (i + 1) & (s->cap - 1), n++) {
		if (s->slots[i] == NULL)
			return SIZE_MAX;
		if (s->slots[i] == p)
			return i;
	}
	return SIZE_MAX;
}

static void put(const void **slots, size_t cap, const void *p)
{
	size_t i = slot_of(p, cap);
	while (slots[i] != NULL && slots[i] != TOMB)
		i = (i + 1) & (cap - 1);
	slots[i] = p;
}

/* room for one more with at most half the slots filled: rehashed into a table twice the live entries' need */
static int reserve(struct live_set *s)
{
	if (s->cap != 0 && (s->filled + 1) * 2 <= s->cap)
		return 0;
	size_t cap = 16;
	while ((s->used + 1) * 4 > cap)
		cap *= 2;
	const void **slots = calloc(cap, sizeof(*slots));
	if (slots == NULL)
		return ENOMEM;
	for (size_t i = 0; i < s->cap; i++)
		if (s->slots[i] != NULL && s->slots[i] != TOMB)
			put(slots, cap, s->slots[i]);
	free(s->slots);
	s->slots = slots;
	s->cap = cap;
	s->filled = s->used;
	return 0;
}

int rc_live_add(int kind, const void *p)
{
	pthread_mutex_lock(&live_lock);
	struct live_set *s = &sets[kind];
	int err = reserve(s);
	if (err == 0) {
		put(s->slots, s->cap, p);
		s->used++;
		s->filled++;
	}
	pthread_mutex_unlock(&live_lock);
	return err;
}

int rc_live_remove(int kind, const void *p)
{
	pthread_mutex_lock(&live_lock);
	struct live_set *s = &sets[kind];
	size_t i = find(s, p);
	if (i != SIZE_MAX) {
		s->slots[i] = TOMB;
		s->used--;
	}
	pthread_mutex_unlock(&live_lock);
	return i != SIZE_MAX;
}

int rc_live_has(int kind, const void *p)
{
	if (p == NULL)
		return 0;
	pthread_mutex_lock(&live_lock);
	int has = find(&sets[kind], p) != SIZE_MAX;
	pthread_mutex_unlock(&live_lock);
	return has;
}

/* The kernel's answers (ucma.c): an id whose handle it no longer has is ENOENT (_ucma_find_context); a call on an id
 * whose channel is closed writes to a closed fd, EBADF. */
int rc_id_check(struct rdma_cm_id *id)
{
	if (id == NULL)
		return EINVAL;
	if (!rc_live_has(RC_LIVE_ID, id))
		return ENOENT;
	if (!rc_live_has(RC_LIVE_CHANNEL, id->channel))
		return EBADF;
	return 0;
}

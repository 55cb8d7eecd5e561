/* flight-int.h: a flight and its waiters, private to the flight module
 * (daemon/miss/flight.c, flight-job.c, flight-serve.c, flight-remote.c; no
 * other file includes this header, tests/e2e/layering.sh checks it).
 * Every other file holds a struct kj__flight only as an opaque pointer
 * and calls the functions daemon.h declares.
 */
#ifndef KJ_FLIGHT_INT_H
#define KJ_FLIGHT_INT_H

#include "daemon.h"
#include "includes.h"
#include "remote.h"

struct kj__waiter {
	struct kj__conn *c;          /* referenced while in the flight */
	uint32_t id;
	int no_compile;              /* fetch only: a miss is refused, not compiled */
	char *explain;               /* --explain: why it was not a hit (explain.c), sent with the object; owned */
	char *want;                  /* the entry points it asked for, "NAME\n" each, checked
				      * against the object (hip, cuda); NULL: none; owned */
	uint8_t fp[32];              /* a joiner's GET body fingerprint, for the hit table */
	int has_fp;                  /* (w[0]'s is the flight's fp) */
	uint64_t hits_gen;           /* the hit table's generation when its resolve began */
};
struct kj__flight {
	char key[65];
	struct kj__daemon *d;
	struct kj__waiter *w;        /* w[0] opened the flight */
	size_t n_w, cap_w;
	struct kj__job job;           /* its frame built only when the flight compiles (kj__flight_compile) */
	struct kj__get_req q;        /* the opener's request, moved from get.c: what the JOB frame is built
				      * from; its headers freed once the recipe holds them, its source once
				      * the frame does */
	struct kj__includes inc;     /* its resolved includes, moved from offhash.c; freed once the frame holds them */
	struct kj__cache_entry e;    /* what the index will say; strings below */
	char *source_name, *options, *compiler;
	char *module_entries;        /* the request's, if a bundled kernel of hip or cuda (request.c); owned */
	struct kj__buf recipe;       /* the request without target and version */
	uid_t uid;                   /* who opened it, charged for what it holds: the request's source,
				      * its includes and recipe, then the job frame in their place */
	uint64_t charged;
	uint64_t t0;
	uint8_t fp[32];              /* w[0]'s GET body fingerprint, for the hit table */
	int has_fp;
	uint64_t hits_gen;           /* the hit table's generation when the flight opened */
	struct kj__pool *pool;       /* the compiler family it runs on */
	struct kj__remote_lease *lease; /* fleet lease while compiling (fleet.c); released on free */
};

/* flight.c: the table.  find: the open flight for key, or NULL.  insert:
 * adds f (no flight for its key open): 0 or KJIT_ENOMEM (not added).
 * remove: takes f, which is in t, out of it. */
struct kj__flight *kj__flights_find(struct kj__flights *t, const char *key);
int kj__flights_insert(struct kj__flights *t, struct kj__flight *f);
void kj__flights_remove(struct kj__flights *t, struct kj__flight *f);
/* A new flight for key, with no waiter and nothing else set; NULL if out
 * of memory.  Freed with kj__flight_free (never while in the table). */
struct kj__flight *kj__flight_new(struct kj__daemon *d, const char *key);
/* Appends a waiter for m's client, taking a reference on it and m->want
 * (set NULL), with its fetch-only flag and its fingerprint (m->fp): 0 or
 * KJIT_ENOMEM (nothing taken). */
int kj__flight_add_waiter(struct kj__flight *f, struct kj__miss *m);
/* Drops the waiters' references and frees f and what it owns (NULL ok). */
void kj__flight_free(struct kj__flight *f);
/* The replay recipe of m's request (what replay needs to make it again)
 * into f->recipe: 0 or a negative code (then replay misses it). */
int kj__flight_build_recipe(struct kj__flight *f, const struct kj__get_req *g);

/* flight-job.c: opens a flight for m->key (none is open): its index entry
 * and recipe, the request and includes moved in from m (m->q and m->inc
 * zeroed; the compile job is built from them only if the flight compiles),
 * charged to the opener's uid, put in the table and handed to the fleet
 * tier (kj__fleet_miss).  0 (the client will be answered) or a code,
 * reason in err (m->q and m->inc then untouched). */
int kj__flight_open(struct kj__daemon *d, struct kj__miss *m, char *err, size_t errlen);

/* flight-serve.c: answers every waiter of f with the object (status
 * KJIT_STATUS_*), each with its own --explain text. */
void kj__flight_answer(struct kj__flight *f, int status, const uint8_t *data, size_t len, const char *log,
		       const char *lowered);
/* The object's entry list (data's symbols) becomes f->e.entries (the
 * index keeps it), and each waiter whose entries it lacks is answered with
 * that error and taken out of f; if the opener was, its bytes stay out of
 * the hit table (f->has_fp cleared). */
void kj__flight_check_object(struct kj__flight *f, const uint8_t *data, size_t len);
/* The one publish sequence of a flight that got its object, a compile's
 * or a remote hit's (f out of the table, its entries checked): answers
 * every waiter (w[0] with status, the others with join_status), puts the
 * object in the shared hit table for the opener's bytes, starts its
 * publish (publish.c: the file, index row, recipe and requesters, the
 * disk work on a thread; served from memory meanwhile), enters each
 * joiner's bytes in the hit table, and, for a compile (status
 * KJIT_STATUS_COMPILED), offers it to the fleet (flight-remote.c) and gives
 * the lease up.  compile_ms: what a hit will save.  A publish that cannot
 * start is logged and counted in publish.c: the clients have their answer,
 * the object is just not cached. */
void kj__flight_publish(struct kj__flight *f, int status, int join_status, const uint8_t *data, size_t len,
			const char *log, const char *lowered, uint64_t compile_ms);

/* flight-remote.c: after a compile's local publish, publishes the object
 * to the fleet with f's metadata, entries and recipe (fleet.c
 * kj__fleet_publish), handing it f's lease; without --remote, or when the
 * value cannot be made, the lease is just released. */
void kj__flight_offer(struct kj__flight *f, const uint8_t *data, size_t len, const char *log, const char *lowered);

#endif /* KJ_FLIGHT_INT_H */

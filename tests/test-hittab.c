/* test-hittab.c: the shared hit table (common/hittab.c) on its own.
 *
 * Round trips through a real sealed memfd and a reader mapping of a
 * read-only descriptor, eviction, invalidation, a writer rewriting entries
 * while reader processes copy them (every object checks itself, so a torn
 * copy cannot pass), what a client holding the descriptor can and cannot do
 * (each write path is tried and must fail; a store into the mapping kills a
 * child with SIGSEGV and leaves the table intact), malformed tables (random
 * bytes, out-of-range offsets, random mutations of a real table), and the
 * per-client hit counters.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hittab.h"
#include "kjit.h"
#include "test.h"
#include "util.h"

#define SMALL_BYTES (256u << 10)
#define SMALL_SLOTS 64

static void fp_of(uint32_t i, uint8_t fp[KJ_SHA256_LEN])
{
	char s[32];
	snprintf(s, sizeof s, "request-%u", i);
	CHECK(kj__sha256(s, strlen(s), fp) == 0);
}

/* An object that checks itself: its size and every byte follow from
 * (id, version), both written in its first 8 bytes. */
static size_t obj_make(uint32_t id, uint32_t ver, size_t max, uint8_t *p)
{
	size_t n = 16 + (size_t)((id * 2654435761u + ver * 40503u) % (max - 16));
	memcpy(p, &id, 4);
	memcpy(p + 4, &ver, 4);
	for (size_t i = 8; i < n; i++)
		p[i] = (uint8_t)(id * 31 + ver * 17 + i * 7);
	return n;
}

/* 1 if p[0..n) is a whole object of obj_make for id. */
static int obj_ok(uint32_t id, const uint8_t *p, size_t n, size_t max)
{
	uint32_t pid, ver;
	static uint8_t want[1 << 16];

	if (n < 8)
		return 0;
	memcpy(&pid, p, 4);
	memcpy(&ver, p + 4, 4);
	return pid == id && obj_make(id, ver, max, want) == n && memcmp(want, p, n) == 0;
}

static struct kj__hittab_reader *reader_of(struct kj__hittab *w)
{
	struct kj__hittab_reader *r = NULL;
	int fd = -1;
	CHECK_EQ_INT(kj__hittab_reader_fd(w, &fd), 0);
	CHECK_EQ_INT(kj__hittab_reader_open(&r, fd), 0);
	close(fd); /* the mapping outlives the descriptor */
	return r;
}

static void put_obj(struct kj__hittab *w, uint32_t id, uint32_t ver, size_t max)
{
	static uint8_t buf[1 << 16];
	uint8_t fp[KJ_SHA256_LEN], key[KJ_SHA256_LEN];

	fp_of(id, fp);
	memset(key, (int)id, sizeof key);
	size_t n = obj_make(id, ver, max, buf);
	CHECK_EQ_INT(kj__hittab_put(w, fp, key, "gfx90a:xnack-", "6.2", buf, n), 0);
}

static void test_roundtrip(void)
{
	struct kj__hittab *w = NULL;
	struct kj__hit hit;
	uint8_t fp[KJ_SHA256_LEN], key[KJ_SHA256_LEN];

	CHECK_EQ_INT(kj__hittab_create(&w, SMALL_BYTES, SMALL_SLOTS), 0);
	struct kj__hittab_reader *r = reader_of(w);
	CHECK_EQ_INT(kj__hittab_reader_slots(r), SMALL_SLOTS);
	for (uint32_t i = 0; i < 20; i++)
		put_obj(w, i, 1, 4096);
	for (uint32_t i = 0; i < 20; i++) {
		fp_of(i, fp);
		CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), 0);
		CHECK(obj_ok(i, hit.data, hit.size, 4096));
		CHECK_EQ_STR(hit.target, "gfx90a:xnack-");
		CHECK_EQ_STR(hit.version, "6.2");
		memset(key, (int)i, sizeof key);
		CHECK(memcmp(hit.key, key, sizeof key) == 0);
		CHECK(hit.slot < SMALL_SLOTS);
		CHECK(kj__hittab_slot_key(w, hit.slot, key) == 1 && key[0] == (uint8_t)i);
		free(hit.data);
	}
	size_t n, bytes;
	kj__hittab_usage(w, &n, &bytes);
	CHECK_EQ_INT(n, 20);
	fp_of(999, fp);
	CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), KJIT_ENOENT);
	CHECK(hit.data == NULL);

	/* Replace, remove by fingerprint, remove by key. */
	put_obj(w, 3, 2, 4096);
	fp_of(3, fp);
	CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), 0);
	CHECK(obj_ok(3, hit.data, hit.size, 4096) && memcmp(hit.data + 4, &(uint32_t){ 2 }, 4) == 0);
	free(hit.data);
	kj__hittab_usage(w, &n, &bytes);
	CHECK_EQ_INT(n, 20);
	CHECK_EQ_INT(kj__hittab_remove(w, fp), 1);
	CHECK_EQ_INT(kj__hittab_remove(w, fp), 0);
	CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), KJIT_ENOENT);
	memset(key, 5, sizeof key);
	CHECK_EQ_INT(kj__hittab_remove_key(w, key), 1);
	fp_of(5, fp);
	CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), KJIT_ENOENT);

	/* A generation bump invalidates everything; new puts are served. */
	uint64_t g = kj__hittab_reader_gen(r);
	CHECK_EQ_INT(kj__hittab_invalidate(w), g + 1);
	CHECK_EQ_INT(kj__hittab_reader_gen(r), g + 1);
	for (uint32_t i = 0; i < 20; i++) {
		fp_of(i, fp);
		CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), KJIT_ENOENT);
	}
	kj__hittab_usage(w, &n, &bytes);
	CHECK_EQ_INT(n, 0);
	put_obj(w, 7, 3, 4096);
	fp_of(7, fp);
	CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), 0);
	free(hit.data);

	/* Arguments the writer refuses. */
	static uint8_t big[SMALL_BYTES / 2];
	CHECK_EQ_INT(kj__hittab_put(w, fp, key, "gfx90a", "6.2", big, sizeof big), KJIT_ETOOBIG);
	CHECK_EQ_INT(kj__hittab_put(w, fp, key, "gfx 90a", "6.2", big, 10), KJIT_EINVAL);
	CHECK_EQ_INT(kj__hittab_put(w, fp, key, "", "6.2", big, 10), KJIT_EINVAL);
	CHECK_EQ_INT(kj__hittab_put(w, fp, key, "gfx90a", "6.2", big, 0), KJIT_EINVAL);
	struct kj__hittab *w2 = NULL;
	CHECK_EQ_INT(kj__hittab_create(&w2, SMALL_BYTES, 100), KJIT_EINVAL);
	CHECK_EQ_INT(kj__hittab_create(&w2, KJ_HITTAB_BYTES_MAX + 1ull, 64), KJIT_EINVAL);
	CHECK_EQ_INT(kj__hittab_create(&w2, 1024, 64), KJIT_EINVAL);
	CHECK(w2 == NULL);
	kj__hittab_reader_close(r);
	kj__hittab_free(w);
	kj__hittab_free(NULL);
	kj__hittab_reader_close(NULL);
}

/* Far more bytes than the arena holds: every lookup is a miss or exact. */
static void test_eviction(void)
{
	struct kj__hittab *w = NULL;
	struct kj__hit hit;
	uint8_t fp[KJ_SHA256_LEN];

	CHECK_EQ_INT(kj__hittab_create(&w, SMALL_BYTES, SMALL_SLOTS), 0);
	struct kj__hittab_reader *r = reader_of(w);
	unsigned hits = 0;
	for (uint32_t i = 0; i < 2000; i++) {
		put_obj(w, i % 300, i, 16384);
		size_t n, bytes;
		kj__hittab_usage(w, &n, &bytes);
		CHECK(n <= SMALL_SLOTS && bytes <= SMALL_BYTES);
		/* The one just put is there. */
		fp_of(i % 300, fp);
		CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), 0);
		CHECK(obj_ok(i % 300, hit.data, hit.size, 16384));
		free(hit.data);
	}
	for (uint32_t id = 0; id < 300; id++) {
		fp_of(id, fp);
		int rc = kj__hittab_lookup(r, fp, &hit);
		CHECK(rc == 0 || rc == KJIT_ENOENT);
		if (rc == 0) {
			CHECK(obj_ok(id, hit.data, hit.size, 16384));
			hits++;
			free(hit.data);
		}
	}
	CHECK(hits > 5);
	kj__hittab_reader_close(r);
	kj__hittab_free(w);
}

/* A sink (kj__hittab_lookup_into) of one buffer, counting its calls. */
struct one_buf {
	uint8_t buf[16384];
	unsigned long calls;
};

static void *one_buf_alloc(void *ctx, size_t size)
{
	struct one_buf *b = ctx;
	b->calls++;
	return size <= sizeof b->buf ? b->buf : NULL;
}

/* A sink keeping a copy of each answer by its id (struct kj__sink's
 * have), as the Python extension keeps bytes: 64 slots by the id's hash. */
struct keeper {
	struct {
		uint64_t id[2];
		size_t n;
		uint8_t buf[16384];
	} slot[64];
	uint8_t fresh[16384];
	uint64_t got[2];
	unsigned long calls, asked, held;
};

static unsigned keeper_slot(const uint64_t id[2])
{
	return (unsigned)((id[0] * 0x9e3779b97f4a7c15ull ^ id[1]) % 64);
}

static void *keeper_alloc(void *ctx, size_t size)
{
	struct keeper *k = ctx;
	k->calls++;
	return size <= sizeof k->fresh ? k->fresh : NULL;
}

static int keeper_have(void *ctx, const uint64_t id[2], size_t size)
{
	struct keeper *k = ctx;
	unsigned s = keeper_slot(id);
	k->asked++;
	return k->slot[s].id[0] == id[0] && k->slot[s].id[1] == id[1] && k->slot[s].n == size && size > 0;
}

/* One lookup through k: the answer's bytes (the kept copy when it was
 * held, the fresh copy, now kept, otherwise) in *out; the lookup's code. */
static int keeper_lookup(struct keeper *k, struct kj__hittab_reader *r, const uint8_t fp[KJ_SHA256_LEN],
			 struct kj__hit *hit, const uint8_t **out, size_t *n)
{
	struct kj__sink sink = { keeper_alloc, k, keeper_have, k->got };
	unsigned long before = k->calls;
	int rc = kj__hittab_lookup_into(r, fp, hit, &sink);
	if (rc != 0)
		return rc;
	unsigned s = keeper_slot(k->got);
	if (hit->data == NULL && k->calls == before) { /* held: nothing copied */
		k->held++;
		*out = k->slot[s].buf;
	} else {
		memcpy(k->slot[s].buf, k->fresh, hit->size);
		memcpy(k->slot[s].id, k->got, sizeof k->got);
		k->slot[s].n = hit->size;
		*out = k->slot[s].buf;
	}
	*n = hit->size;
	return 0;
}

/* The ids of table answers: bytes kept under one are never another
 * object's.  A held answer copies nothing and asks for no buffer; a slot
 * rewritten (another version of the same request, or the table
 * invalidated and the request put again) gives a new id; two readers of
 * one table named apart give ids apart. */
static void test_kept_ids(void)
{
	struct kj__hittab *w = NULL;
	static struct keeper k;
	struct kj__hit hit;
	uint8_t fp[KJ_SHA256_LEN];
	const uint8_t *p;
	size_t n;
	uint32_t ver;

	CHECK_EQ_INT(kj__hittab_create(&w, SMALL_BYTES, SMALL_SLOTS), 0);
	struct kj__hittab_reader *r = reader_of(w), *r2 = reader_of(w);
	kj__hittab_reader_set_id(r, 1);
	kj__hittab_reader_set_id(r2, 2);
	put_obj(w, 3, 1, 4096);
	fp_of(3, fp);
	CHECK_EQ_INT(keeper_lookup(&k, r, fp, &hit, &p, &n), 0);
	CHECK(k.calls == 1 && k.held == 0 && obj_ok(3, p, n, 4096));
	uint64_t first[2] = { k.got[0], k.got[1] };
	CHECK(first[0] >> 32 == 1 && (uint32_t)first[0] >= 2);
	CHECK_EQ_INT(keeper_lookup(&k, r, fp, &hit, &p, &n), 0);
	CHECK(k.calls == 1 && k.held == 1 && obj_ok(3, p, n, 4096));
	CHECK(k.got[0] == first[0] && k.got[1] == first[1]);
	CHECK(strcmp(hit.target, "gfx90a:xnack-") == 0 && strcmp(hit.version, "6.2") == 0 && hit.key[0] == 3);
	/* Another reader's id for the same slot: not taken for this one's. */
	CHECK_EQ_INT(keeper_lookup(&k, r2, fp, &hit, &p, &n), 0);
	CHECK(k.calls == 2 && k.got[0] >> 32 == 2 && obj_ok(3, p, n, 4096));
	/* Rewritten: version 2 under a new id, copied. */
	put_obj(w, 3, 2, 4096);
	CHECK_EQ_INT(keeper_lookup(&k, r, fp, &hit, &p, &n), 0);
	memcpy(&ver, p + 4, 4);
	CHECK(k.calls == 3 && ver == 2 && obj_ok(3, p, n, 4096));
	CHECK(k.got[1] != first[1]);
	/* Invalidated, then put again: a new id again. */
	uint64_t second[2] = { k.got[0], k.got[1] };
	kj__hittab_invalidate(w);
	CHECK_EQ_INT(keeper_lookup(&k, r, fp, &hit, &p, &n), KJIT_ENOENT);
	put_obj(w, 3, 3, 4096);
	CHECK_EQ_INT(keeper_lookup(&k, r, fp, &hit, &p, &n), 0);
	memcpy(&ver, p + 4, 4);
	CHECK(k.calls == 4 && ver == 3 && (k.got[0] != second[0] || k.got[1] != second[1]));
	kj__hittab_reader_close(r);
	kj__hittab_reader_close(r2);
	kj__hittab_free(w);
}

/* A writer rewriting a small table as fast as it can while five reader
 * processes copy entries out, two into malloc'd buffers
 * (kj__hittab_lookup), two into a sink's one buffer (_into: a raced copy
 * is made again in the same buffer), and one keeping what it copied by the
 * answers' ids (have): no copy may be torn, and no kept copy may be given
 * for another request's answer. */
static void test_race(void)
{
	enum { READERS = 5, IDS = 40, RUN_MS = 1500 };
	struct kj__hittab *w = NULL;
	pid_t pids[READERS];
	int pipes[READERS][2];

	CHECK_EQ_INT(kj__hittab_create(&w, SMALL_BYTES, SMALL_SLOTS), 0);
	for (uint32_t i = 0; i < IDS; i++)
		put_obj(w, i, 0, 16384);
	uint64_t end = kj__now_us() + RUN_MS * 1000ull;
	fflush(NULL);
	for (int k = 0; k < READERS; k++) {
		CHECK(pipe(pipes[k]) == 0);
		pids[k] = fork();
		CHECK(pids[k] >= 0);
		if (pids[k] == 0) {
			struct kj__hittab_reader *r = reader_of(w);
			unsigned long res[5] = { 0 }; /* hits, misses, raced, torn, held */
			struct kj__hit hit;
			uint8_t fp[KJ_SHA256_LEN];
			static struct one_buf ob;
			static struct keeper kp;
			struct kj__sink sink = { one_buf_alloc, &ob, NULL, NULL };
			for (uint32_t i = (uint32_t)k; kj__now_us() < end; i++) {
				fp_of(i % IDS, fp);
				if (k == 4) { /* the keeper */
					const uint8_t *p;
					size_t n;
					unsigned long held = kp.held;
					int rc = keeper_lookup(&kp, r, fp, &hit, &p, &n);
					if (rc != 0) {
						res[rc == KJIT_ETIMEDOUT ? 2 : rc == KJIT_ENOENT ? 1 : 3]++;
						continue;
					}
					res[obj_ok(i % IDS, p, n, 16384) ? 0 : 3]++;
					if (kp.held == held)
						continue;
					/* Held: copy the slot again; when it still has the same
					 * id, its bytes must be the kept ones. */
					uint64_t id[2];
					struct kj__sink plain = { one_buf_alloc, &ob, NULL, id };
					uint64_t was[2] = { kp.got[0], kp.got[1] };
					res[4]++;
					if (kj__hittab_lookup_into(r, fp, &hit, &plain) == 0 && id[0] == was[0] &&
					    id[1] == was[1] && (hit.size != n || memcmp(ob.buf, p, n) != 0))
						res[3]++;
					continue;
				}
				int rc = k % 2 ? kj__hittab_lookup_into(r, fp, &hit, &sink) : kj__hittab_lookup(r, fp, &hit);
				if (rc == 0) {
					res[obj_ok(i % IDS, hit.data, hit.size, 16384) ? 0 : 3]++;
					if (k % 2)
						res[3] += hit.data != ob.buf;
					else
						free(hit.data);
				} else {
					res[rc == KJIT_ETIMEDOUT ? 2 : rc == KJIT_ENOENT ? 1 : 3]++;
				}
			}
			if (write(pipes[k][1], res, sizeof res) != sizeof res)
				_exit(2);
			_exit(0);
		}
		close(pipes[k][1]);
	}
	unsigned long writes = 0;
	for (uint32_t v = 1; kj__now_us() < end; v++, writes++) {
		put_obj(w, v % IDS, v, 16384);
		if (v % 997 == 0)
			kj__hittab_invalidate(w);
	}
	unsigned long tot[5] = { 0 };
	for (int k = 0; k < READERS; k++) {
		unsigned long res[5];
		int st;
		CHECK(read(pipes[k][0], res, sizeof res) == sizeof res);
		CHECK(waitpid(pids[k], &st, 0) == pids[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0);
		for (int j = 0; j < 5; j++)
			tot[j] += res[j];
	}
	fprintf(stderr, "race: %lu writes; reads: %lu hits, %lu misses, %lu gave up racing, %lu torn; %lu held\n",
		writes, tot[0], tot[1], tot[2], tot[3], tot[4]);
	CHECK_EQ_INT(tot[3], 0);
	CHECK(tot[4] > 0); /* the keeper was answered from what it kept */
	CHECK(tot[0] > 1000 && writes > 1000);
	kj__hittab_free(w);
}

/* What a client holding the descriptor could try, each refused. */
static void test_client_cannot_write(void)
{
	struct kj__hittab *w = NULL;
	struct kj__hit hit;
	uint8_t fp[KJ_SHA256_LEN];
	char path[64];
	int fd = -1;

	CHECK_EQ_INT(kj__hittab_create(&w, SMALL_BYTES, SMALL_SLOTS), 0);
	put_obj(w, 1, 1, 4096);
	CHECK_EQ_INT(kj__hittab_reader_fd(w, &fd), 0);
	CHECK((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY);
	size_t size = SMALL_BYTES;

	/* The descriptor is read-only: no shared writable mapping, no write. */
	errno = 0;
	CHECK(mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EACCES);
	CHECK(write(fd, "x", 1) < 0);
	CHECK(ftruncate(fd, 0) < 0);
	/* Reopened read-write through /proc: the seals still refuse. */
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	int rw = open(path, O_RDWR);
	if (rw >= 0) {
		errno = 0;
		CHECK(mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0) == MAP_FAILED && errno == EPERM);
		errno = 0;
		CHECK(pwrite(rw, "x", 1, 0) < 0 && errno == EPERM);
		errno = 0;
		CHECK(ftruncate(rw, 0) < 0 && errno == EPERM);
		CHECK(ftruncate(rw, (off_t)size * 2) < 0 && errno == EPERM);
		errno = 0;
		CHECK(fallocate(rw, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096) < 0 && errno == EPERM);
		errno = 0;
		CHECK(fcntl(rw, F_ADD_SEALS, F_SEAL_WRITE) < 0 && errno == EPERM);
		close(rw);
	} else {
		fprintf(stderr, "reopen through /proc refused (%s): nothing more to try\n", strerror(errno));
	}
	/* The read-only mapping cannot be made writable. */
	void *ro = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	CHECK(ro != MAP_FAILED);
	errno = 0;
	CHECK(mprotect(ro, size, PROT_READ | PROT_WRITE) < 0 && errno == EACCES);
	/* A store into it kills the client, not the table. */
	fflush(NULL);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		signal(SIGSEGV, SIG_DFL);
		memset((uint8_t *)ro + 200, 0xff, 64);
		_exit(0);
	}
	int st;
	CHECK(waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV);
	/* A private writable copy is allowed, and changes nothing shared. */
	uint8_t *priv = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	CHECK(priv != MAP_FAILED);
	memset(priv, 0xff, size);
	munmap(priv, size);
	munmap(ro, size);

	struct kj__hittab_reader *r = NULL;
	CHECK_EQ_INT(kj__hittab_reader_open(&r, fd), 0);
	fp_of(1, fp);
	CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), 0);
	CHECK(obj_ok(1, hit.data, hit.size, 4096));
	free(hit.data);
	/* The writer still writes through the mapping it made before sealing. */
	put_obj(w, 2, 1, 4096);
	fp_of(2, fp);
	CHECK_EQ_INT(kj__hittab_lookup(r, fp, &hit), 0);
	free(hit.data);
	kj__hittab_reader_close(r);
	close(fd);
	kj__hittab_free(w);
}

/* A sealed memfd holding exactly image[0..n). */
static int sealed_image(const void *image, size_t n, int seals)
{
	int fd = memfd_create("test-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	CHECK(fd >= 0);
	CHECK(n == 0 || kj__write_all(fd, image, n) == 0);
	CHECK(fcntl(fd, F_ADD_SEALS, seals) == 0);
	return fd;
}

#define ALL_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL)

static void test_refuses_unsealed(void)
{
	struct kj__hittab *w = NULL;
	struct kj__hittab_reader *r = NULL;

	CHECK_EQ_INT(kj__hittab_create(&w, SMALL_BYTES, SMALL_SLOTS), 0);
	uint8_t *img = malloc(SMALL_BYTES);
	CHECK(img != NULL);
	int fd = -1;
	CHECK_EQ_INT(kj__hittab_reader_fd(w, &fd), 0);
	CHECK(pread(fd, img, SMALL_BYTES, 0) == SMALL_BYTES);
	close(fd);
	/* The same bytes, not sealed against shrinking or against writes. */
	fd = sealed_image(img, SMALL_BYTES, F_SEAL_GROW);
	CHECK_EQ_INT(kj__hittab_reader_open(&r, fd), KJIT_EPROTO);
	close(fd);
	fd = sealed_image(img, SMALL_BYTES, F_SEAL_SHRINK);
	CHECK_EQ_INT(kj__hittab_reader_open(&r, fd), KJIT_EPROTO);
	close(fd);
	fd = sealed_image(img, SMALL_BYTES, ALL_SEALS);
	CHECK_EQ_INT(kj__hittab_reader_open(&r, fd), 0);
	kj__hittab_reader_close(r);
	close(fd);
	/* A plain file has no seals. */
	fd = open("/proc/self/exe", O_RDONLY);
	CHECK(fd >= 0);
	CHECK_EQ_INT(kj__hittab_reader_open(&r, fd), KJIT_EPROTO);
	close(fd);
	CHECK(r == NULL);
	free(img);
	kj__hittab_free(w);
}

/* Opens image as a table and looks up every fingerprint its slots name
 * plus the ones given; whatever the bytes, only defined answers. */
static int probe_image(const uint8_t *img, size_t n, unsigned ids)
{
	struct kj__hittab_reader *r = NULL;
	struct kj__hit hit;
	uint8_t fp[KJ_SHA256_LEN];
	int hits = 0;

	int fd = sealed_image(img, n, ALL_SEALS);
	int rc = kj__hittab_reader_open(&r, fd);
	close(fd);
	if (rc < 0) {
		CHECK(rc == KJIT_EPROTO);
		return -1;
	}
	for (unsigned i = 0; i < ids; i++) {
		fp_of(i, fp);
		rc = kj__hittab_lookup(r, fp, &hit);
		CHECK(rc == 0 || rc == KJIT_ENOENT || rc == KJIT_ECORRUPT || rc == KJIT_ETIMEDOUT);
		if (rc == 0) {
			CHECK(hit.size > 0 && hit.size <= KJ_OBJECT_MAX && hit.target[0] != '\0');
			CHECK(memchr(hit.version, '\0', sizeof hit.version) != NULL);
			free(hit.data);
			hits++;
		}
	}
	kj__hittab_reader_close(r);
	return hits;
}

static void test_malformed(void)
{
	struct kj__hittab *w = NULL;
	int fd = -1;

	/* Random bytes of several sizes. */
	srandom(12345);
	for (int k = 0; k < 50; k++) {
		size_t n = (size_t)(random() % (3 * 4096));
		uint8_t *p = malloc(n + 1);
		CHECK(p != NULL);
		for (size_t i = 0; i < n; i++)
			p[i] = (uint8_t)random();
		CHECK(probe_image(p, n, 4) == -1); /* no magic: refused */
		free(p);
	}
	/* A real table, then mutations of it. */
	CHECK_EQ_INT(kj__hittab_create(&w, SMALL_BYTES, SMALL_SLOTS), 0);
	for (uint32_t i = 0; i < 30; i++)
		put_obj(w, i, 1, 2048);
	uint8_t *img = malloc(SMALL_BYTES), *mut = malloc(SMALL_BYTES);
	CHECK(img && mut);
	CHECK_EQ_INT(kj__hittab_reader_fd(w, &fd), 0);
	CHECK(pread(fd, img, SMALL_BYTES, 0) == SMALL_BYTES);
	close(fd);
	CHECK_EQ_INT(probe_image(img, SMALL_BYTES, 30), 30);
	/* Truncated, or with a header that lies about the sizes. */
	CHECK_EQ_INT(probe_image(img, SMALL_BYTES - 4096, 30), -1);
	memcpy(mut, img, SMALL_BYTES);
	uint64_t huge = UINT64_MAX - 100;
	memcpy(mut + 48, &huge, 8); /* arena_size */
	CHECK_EQ_INT(probe_image(mut, SMALL_BYTES, 30), -1);
	/* Every slot's offset and length out of range: all corrupt, none served. */
	memcpy(mut, img, SMALL_BYTES);
	for (unsigned s = 0; s < SMALL_SLOTS; s++) {
		uint8_t *slot = mut + 128 + 64 * s;
		uint64_t off = (uint64_t)SMALL_BYTES * 4;
		memcpy(slot + 16, &off, 8);
	}
	CHECK_EQ_INT(probe_image(mut, SMALL_BYTES, 30), 0);
	memcpy(mut, img, SMALL_BYTES);
	for (unsigned s = 0; s < SMALL_SLOTS; s++) {
		uint32_t len = 0xffffffc0u;
		memcpy(mut + 128 + 64 * s + 24, &len, 4);
	}
	CHECK_EQ_INT(probe_image(mut, SMALL_BYTES, 30), 0);
	/* Records with huge lengths inside. */
	memcpy(mut, img, SMALL_BYTES);
	for (size_t off = 128 + 64 * SMALL_SLOTS; off + 64 <= SMALL_BYTES; off += 64) {
		uint32_t v;
		memcpy(&v, mut + off, 4);
		if (v == 0x4345524bu)
			memset(mut + off + 4, 0xff, 8);
	}
	CHECK_EQ_INT(probe_image(mut, SMALL_BYTES, 30), 0);
	/* Random mutations of the index and record headers. */
	for (int k = 0; k < 300; k++) {
		memcpy(mut, img, SMALL_BYTES);
		for (int j = 0; j < 16; j++) {
			size_t at = (size_t)random() % (k % 2 ? 128 + 64 * SMALL_SLOTS : SMALL_BYTES);
			mut[at] = (uint8_t)random();
		}
		probe_image(mut, SMALL_BYTES, 30);
	}
	free(img);
	free(mut);
	kj__hittab_free(w);
}

static void count_slot(void *arg, uint32_t slot, uint32_t n)
{
	uint32_t *seen = arg;
	seen[slot] += n;
}

static void test_counters(void)
{
	struct kj__hitctr *d = NULL, *c = NULL, *bad = NULL;
	uint32_t seen[SMALL_SLOTS] = { 0 };
	uint64_t hits, bytes;
	int fd = -1;

	CHECK_EQ_INT(kj__hitctr_create(&d, SMALL_SLOTS, &fd), 0);
	CHECK(fd >= 0);
	CHECK_EQ_INT(kj__hitctr_map(&bad, fd, SMALL_SLOTS * 2), KJIT_EPROTO);
	CHECK(bad == NULL);
	CHECK_EQ_INT(kj__hitctr_map(&c, fd, SMALL_SLOTS), 0);
	CHECK(ftruncate(fd, 1 << 20) < 0 && errno == EPERM); /* the client cannot resize it */
	close(fd);
	for (int i = 0; i < 10; i++)
		kj__hitctr_count(c, 3, 100);
	kj__hitctr_count(c, 7, 5);
	kj__hitctr_count(c, SMALL_SLOTS + 5, 5); /* out of range: totals only */
	kj__hitctr_harvest(d, &hits, &bytes, count_slot, seen);
	CHECK_EQ_INT(hits, 12);
	CHECK_EQ_INT(bytes, 1010);
	CHECK_EQ_INT(seen[3], 10);
	CHECK_EQ_INT(seen[7], 1);
	kj__hitctr_harvest(d, &hits, &bytes, count_slot, seen);
	CHECK_EQ_INT(hits, 0);
	CHECK_EQ_INT(seen[3], 10);
	kj__hitctr_free(c);
	kj__hitctr_free(d);
	kj__hitctr_free(NULL);
}

/* The header and slots are allocated when the table is made, so a
 * client's probe of a slot never written maps a page that is there
 * instead of faulting in a new zeroed one of its own (issue 35). */
static void test_slots_allocated(void)
{
	struct kj__hittab *w = NULL;
	struct stat st;
	int fd = -1;

	CHECK_EQ_INT(kj__hittab_create(&w, 4u << 20, 16384), 0);
	CHECK_EQ_INT(kj__hittab_reader_fd(w, &fd), 0);
	CHECK_EQ_INT(fstat(fd, &st), 0);
	/* 128-byte header and 16384 slots of 64 bytes: 1 MiB and a page */
	CHECK((uint64_t)st.st_blocks * 512 >= 128 + 16384 * 64);
	CHECK((uint64_t)st.st_blocks * 512 < 2u << 20); /* not the arena */
	close(fd);
	kj__hittab_free(w);
}

TEST_LIST(
	TEST(roundtrip)
	TEST(slots_allocated)
	TEST(eviction)
	TEST(kept_ids)
	TEST(race)
	TEST(client_cannot_write)
	TEST(refuses_unsealed)
	TEST(malformed)
	TEST(counters)
)

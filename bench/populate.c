/* populate.c: fills a kjit cache with synthetic entries, fast, for the
 * scale benchmark.
 *
 *   bench-populate CACHE_DIR N [-s BYTES] [-d DIRS]
 *   bench-populate CACHE_DIR --seed KEY FILE VERSION
 *
 * Writes N object files of BYTES bytes (default 256) spread over DIRS
 * object directories <cache>/gfx90a-syn<j>/ (default 16), and their index
 * rows in one sqlite transaction, following the schema of cache/index.c:
 * key = 64 hex digits (the SHA-256 of "kjit-bench-<i>", so keys are
 * uniform like real ones), sha256 = the digest of the file's bytes (each
 * object differs in its first 8 bytes), last used a day ago, so that gc
 * evicts synthetic entries before the real one the benchmark hits.  The
 * daemon must not be running (we bypass its lock); the index must exist
 * (the benchmark creates one real entry first).  Files are not fsync'd;
 * the index is checkpointed at the end.  Prints "seconds".
 *
 * --seed adds one entry: FILE's bytes under the given KEY in
 * <cache>/gfx90a-VERSION/.  The benchmark uses it for an object that the
 * daemon computed the key of but could not compile (kjitd cannot hand a
 * job larger than a socket buffer to its worker), so that its hits can
 * still be timed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define TARGET "gfx90a"
#define EXT "hsaco"

static void sha256_hex(const void *p, size_t n, char hex[65])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned len = 0;

	if (EVP_Digest(p, n, md, &len, EVP_sha256(), NULL) != 1 || len != 32)
		bench_die("sha256 failed");
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", md[i]);
}

static void write_object(const char *path, const unsigned char *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0 || write(fd, p, n) != (ssize_t)n || close(fd) < 0)
		bench_die("cannot write %s: %s", path, strerror(errno));
}

static void db_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		bench_die("%s: %s", sql, msg ? msg : "?");
}

static sqlite3 *db_open(const char *dir)
{
	char path[PATH_MAX];
	sqlite3 *db = NULL;

	snprintf(path, sizeof path, "%s/index.sqlite", dir);
	if (access(path, F_OK) < 0 || sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		bench_die("cannot open %s (create one real entry first)", path);
	db_exec(db, "PRAGMA synchronous=OFF");
	db_exec(db, "PRAGMA cache_size=-262144"); /* 256 MB: random keys touch every page */
	db_exec(db, "BEGIN");
	return db;
}

static void db_done(sqlite3 *db)
{
	db_exec(db, "COMMIT");
	db_exec(db, "PRAGMA wal_checkpoint(TRUNCATE)");
	if (sqlite3_close(db) != SQLITE_OK)
		bench_die("close: %s", sqlite3_errmsg(db));
}

static sqlite3_stmt *insert_stmt(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO objects(key, backend, target, version, ext, size,"
			       " sha256, created, last_used, used_seq, hits, compile_ms, source_name, options,"
			       " compiler) VALUES(?1, 1, '" TARGET "', ?2, '" EXT "', ?3, ?4, ?5, ?5, 0, 0, 250,"
			       " 'synthetic.cu', '-O3', 'test 1')", -1, &st, NULL) != SQLITE_OK)
		bench_die("prepare: %s", sqlite3_errmsg(db));
	return st;
}

static void insert(sqlite3 *db, sqlite3_stmt *st, const char *key, const char *ver, size_t size,
		   const char *sha, int64_t when)
{
	sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(st, 2, ver, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)size);
	sqlite3_bind_text(st, 4, sha, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(st, 5, when);
	if (sqlite3_step(st) != SQLITE_DONE)
		bench_die("insert: %s", sqlite3_errmsg(db));
	sqlite3_reset(st);
}

/* --seed KEY FILE VERSION */
static int seed_one(const char *dir, char **argv)
{
	char path[PATH_MAX], sha[65];
	struct stat stb;
	int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
	unsigned char *p;

	if (strlen(argv[0]) != 64 || strspn(argv[0], "0123456789abcdef") != 64)
		bench_die("--seed: bad key %s", argv[0]);
	if (fd < 0 || fstat(fd, &stb) < 0 || (p = malloc((size_t)stb.st_size + 1)) == NULL ||
	    read(fd, p, (size_t)stb.st_size) != stb.st_size)
		bench_die("cannot read %s", argv[1]);
	close(fd);
	sha256_hex(p, (size_t)stb.st_size, sha);
	snprintf(path, sizeof path, "%s/%s-%s", dir, TARGET, argv[2]);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		bench_die("mkdir %s: %s", path, strerror(errno));
	snprintf(path, sizeof path, "%s/%s-%s/%s.%s", dir, TARGET, argv[2], argv[0], EXT);
	write_object(path, p, (size_t)stb.st_size);
	sqlite3 *db = db_open(dir);
	sqlite3_stmt *st = insert_stmt(db);
	insert(db, st, argv[0], argv[2], (size_t)stb.st_size, sha, (int64_t)time(NULL));
	sqlite3_finalize(st);
	db_done(db);
	free(p);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned long n, size = 256, dirs = 16;
	char path[PATH_MAX], key[65], sha[65], ver[32], seed[64];

	if (argc == 6 && strcmp(argv[2], "--seed") == 0)
		return seed_one(argv[1], argv + 3);
	if (argc < 3 || (argc - 3) % 2)
		bench_die("usage: bench-populate CACHE_DIR N [-s BYTES] [-d DIRS]\n"
			  "       bench-populate CACHE_DIR --seed KEY FILE VERSION");
	const char *dir = argv[1];
	n = bench_num("N", argv[2]);
	for (int i = 3; i < argc; i += 2) {
		if (strcmp(argv[i], "-s") == 0)
			size = bench_num("-s", argv[i + 1]);
		else if (strcmp(argv[i], "-d") == 0)
			dirs = bench_num("-d", argv[i + 1]);
		else
			bench_die("unknown option %s", argv[i]);
	}
	if (size < 8 || dirs == 0 || dirs > 1000)
		bench_die("-s at least 8 bytes, -d 1..1000");

	double t0 = bench_now_us();
	unsigned char *obj = malloc(size);
	if (obj == NULL)
		bench_die("out of memory");
	for (unsigned long k = 0; k < size; k++)
		obj[k] = (unsigned char)(k * 7 + 1);
	for (unsigned long j = 0; j < dirs; j++) {
		snprintf(path, sizeof path, "%s/%s-syn%lu", dir, TARGET, j);
		if (mkdir(path, 0755) < 0 && errno != EEXIST)
			bench_die("mkdir %s: %s", path, strerror(errno));
	}
	sqlite3 *db = db_open(dir);
	sqlite3_stmt *st = insert_stmt(db);
	int64_t day_ago = (int64_t)time(NULL) - 86400;
	for (unsigned long i = 0; i < n; i++) {
		unsigned long j = i % dirs;
		memcpy(obj, &i, sizeof i);
		snprintf(seed, sizeof seed, "kjit-bench-%lu", i);
		sha256_hex(seed, strlen(seed), key);
		sha256_hex(obj, size, sha);
		snprintf(ver, sizeof ver, "syn%lu", j);
		snprintf(path, sizeof path, "%s/%s-%s/%s.%s", dir, TARGET, ver, key, EXT);
		write_object(path, obj, size);
		insert(db, st, key, ver, size, sha, day_ago + (int64_t)(i % 3600));
	}
	sqlite3_finalize(st);
	db_done(db);
	free(obj);
	printf("%.2f\n", (bench_now_us() - t0) / 1e6);
	return 0;
}

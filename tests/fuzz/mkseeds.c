/* mkseeds.c: writes the seed corpora of the fuzz harnesses, one directory
 * per harness under the directory given (build/fuzz/seeds by `make
 * fuzz-seeds`).  The seeds are valid inputs built with the real encoder
 * (kj__msg_*), so the fuzzers start from frames the daemon accepts rather
 * than from blobs kept in git.
 *
 *   frame/     whole frames (header + body), also several back to back
 *   get/       GET bodies (fields only, as kj__get_check sees them)
 *   include/   SOURCE '\0' NAME '\n' DATA '\0' NAME '\n' DATA ... (fuzz-include.c)
 *   target/    target IDs of every backend and HSA_OVERRIDE_GFX_VERSION values
 *   manifest/  MANIFEST files
 *   hittab/    hit tables made by the real writer (fuzz-hittab.c's two forms)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hittab.h"

#include "kjit.h"
#include "proto.h"
#include "sha.h"

static const char *root;
static unsigned n_written;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void put_file(const char *dir, const char *name, const void *p, size_t n)
{
	char path[4096];

	snprintf(path, sizeof path, "%s/%s", root, dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		die(path);
	snprintf(path, sizeof path, "%s/%s/%s", root, dir, name);
	FILE *f = fopen(path, "wb");
	if (f == NULL || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
		die(path);
	n_written++;
}

static void put_str(const char *dir, const char *name, const char *s)
{
	put_file(dir, name, s, strlen(s));
}

static void check(int r, const char *what)
{
	if (r < 0) {
		fprintf(stderr, "mkseeds: %s: %d\n", what, r);
		exit(1);
	}
}

/* ---- GET requests, as the client library would send them ---- */

static const char scale_hip[] =
	"#include <hip/hip_runtime.h>\n"
	"#include \"common.h\"\n"
	"extern \"C\" __global__ void scale(float *x, float a, int n)\n"
	"{\n\tint i = blockIdx.x * blockDim.x + threadIdx.x;\n\tif (i < n)\n\t\tx[i] *= a;\n}\n";
static const char common_h[] = "#pragma once\n#include \"sub/util.h\"\n#define KJ_ONE 1\n";
static const char util_h[] = "#pragma once\nstatic inline int kj_twice(int x) { return 2 * x; }\n";

/* Builds GET frame number `which` into b. */
static void get_frame(struct kj__buf *b, int which)
{
	check(kj__msg_begin(b, KJ_MSG_GET, 7 + (uint32_t)which), "begin");
	switch (which) {
	case 0: /* kjit get --source scale.hip --backend hip --target gfx90a */
		check(kj__msg_put_u32(b, KJ_F_BACKEND, KJIT_BACKEND_HIP), "put");
		check(kj__msg_put_str(b, KJ_F_TARGET, "gfx90a"), "put");
		check(kj__msg_put_str(b, KJ_F_TARGET_SOURCE, "request"), "put");
		check(kj__msg_put_str(b, KJ_F_SOURCE, scale_hip), "put");
		check(kj__msg_put_str(b, KJ_F_SOURCE_NAME, "scale.hip"), "put");
		check(kj__msg_put_str(b, KJ_F_ENTRY, "scale"), "put");
		check(kj__msg_put_str(b, KJ_F_OPTION, "-O3"), "put");
		check(kj__msg_put_str(b, KJ_F_OPTION, "-DKJ_BLOCK=256"), "put");
		check(kj__msg_put_str(b, KJ_F_HEADER_NAME, "common.h"), "put");
		check(kj__msg_put_str(b, KJ_F_HEADER_DATA, common_h), "put");
		check(kj__msg_put_str(b, KJ_F_HEADER_NAME, "sub/util.h"), "put");
		check(kj__msg_put_str(b, KJ_F_HEADER_DATA, util_h), "put");
		break;
	case 1: /* a bundled kernel for CUDA */
		check(kj__msg_put_u32(b, KJ_F_BACKEND, KJIT_BACKEND_CUDA), "put");
		check(kj__msg_put_str(b, KJ_F_TARGET, "sm_90"), "put");
		check(kj__msg_put_str(b, KJ_F_VERSION, "13.0"), "put");
		check(kj__msg_put_str(b, KJ_F_KERNEL, "add_f32"), "put");
		break;
	case 2: /* Vulkan GLSL, no target (configuration or detection) */
		check(kj__msg_put_u32(b, KJ_F_BACKEND, KJIT_BACKEND_VULKAN), "put");
		check(kj__msg_put_str(b, KJ_F_SOURCE, "#version 450\nlayout(local_size_x = 64) in;\nvoid main() {}\n"),
		      "put");
		check(kj__msg_put_str(b, KJ_F_SOURCE_NAME, "empty.comp"), "put");
		check(kj__msg_put_str(b, KJ_F_ENTRY, "main"), "put");
		break;
	case 3: /* full AMD target ID with features and a runtime version */
		check(kj__msg_put_u32(b, KJ_F_BACKEND, KJIT_BACKEND_HIP), "put");
		check(kj__msg_put_str(b, KJ_F_TARGET, "gfx90a:sramecc+:xnack-"), "put");
		check(kj__msg_put_str(b, KJ_F_VERSION, "5.2.3"), "put");
		check(kj__msg_put_str(b, KJ_F_TARGET_SOURCE, "HSA_OVERRIDE_GFX_VERSION"), "put");
		check(kj__msg_put_str(b, KJ_F_KERNEL, "rms_norm_f32"), "put");
		check(kj__msg_put_str(b, KJ_F_OPTION, "-ffast-math"), "put");
		break;
	default: /* bad on purpose: traversal in a header name, unpaired header */
		check(kj__msg_put_u32(b, KJ_F_BACKEND, KJIT_BACKEND_HIP), "put");
		check(kj__msg_put_str(b, KJ_F_SOURCE, "#include \"../../x\"\n"), "put");
		check(kj__msg_put_str(b, KJ_F_HEADER_NAME, "../../x"), "put");
		check(kj__msg_put_str(b, KJ_F_HEADER_DATA, "int x;\n"), "put");
		check(kj__msg_put_str(b, KJ_F_HEADER_NAME, "lonely.h"), "put");
		break;
	}
	check(kj__msg_end(b), "end");
}

static void seeds_frame_get(void)
{
	struct kj__buf b = { 0 }, all = { 0 };
	char name[64];

	for (int i = 0; i < 5; i++) {
		get_frame(&b, i);
		snprintf(name, sizeof name, "get-%d", i);
		put_file("frame", name, b.p, b.len);
		put_file("get", name, b.p + KJ_FRAME_HDR_SIZE, b.len - KJ_FRAME_HDR_SIZE);
		check(kj__buf_append(&all, b.p, b.len), "append");
	}
	/* PING, STOP, ADMIN: the other client messages. */
	check(kj__msg_begin(&b, KJ_MSG_PING, 1), "begin");
	check(kj__msg_end(&b), "end");
	put_file("frame", "ping", b.p, b.len);
	check(kj__buf_append(&all, b.p, b.len), "append");
	check(kj__msg_begin(&b, KJ_MSG_ADMIN, 2), "begin");
	check(kj__msg_put_str(&b, KJ_F_CMD, "stats"), "put");
	check(kj__msg_put_str(&b, KJ_F_ARG, "zero"), "put");
	check(kj__msg_end(&b), "end");
	put_file("frame", "admin", b.p, b.len);
	check(kj__buf_append(&all, b.p, b.len), "append");
	check(kj__msg_begin(&b, KJ_MSG_STOP, 3), "begin");
	check(kj__msg_end(&b), "end");
	put_file("frame", "stop", b.p, b.len);
	/* Replies and worker messages: every field type (i32, u32, u64, str). */
	check(kj__msg_begin(&b, KJ_MSG_REPLY, 7), "begin");
	check(kj__msg_put_i32(&b, KJ_F_CODE, 0), "put");
	check(kj__msg_put_u32(&b, KJ_F_STATUS, KJIT_STATUS_COMPILED), "put");
	check(kj__msg_put_str(&b, KJ_F_KEY, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
	      "put");
	check(kj__msg_put_str(&b, KJ_F_TARGET, "gfx90a"), "put");
	check(kj__msg_put_str(&b, KJ_F_VERSION, "5.2.3"), "put");
	check(kj__msg_put(&b, KJ_F_DATA, "\177ELF\2\1\1@\0\0\0\0", 12), "put");
	check(kj__msg_put_str(&b, KJ_F_LOG, "warning: unused variable\n"), "put");
	check(kj__msg_end(&b), "end");
	put_file("frame", "reply", b.p, b.len);
	check(kj__buf_append(&all, b.p, b.len), "append");
	check(kj__msg_begin(&b, KJ_MSG_RESULT, 9), "begin");
	check(kj__msg_put_i32(&b, KJ_F_CODE, KJIT_ECOMPILE), "put");
	check(kj__msg_put_str(&b, KJ_F_ERROR, "error: use of undeclared identifier"), "put");
	check(kj__msg_put_u64(&b, KJ_F_COMPILE_US, 123456789012ull), "put");
	check(kj__msg_end(&b), "end");
	put_file("frame", "result", b.p, b.len);
	check(kj__buf_append(&all, b.p, b.len), "append");
	/* A stream of frames, as a client pipelining requests would send. */
	put_file("frame", "stream", all.p, all.len);
	/* A header with another protocol version and one over the cap. */
	uint8_t bad[KJ_FRAME_HDR_SIZE] = { 0, 0, 0, 0, 1, 0, 2, 0, 1, 0, 0, 0 };
	put_file("frame", "version2", bad, sizeof bad);
	uint8_t big[KJ_FRAME_HDR_SIZE] = { 0, 0, 0, 0xff, 2, 0, 1, 0, 1, 0, 0, 0 };
	put_file("frame", "toobig", big, sizeof big);
	kj__buf_free(&b);
	kj__buf_free(&all);
}

/* ---- include resolution: SOURCE '\0' (NAME '\n' DATA '\0')* ---- */

static void include_seed(const char *name, const char *source, const char *const *hdrs, size_t n)
{
	struct kj__buf b = { 0 };

	check(kj__buf_append(&b, source, strlen(source)), "append");
	for (size_t i = 0; i < n; i++) {
		check(kj__buf_append(&b, "", 1), "append");
		check(kj__buf_append(&b, hdrs[i], strlen(hdrs[i])), "append");
	}
	put_file("include", name, b.p, b.len);
	kj__buf_free(&b);
}

static void seeds_include(void)
{
	static const char *const req[] = { "req.h\n#include \"common.h\"\nint r;\n",
					   "deep/a.h\n#include \"b.h\"\n", "deep/b.h\n#include \"../x.h\"\n" };
	include_seed("scale", scale_hip, NULL, 0);
	include_seed("request-headers", "#include \"req.h\"\n#include \"deep/a.h\"\n", req, 3);
	include_seed("comments-strings",
		     "/* #include \"/etc/passwd\" */\n// #include <nothing.h>\n"
		     "const char *s = \"#include \\\"x\\\"\";\nconst char *r = R\"kj(\n#include \"no\"\n)kj\";\n"
		     "int big = 1'000'000;\nchar c = '\"';\n  #  include <hip/hip_runtime.h>\n"
		     "#include \\\n\"common.h\"\n",
		     NULL, 0);
	include_seed("bad-absolute", "#include \"/etc/passwd\"\n", NULL, 0);
	include_seed("bad-dotdot", "#include \"../../x\"\n", NULL, 0);
	include_seed("bad-computed", "#define H <common.h>\n#include H\n", NULL, 0);
	/* issue 30: computed includes expanded, lexer variants */
	include_seed("computed", "#define S2(x) #x\n#define S(x) S2(x)\n#define H(x) <x>\n#define CAT(a, b) a##b\n"
		     "#include H(common.h)\n#include S(CAT(common, .h))\n#define V(...) <__VA_ARGS__>\n"
		     "#include V(common.h)\n#if __has_include(H(x.h))\n#endif\n", NULL, 0);
	include_seed("variants", "// note \\ \n#include \"common.h\"\n?\?=include <common.h>\n?\?/\n#include \"x.h\"\n",
		     NULL, 0);
	include_seed("bad-escape", "#include \"escape.h\"\n", NULL, 0);
	include_seed("next-import", "#include_next <sub/util.h>\n#import \"common.h\"\n", NULL, 0);
	static const char *const cyc[] = { "a.h\n#include \"b.h\"\n", "b.h\n#include \"a.h\"\n" };
	include_seed("cycle", "#include \"a.h\"\n", cyc, 2);
}

/* ---- targets and manifests ---- */

static void seeds_target(void)
{
	static const char *const t[] = {
		"gfx90a", "gfx90a:xnack-", "gfx90a:sramecc+:xnack-", "gfx90a:xnack+:sramecc-", "gfx942:sramecc+",
		"gfx1030", "gfx1100", "gfx906:xnack+", "gfx1030:xnack-", "GFX90A", "amdgcn-amd-amdhsa--gfx90a",
		"gfx90a:xnack", "gfx90a::", "sm_90", "sm_90a", "compute_90", "sm_120", "sm_100f", "vulkan1.1",
		"vulkan1.2", "vulkan1.3", "10.3.0", "9.0.10", "11.0.0", "9.4.2", "1000.0.0",
	};
	char name[32];

	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		snprintf(name, sizeof name, "t%02zu", i);
		put_str("target", name, t[i]);
	}
}

static void seeds_manifest(void)
{
	put_str("manifest", "one", "add_f32 hip binary.cu add_f32 -DKJ_BLOCK=256\n");
	put_str("manifest", "three",
		"# comment\nadd_f32 hip binary.cu add_f32 -DKJ_BLOCK=256\n"
		"add_f32 cuda binary.cu add_f32 -DKJ_BLOCK=256   # trailing\n\n"
		"add_f32 vulkan vulkan/binary.comp main -DKJ_BLOCK=256 -DKJ_OP_ADD\r\n"
		"softmax hip softmax.cu softmax_f32,softmax_f16 -DKJ_BLOCK=128\t-O3\n");
	put_str("manifest", "bad-path", "evil hip ../../etc/passwd main\n");
	put_str("manifest", "bad-backend", "k metal k.metal main\n");
	put_str("manifest", "short", "k hip\n");
}

/* ---- bundles (daemon/admin/bundle.c's format, docs/bundle.md) ---- */

static void le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void field(struct kj__buf *b, uint16_t tag, const void *p, size_t n)
{
	uint8_t h[6];
	le(h, tag, 2);
	le(h + 2, n, 4);
	check(kj__buf_append(b, h, sizeof h), "bundle field");
	check(kj__buf_append(b, p, n), "bundle field");
}

static void field_u64(struct kj__buf *b, uint16_t tag, uint64_t v)
{
	uint8_t p[8];
	le(p, v, 8);
	field(b, tag, p, 8);
}

/* A bundle of n objects of the given sizes, each under a key of its own or,
 * with same_key, all under one (an importer that placed each would leave a
 * file of one under the row of another).  The trailer is left zero: the
 * harness rewrites it for inputs whose first byte is odd ('K' is). */
static void seed_bundle(const char *name, size_t n, const size_t *sizes, int same_key)
{
	struct kj__buf man = { 0 }, rec = { 0 }, out = { 0 };
	uint8_t hdr[24], dg[KJ_SHA256_LEN], obj[512];
	char hex[65], key[65];

	for (size_t i = 0; i < n; i++) {
		memset(obj, (int)('a' + i), sizeof obj);
		check(kj__sha256(obj, sizes[i], dg), "sha");
		kj__hex(dg, hex);
		snprintf(key, sizeof key, "%064zx", same_key ? (size_t)1 : i + 1);
		rec.len = 0;
		field(&rec, 1, key, 64);
		field_u64(&rec, 2, 1);
		field(&rec, 3, "gfx90a", 6);
		field(&rec, 4, "5.2", 3);
		field(&rec, 5, "hsaco", 5);
		field_u64(&rec, 6, sizes[i]);
		field(&rec, 7, hex, 64);
		field(&rec, 8, "k.hip", 5);
		field(&rec, 9, "-O3", 3);
		field(&rec, 10, "hiprtc 9.0", 10);
		field_u64(&rec, 11, 250);
		field(&rec, 12, "", 0);
		uint8_t rl[4];
		le(rl, rec.len, 4);
		check(kj__buf_append(&man, rl, 4), "manifest");
		check(kj__buf_append(&man, rec.p, rec.len), "manifest");
	}
	memcpy(hdr, "KJITBNDL", 8);
	le(hdr + 8, 1, 4);
	le(hdr + 12, n, 4);
	le(hdr + 16, man.len, 8);
	check(kj__buf_append(&out, hdr, sizeof hdr), "bundle");
	check(kj__buf_append(&out, man.p, man.len), "bundle");
	for (size_t i = 0; i < n; i++) {
		memset(obj, (int)('a' + i), sizeof obj);
		check(kj__buf_append(&out, obj, sizes[i]), "bundle");
	}
	memset(dg, 0, sizeof dg);
	check(kj__buf_append(&out, dg, sizeof dg), "bundle");
	put_file("bundle", name, out.p, out.len);
	kj__buf_free(&man);
	kj__buf_free(&rec);
	kj__buf_free(&out);
}

static void seeds_bundle(void)
{
	static const size_t one[] = { 100 }, three[] = { 1, 300, 512 };
	seed_bundle("one", 1, one, 0);
	seed_bundle("three", 3, three, 0);
	seed_bundle("same-key", 3, three, 1);
	seed_bundle("empty", 0, NULL, 0);
	put_str("bundle", "not-a-bundle", "KJITBNDX and then some bytes that are not a bundle at all.......");
}

/* ---- hit tables ---- */

static void seeds_hittab(void)
{
	enum { SLOTS = 16, HDR = 128, SLOT = 64 };
	static const size_t sizes[] = { 100, 300, 700 };
	struct kj__hittab *w = NULL;
	uint8_t fp[KJ_SHA256_LEN], key[KJ_SHA256_LEN], obj[1024];
	int fd = -1;

	check(kj__hittab_create(&w, KJ_HITTAB_BYTES_MIN, SLOTS), "hittab create");
	for (size_t i = 0; i < 3; i++) {
		char req[32];
		snprintf(req, sizeof req, "request-%zu", i);
		check(kj__sha256(req, strlen(req), fp), "sha");
		memset(key, (int)i, sizeof key);
		memset(obj, (int)('a' + i), sizeof obj);
		check(kj__hittab_put(w, fp, key, i == 2 ? "sm_90" : "gfx90a:xnack-", i == 1 ? "" : "6.2", obj,
				     sizes[i]), "hittab put");
	}
	check(kj__hittab_reader_fd(w, &fd), "hittab fd");
	uint8_t *img = malloc(1 + KJ_HITTAB_BYTES_MIN);
	if (img == NULL || pread(fd, img + 1, KJ_HITTAB_BYTES_MIN, 0) != KJ_HITTAB_BYTES_MIN)
		die("hittab image");
	close(fd);
	img[0] = 0;
	put_file("hittab", "raw", img, 1 + KJ_HITTAB_BYTES_MIN);
	/* The slots and the used part of the arena, behind the form byte. */
	img[HDR] = 1;
	put_file("hittab", "body", img + HDR, 1 + SLOTS * SLOT + 2048);
	free(img);
	kj__hittab_free(w);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: mkseeds DIR\n");
		return 2;
	}
	root = argv[1];
	if (mkdir(root, 0755) < 0 && errno != EEXIST)
		die(root);
	seeds_frame_get();
	seeds_include();
	seeds_target();
	seeds_manifest();
	seeds_bundle();
	seeds_hittab();
	printf("mkseeds: %u seeds in %s\n", n_written, root);
	return 0;
}

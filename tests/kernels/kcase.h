/*
 * kcase.h: kernel test cases shared by the Vulkan test and the launch examples.
 *
 * Two things every runner of the bundled kernels needs, whatever the backend:
 *  - the manifest (kernels_src/MANIFEST) parsed into entries, with the block size the
 *    launcher must use (the -DKJ_BLOCK=N option every line carries);
 *  - for each op NAME, a test case: random inputs (fixed seed, no zeros), the kernel's
 *    arguments in order (buffers first, then 4-byte scalars: exactly the CUDA/HIP
 *    parameter list and, packed, the Vulkan push-constant block), the launch geometry,
 *    and the oracle's answer for each output buffer.
 * kcase_build allocates; kcase_free releases; nothing here touches a GPU.
 * attn_decode_f32 also takes two scratch buffers after o (ws, counters; zero-filled
 * inputs, see attn_decode.cu) that the oracle does not; the Vulkan shader ignores them.
 *
 * Error measure (kcase_max_rel_err): for each output element,
 *     |got - ref| / max(|ref|, mag, 1e-3 * rowmax)
 * where rowmax is the largest |ref| in the element's row (the whole buffer for vectors)
 * and mag, for ops whose result is a sum of terms that can cancel, is the same sum taken
 * over the terms' absolute values (layer_norm: (|x| + |mean|) inv |w| + |b|; rope: |xa c| + |xb s|;
 * add/sub: |a| + |b|; matvec_q8 and attention: the oracle run on |w|, |x| and on |v|).
 * An oracle value of NaN marks an element left unchecked (the largest GEMM and prefill
 * shapes compute the exact answer for a sample of rows only; the kernel still writes all).
 * Dividing by mag measures the error relative to the size of what was actually added,
 * which is what float32 arithmetic can promise; a plain |ref| would blame the kernel for
 * the cancellation in the exact answer.  The rowmax floor does the same for results
 * that are tiny next to their row (softmax tails).  NaN or Inf (e.g. an element the
 * kernel never wrote over the NaN poison) counts as +Inf.
 */
#ifndef KJIT_TESTS_KCASE_H
#define KJIT_TESTS_KCASE_H

#include <stddef.h>
#include <stdint.h>

#define KCASE_MAX_BUFS 6
#define KCASE_MAX_SCALARS 8
#define KCASE_MAX_TMAPS 3
#define KCASE_MAX_OPTS 8
#define KCASE_NAME_MAX 64
#define KCASE_PATH_MAX 256

/* One manifest line. */
struct kmanifest_entry {
    char name[KCASE_NAME_MAX];
    char backend[8];
    char file[KCASE_PATH_MAX];    /* relative to the kernels_src directory */
    char entries[KCASE_PATH_MAX]; /* comma-separated */
    int nopts;
    char opts[KCASE_MAX_OPTS][KCASE_NAME_MAX];
    unsigned block; /* from -DKJ_BLOCK=N; 0 if absent */
};

/* Parse `path`; on success *out is a malloc'd array of *count entries (caller frees).
 * Returns 0, or -1 with a one-line reason in err. */
int kmanifest_load(const char *path, struct kmanifest_entry **out, int *count, char *err,
                   size_t errlen);
/* The entry for (name, backend), or NULL. */
const struct kmanifest_entry *kmanifest_find(const struct kmanifest_entry *e, int count,
                                             const char *name, const char *backend);

/* Launch geometry kinds; see kcase_grid. */
enum kcase_geom {
    KCASE_GEOM_COLQUADS, /* x: column quads / block, y: rows       (binary ops)   */
    KCASE_GEOM_QUADS,    /* x: element quads / block                (unary ops)    */
    KCASE_GEOM_ROWS,     /* x: one block per row                    (norms)        */
    KCASE_GEOM_ITEMS,    /* x: one thread per item / block          (rope pairs)   */
    KCASE_GEOM_WARPROWS, /* x: one 32-lane warp per 4 rows (Vulkan: one group per row) */
    KCASE_GEOM_HEADS,    /* x: one block per KV head (Vulkan: per query head), y: KV
                          * splits (Vulkan: 1)                      (attention)    */
    KCASE_GEOM_TILES,    /* x: ceil(items / tile), y: rows; Vulkan: vk_x, vk_y
                          *                          (GEMM, prefill attention)     */
};

struct kcase_buf {
    void *host;      /* inputs: data; outputs: poisoned with NaN before each launch */
    size_t bytes;
    size_t count;    /* elements */
    int half;        /* 0: 4-byte elements; 1: IEEE half; 2: bfloat16 (2-byte storage) */
    uint32_t poison32; /* a 32-bit fill pattern that makes every element NaN */
    int is_output;
    float *ref;      /* outputs: the oracle's answer (bytes / 4 floats) */
    float *mag;      /* outputs, optional: magnitude of the summed terms (see top) */
    size_t row_len;  /* outputs: elements per row for the error floor */
};

/* A CUDA tensor map (CUtensorMap, 128 bytes, passed by value after the scalars) the
 * launcher builds over buffer `buf` of 16-bit elements: 2-D, inner x outer elements, row
 * stride inner * 2 bytes, box box_inner x box_outer, 128-byte swizzle, zeros read past
 * the edges (gemm_sm90_*). */
struct kcase_tmap {
    int buf;
    uint64_t inner, outer;
    uint32_t box_inner, box_outer;
};

struct kcase {
    char op[KCASE_NAME_MAX];
    char shape[96]; /* human-readable sizes, for messages */
    int nbufs;
    struct kcase_buf bufs[KCASE_MAX_BUFS];
    int nscalars;
    uint32_t scalars[KCASE_MAX_SCALARS]; /* int32 or float bits, in argument order */
    enum kcase_geom geom;
    uint64_t items, rows; /* what the geometry counts */
    uint64_t kv_heads;    /* attention: the CUDA/HIP grid's x (rows is the query heads) */
    double flops;         /* matrix ops: arithmetic per launch (bench reports TFLOP/s) */
    uint32_t tile;        /* KCASE_GEOM_TILES: items per block along x */
    uint64_t vk_x, vk_y;  /* KCASE_GEOM_TILES: the Vulkan shader's workgroup grid */
    uint32_t tc_smem;     /* CUDA tensor-core path: dynamic shared memory bytes the
                           * launch must pass (gemm.cu's GM_SMEM_BYTES); 0 none */
    int ntmaps;           /* tensor maps after the scalars (CUDA sm_90a variants) */
    struct kcase_tmap tmaps[KCASE_MAX_TMAPS];
    double bytes_moved;   /* every buffer read or written once, for GB/s */
    double tol;           /* max relative error allowed: 1e-5 f32, 1e-3 f16, 8e-3 bf16 */
    int half;             /* 0 f32; 1 f16; 2 bf16 (how the float buffers are stored) */
};

/* Sizes for kcase_build: rows x cols for row ops (n = rows * cols for unary ops,
 * n x k for matvec_q8, T = rows for rope); heads/kv_heads/head_dim/kv_len for
 * rope and attention.  bcast selects row-vector broadcasting for binary ops. */
struct kcase_dims {
    int rows, cols, bcast;
    int heads, kv_heads, head_dim, kv_len;
    int inner; /* GEMM: K (rows = M, cols = N); prefill attention: T = rows */
    int slots; /* decode attention: blocks the device runs at once (SMs x blocks an SM of
                * the kernel), which caps the KV splits; 0 = unknown (keys alone decide) */
    int splits; /* decode attention: > 0, this many KV splits instead of the rule */
};

#define KCASE_MAX_SHAPES 6

/* The shapes op `name` is checked at (odd sizes, sizes not a multiple of 4, rows too
 * long for the register path, broadcasting, GQA, kv_len 1).  Returns how many (<= max). */
int kcase_test_shapes(const char *name, struct kcase_dims *d, int max);
/* The benchmark shape for op `name` moving about rows x cols floats per operand:
 * rows x cols for row ops; n = rows * cols for unary ops; matvec n = rows, k = cols;
 * rope T = rows, D = 128, H = cols / 128; attention H = 32, Hkv = 8, D = 128,
 * kv_len = rows * cols / (2 * 8 * 128). */
void kcase_bench_dims(const char *name, int rows, int cols, struct kcase_dims *d);
/* All the benchmark shapes of op `name` (the first is kcase_bench_dims's): attention
 * adds L = 4096 at batch 16 (heads folded: H = 512, Hkv = 128); GEMM is 4096^3 and
 * 8192^3 whatever rows/cols; prefill attention T = 4096, H = 32, Hkv = 8, D = 128 and
 * D = 64.  Returns how many. */
int kcase_bench_shapes(const char *name, int rows, int cols, struct kcase_dims *d, int max);

/* Build the case for op `name` (a manifest NAME; a "_sg" infix is ignored).  Names
 * ending in _f16 / _bf16 (binary ops, silu_gate, rms_norm, layer_norm) get inputs exactly
 * representable in that type, stored as 2-byte elements, and the oracle's answer from
 * those values; their tolerance is the type's rounding (tol).  Returns 0, -1 unknown op
 * or bad sizes, -2 out of memory. */
int kcase_build(struct kcase *c, const char *name, const struct kcase_dims *d, uint64_t seed);
/* Free what kcase_build allocated; safe on a zeroed or freed case. */
void kcase_free(struct kcase *c);
/* Fill every output buffer with NaN. */
void kcase_poison(struct kcase *c);
/* Grid for a launch with `block` threads: grid[0] x grid[1] blocks.  max_x/max_y cap
 * each dimension (kernels stride over the rest); vulkan selects the Vulkan shape where
 * it differs (matvec_q8: one workgroup per row). */
void kcase_grid(const struct kcase *c, unsigned block, int vulkan, uint32_t max_x,
                uint32_t max_y, uint32_t grid[2]);
/* Which variant of an op family serves shape d on a device, and why (the launcher's
 * choice made visible): writes a one-line reason into why and returns the manifest
 * name to use, or NULL when `name` has no variants.  attn_decode*: the D <= 128 entry
 * when head_dim <= 128, else the D <= 256 one; gemm_* and attn_prefill_*: the same
 * entry, but the CUDA tensor-core path needs sm_80 or newer (plain path otherwise) and
 * gemm's cp.async loads need K % 8 == 0; gemm_f16 / gemm_bf16 on a CUDA device sm_90
 * with K % 8 == 0: gemm_sm90_f16 / gemm_sm90_bf16 (wgmma, TMA; compiled for sm_90a);
 * attn_prefill_f16 / _bf16 there with D = 64 or 128: attn_prefill_sm90_f16 / _bf16. */
const char *kcase_variant(const char *name, const char *backend, const char *arch,
                          const struct kcase_dims *d, char *why, size_t n);
/* The manifest entry a launcher runs in place of `name` for shape d on the device
 * (backend, arch): the device-specific variant kcase_variant names when that is another
 * entry the launcher must switch to (gemm_f16 -> gemm_sm90_f16 on sm_90 when K % 8 == 0,
 * attn_prefill_f16 -> attn_prefill_sm90_f16 there when D is 64 or 128), else NULL (run `name`; attn_decode's pair are separate ops, each run as asked). */
const char *kcase_launch_variant(const char *name, const char *backend, const char *arch,
                                 const struct kcase_dims *d);
/* The target to compile entry `name` for on a device of target `arch` into out (size
 * n): arch itself, or sm_90a for the gemm_sm90_* and attn_prefill_sm90_* entries on an
 * sm_90 device.  Returns 0, or -1 when the entry cannot run on that device (those
 * entries anywhere but sm_90). */
int kcase_target(const char *name, const char *backend, const char *arch, char *out, size_t n);
/* Dynamic shared memory bytes a CUDA/HIP launch of case c must pass on (backend, arch):
 * c->tc_smem where the kernel takes its tensor-core path (CUDA sm_80 or newer; the
 * gemm_sm90_* cases only on sm_90 / sm_90a), else 0. */
uint32_t kcase_dyn_smem(const struct kcase *c, const char *backend, const char *arch);
/* Max relative error of output buffer `i` (see top); +Inf for NaN/Inf. */
double kcase_max_rel_err(const struct kcase *c, int i);

#endif

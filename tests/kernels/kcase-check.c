/*
 * kcase-check: the launcher's choices that kcase makes without a GPU, checked on the CPU
 * (the device run checks the kernels themselves).  Prints "ok WHAT" / "not ok WHAT" lines
 * (tests/run.sh counts them); exits 1 on a failure.
 *  - gemm_f16 / gemm_bf16 on a CUDA sm_90 device switch to gemm_sm90_* when K % 8 == 0
 *    (kcase_launch_variant), and the variant line says so; not on sm_80, HIP, or K % 8;
 *  - gemm_sm90_* are fetched for sm_90a on sm_90 and refused elsewhere (kcase_target);
 *  - their cases carry the 128 x 256 tiling, two tensor maps over A and B, and the
 *    dynamic shared memory gemm_sm90.cu's launch needs, only where that path runs;
 *  - attn_prefill_f16 / _bf16 on a CUDA sm_90 device switch to attn_prefill_sm90_* when D
 *    is 64 or 128 (not D = 80, sm_80 or HIP), fetched for sm_90a; their cases carry
 *    128-row tiles, three tensor maps over q, k, v and the dynamic shared memory;
 *  - decode attention's KV splits: by keys alone without the device's slots, else capped
 *    at the largest power of two that keeps KV heads x splits within one wave.
 */
#include <stdio.h>
#include <string.h>

#include "kcase.h"

static int failed;

static void check(int ok, const char *what)
{
    printf("%s %s\n", ok ? "ok" : "not ok", what);
    if (!ok)
        failed = 1;
}

static int streq(const char *a, const char *b) { return a && b && !strcmp(a, b); }

int main(void)
{
    struct kcase_dims d = {300, 260, 0, 0, 0, 0, 0, 1000, 0, 0}, odd = {37, 45, 0, 0, 0, 0, 0, 29, 0, 0};
    struct kcase c;
    char t[32], why[256];

    check(streq(kcase_launch_variant("gemm_f16", "cuda", "sm_90", &d), "gemm_sm90_f16"),
          "gemm_f16 on sm_90, K % 8 == 0: gemm_sm90_f16");
    check(streq(kcase_launch_variant("gemm_bf16", "cuda", "sm_90", &d), "gemm_sm90_bf16"),
          "gemm_bf16 on sm_90, K % 8 == 0: gemm_sm90_bf16");
    check(!kcase_launch_variant("gemm_f16", "cuda", "sm_90", &odd), "K = 29: gemm_f16 itself");
    check(!kcase_launch_variant("gemm_f16", "cuda", "sm_80", &d), "sm_80: gemm_f16 itself");
    check(!kcase_launch_variant("gemm_f16", "hip", "gfx90a", &d), "HIP: gemm_f16 itself");
    check(!kcase_launch_variant("rms_norm_f32", "cuda", "sm_90", &d), "other ops: no switch");
    check(streq(kcase_variant("gemm_f16", "cuda", "sm_90", &d, why, sizeof why), "gemm_sm90_f16") &&
              strstr(why, "wgmma"), "the variant line names the wgmma entry");
    check(streq(kcase_variant("gemm_f16", "cuda", "sm_90", &odd, why, sizeof why), "gemm_f16") &&
              strstr(why, "mma.sync"), "K = 29 on sm_90: the line says mma.sync and why");

    check(kcase_target("gemm_sm90_f16", "cuda", "sm_90", t, sizeof t) == 0 && streq(t, "sm_90a"),
          "gemm_sm90_f16 on sm_90: target sm_90a");
    check(kcase_target("gemm_sm90_f16", "cuda", "sm_80", t, sizeof t) < 0,
          "gemm_sm90_f16 on sm_80: not for this device");
    check(kcase_target("gemm_f16", "cuda", "sm_90", t, sizeof t) == 0 && streq(t, "sm_90"),
          "gemm_f16 on sm_90: the device's own target");

    check(kcase_build(&c, "gemm_sm90_bf16", &d, 1) == 0 && c.half == 2 && c.tile == 256 &&
              c.rows == 3 && c.ntmaps == 2 && c.tmaps[0].buf == 0 && c.tmaps[0].inner == 1000 &&
              c.tmaps[0].outer == 300 && c.tmaps[0].box_outer == 128 && c.tmaps[1].buf == 1 &&
              c.tmaps[1].outer == 260 && c.tmaps[1].box_outer == 256 && c.tmaps[1].box_inner == 64,
          "gemm_sm90_bf16 case: bf16, 128 x 256 tiles, maps over A {K, M} and B {K, N}");
    check(kcase_dyn_smem(&c, "cuda", "sm_90") == 4 * (128 + 256) * 64 * 2 + 1280 &&
              kcase_dyn_smem(&c, "cuda", "sm_80") == 0,
          "gemm_sm90 shared memory on sm_90 only (GM9_SMEM_BYTES)");
    kcase_free(&c);
    check(kcase_build(&c, "gemm_sm90_f16", &odd, 1) == -1, "gemm_sm90_f16 refuses K % 8 != 0");
    check(kcase_build(&c, "gemm_f16", &d, 1) == 0 && c.ntmaps == 0 && c.tile == 128,
          "gemm_f16 case: no tensor maps, 128-wide tiles");
    kcase_free(&c);

    struct kcase_dims sh[KCASE_MAX_SHAPES];
    int n = kcase_test_shapes("gemm_sm90_f16", sh, KCASE_MAX_SHAPES), all = n > 0, whole = 0;
    for (int i = 0; i < n; i++) {
        all = all && sh[i].inner % 8 == 0;
        whole = whole || (sh[i].rows % 128 == 0 && sh[i].cols % 256 == 0 && sh[i].inner % 64);
    }
    check(all, "gemm_sm90 test shapes all have K % 8 == 0");
    check(whole, "and one of whole 128 x 256 tiles with a ragged K (the unmasked stores)");

    /* prefill, T = 300, H = 8, Hkv = 2 */
    struct kcase_dims p = {300, 1, 0, 8, 2, 128, 0, 0, 0, 0}, p80 = {300, 1, 0, 8, 2, 80, 0, 0, 0, 0};
    check(streq(kcase_launch_variant("attn_prefill_f16", "cuda", "sm_90", &p), "attn_prefill_sm90_f16") &&
              streq(kcase_launch_variant("attn_prefill_bf16", "cuda", "sm_90", &p), "attn_prefill_sm90_bf16"),
          "attn_prefill_f16 / _bf16 on sm_90, D = 128: attn_prefill_sm90_*");
    check(!kcase_launch_variant("attn_prefill_f16", "cuda", "sm_90", &p80) &&
              !kcase_launch_variant("attn_prefill_f16", "cuda", "sm_80", &p) &&
              !kcase_launch_variant("attn_prefill_f16", "hip", "gfx90a", &p),
          "D = 80, sm_80, HIP: attn_prefill_f16 itself");
    check(streq(kcase_variant("attn_prefill_bf16", "cuda", "sm_90", &p, why, sizeof why),
                "attn_prefill_sm90_bf16") && strstr(why, "wgmma") && strstr(why, "causal tiles skipped"),
          "the prefill's variant line names the wgmma entry");
    check(streq(kcase_variant("attn_prefill_f16", "cuda", "sm_90", &p80, why, sizeof why),
                "attn_prefill_f16") && strstr(why, "D = 80"),
          "D = 80 on sm_90: the line says mma.sync and why");
    check(kcase_target("attn_prefill_sm90_f16", "cuda", "sm_90", t, sizeof t) == 0 && streq(t, "sm_90a") &&
              kcase_target("attn_prefill_sm90_f16", "cuda", "sm_80", t, sizeof t) < 0,
          "attn_prefill_sm90_f16: target sm_90a on sm_90, refused on sm_80");
    check(kcase_build(&c, "attn_prefill_sm90_f16", &p, 1) == 0 && c.half == 1 && c.tile == 128 &&
              c.ntmaps == 3 && c.tmaps[0].buf == 0 && c.tmaps[0].inner == 8 * 128 &&
              c.tmaps[0].outer == 300 && c.tmaps[1].buf == 1 && c.tmaps[1].inner == 2 * 128 &&
              c.tmaps[2].buf == 2 && c.tmaps[2].box_inner == 64 && c.tmaps[2].box_outer == 128 &&
              kcase_dyn_smem(&c, "cuda", "sm_90") == 5 * 128 * 128 * 2 + 1280,
          "attn_prefill_sm90_f16 case: 128-row tiles, maps over q {H D, T}, k and v {Hkv D, T}");
    kcase_free(&c);
    check(kcase_build(&c, "attn_prefill_sm90_f16", &p80, 1) == -1, "attn_prefill_sm90_f16 refuses D = 80");
    check(kcase_build(&c, "attn_prefill_f16", &p, 1) == 0 && c.ntmaps == 0 && c.tile == 64,
          "attn_prefill_f16 case: no tensor maps, 64-row tiles");
    kcase_free(&c);

    /* 40000 keys, D = 16: 79 splits of 512 keys; 264 slots (an H100 at 2 blocks an SM)
     * over 8 KV heads: 32, not 33; 4 slots: 1; a short cache keeps its few splits */
    struct kcase_dims a = {1, 1, 0, 8, 8, 16, 40000, 0, 0, 0};
    const struct { int slots, kv_len, want; } sp[] = {{0, 40000, 79}, {264, 40000, 32},
                                                     {4, 40000, 1}, {264, 1500, 3}};
    for (size_t i = 0; i < sizeof sp / sizeof sp[0]; i++) {
        char what[96];
        a.slots = sp[i].slots, a.kv_len = sp[i].kv_len;
        snprintf(what, sizeof what, "attn_decode, 8 KV heads, L = %d, %d slots: %d KV splits",
                 sp[i].kv_len, sp[i].slots, sp[i].want);
        check(kcase_build(&c, "attn_decode_f32", &a, 1) == 0 && c.items == (uint64_t)sp[i].want,
              what);
        kcase_free(&c);
    }
    /* the launcher's --splits overrides the rule (33: every slot of 132 SMs x 2 at 8 KV
     * heads), and the counters have room for the dynamic split's chunk counters
     * (KJ_ATT_DS: counters[Hkv + kvh]), zeroed */
    a.slots = 264, a.kv_len = 40000, a.splits = 33;
    check(kcase_build(&c, "attn_decode_f32", &a, 1) == 0 && c.items == 33 &&
              c.bufs[5].count >= 2 * 8 && ((const uint32_t *)c.bufs[5].host)[2 * 8 - 1] == 0,
          "attn_decode --splits 33: 33 KV splits, 2 x Hkv zeroed counters");
    kcase_free(&c);
    return failed;
}

/*
 * kjit_wgmma.h: the Hopper (sm_90a) pieces of attn_prefill_sm90.cu and gemm_sm90.cu:
 * mbarriers, bulk tensor copies, wgmma shared-memory descriptors, fences, and the three
 * wgmma shapes the prefill issues (generated operand lists: 64 or 32 f32 accumulators a
 * thread; the GEMM's m64n256k16 stays in gemm_sm90.cu).
 *   pf9_bar_init/expect/arrive/wait   mbarrier in shared memory (wait traps after
 *                                     about 2^28 polls: a bug, not a hang)
 *   pf9_tma_load(dst, map, bar, x, y) one box of a 2-D tensor map at (x, y)
 *   pf9_desc_k(addr)                  K-major, 128-byte-swizzled tile of 128-byte rows
 *   pf9_desc_mn(addr)                 MN-major (transposed) tile, same swizzle: 8-row
 *                                     groups PF9_V_SBO bytes apart, 64-column groups
 *                                     PF9_V_LBO bytes apart
 *   pf9_qk(S(), s, da, db, acc)       s (64 x 128) = (acc ? s : 0) + A B^T, m64n128k16
 *   pf9_pv(S(), o, a, db)             o (64 x 64 or 64 x 128) += P V, P in registers
 *   pf9_fence / pf9_commit / pf9_wait<N>
 * Only for sm_90a code (__CUDA_ARCH_FEAT_SM90_ALL).
 */
#pragma once
#include "kjit_mma.h"

#ifndef PF9_V_LBO
#define PF9_V_LBO 16384 /* bytes between V's 64-column (128-byte) groups: one TMA box */
#endif
#ifndef PF9_V_SBO
#define PF9_V_SBO 1024 /* bytes between groups of 8 keys */
#endif

KJ_DEV void pf9_bar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
KJ_DEV void pf9_bar_expect(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
                 : "memory");
}
KJ_DEV void pf9_bar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
KJ_DEV void pf9_bar_wait(unsigned bar, unsigned parity)
{
    unsigned done = 0, polls = 0;
    for (;;) {
        asm volatile("{\n.reg .pred p;\n"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(bar), "r"(parity)
                     : "memory");
        if (done)
            return;
        if (++polls == (1u << 28))
            __trap();
    }
}
KJ_DEV void pf9_tma_load(unsigned dst, const void *map, unsigned bar, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst),
                 "l"(reinterpret_cast<kj_size>(map)), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}
KJ_DEV unsigned long long pf9_desc_k(unsigned addr)
{
    return (unsigned long long)((addr & 0x3ffff) >> 4) | (1ull << 16) | (64ull << 32) |
           (1ull << 62);
}
KJ_DEV unsigned long long pf9_desc_mn(unsigned addr)
{
    return (unsigned long long)((addr & 0x3ffff) >> 4) |
           ((unsigned long long)(PF9_V_LBO >> 4) << 16) |
           ((unsigned long long)(PF9_V_SBO >> 4) << 32) | (1ull << 62);
}
KJ_DEV void pf9_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
KJ_DEV void pf9_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N> KJ_DEV void pf9_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}

KJ_DEV void pf9_qk(kj_s_f16, float (&s)[64], unsigned long long da, unsigned long long db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7,"
                 "%8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23,"
                 "%24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39,"
                 "%40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55,"
                 "%56, %57, %58, %59, %60, %61, %62, %63}"
                 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(s[0]), "+f"(s[1]), "+f"(s[2]), "+f"(s[3]), "+f"(s[4]), "+f"(s[5]),
                 "+f"(s[6]), "+f"(s[7]), "+f"(s[8]), "+f"(s[9]), "+f"(s[10]), "+f"(s[11]),
                 "+f"(s[12]), "+f"(s[13]), "+f"(s[14]), "+f"(s[15]), "+f"(s[16]), "+f"(s[17]),
                 "+f"(s[18]), "+f"(s[19]), "+f"(s[20]), "+f"(s[21]), "+f"(s[22]), "+f"(s[23]),
                 "+f"(s[24]), "+f"(s[25]), "+f"(s[26]), "+f"(s[27]), "+f"(s[28]), "+f"(s[29]),
                 "+f"(s[30]), "+f"(s[31]), "+f"(s[32]), "+f"(s[33]), "+f"(s[34]), "+f"(s[35]),
                 "+f"(s[36]), "+f"(s[37]), "+f"(s[38]), "+f"(s[39]), "+f"(s[40]), "+f"(s[41]),
                 "+f"(s[42]), "+f"(s[43]), "+f"(s[44]), "+f"(s[45]), "+f"(s[46]), "+f"(s[47]),
                 "+f"(s[48]), "+f"(s[49]), "+f"(s[50]), "+f"(s[51]), "+f"(s[52]), "+f"(s[53]),
                 "+f"(s[54]), "+f"(s[55]), "+f"(s[56]), "+f"(s[57]), "+f"(s[58]), "+f"(s[59]),
                 "+f"(s[60]), "+f"(s[61]), "+f"(s[62]), "+f"(s[63])
                 : "l"(da), "l"(db), "r"(acc));
}

KJ_DEV void pf9_pv(kj_s_f16, float (&o)[32], const unsigned (&a)[4], unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7,"
                 "%8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23,"
                 "%24, %25, %26, %27, %28, %29, %30, %31}"
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(o[0]), "+f"(o[1]), "+f"(o[2]), "+f"(o[3]), "+f"(o[4]), "+f"(o[5]),
                 "+f"(o[6]), "+f"(o[7]), "+f"(o[8]), "+f"(o[9]), "+f"(o[10]), "+f"(o[11]),
                 "+f"(o[12]), "+f"(o[13]), "+f"(o[14]), "+f"(o[15]), "+f"(o[16]), "+f"(o[17]),
                 "+f"(o[18]), "+f"(o[19]), "+f"(o[20]), "+f"(o[21]), "+f"(o[22]), "+f"(o[23]),
                 "+f"(o[24]), "+f"(o[25]), "+f"(o[26]), "+f"(o[27]), "+f"(o[28]), "+f"(o[29]),
                 "+f"(o[30]), "+f"(o[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

KJ_DEV void pf9_pv(kj_s_f16, float (&o)[64], const unsigned (&a)[4], unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7,"
                 "%8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23,"
                 "%24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39,"
                 "%40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55,"
                 "%56, %57, %58, %59, %60, %61, %62, %63}"
                 ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : "+f"(o[0]), "+f"(o[1]), "+f"(o[2]), "+f"(o[3]), "+f"(o[4]), "+f"(o[5]),
                 "+f"(o[6]), "+f"(o[7]), "+f"(o[8]), "+f"(o[9]), "+f"(o[10]), "+f"(o[11]),
                 "+f"(o[12]), "+f"(o[13]), "+f"(o[14]), "+f"(o[15]), "+f"(o[16]), "+f"(o[17]),
                 "+f"(o[18]), "+f"(o[19]), "+f"(o[20]), "+f"(o[21]), "+f"(o[22]), "+f"(o[23]),
                 "+f"(o[24]), "+f"(o[25]), "+f"(o[26]), "+f"(o[27]), "+f"(o[28]), "+f"(o[29]),
                 "+f"(o[30]), "+f"(o[31]), "+f"(o[32]), "+f"(o[33]), "+f"(o[34]), "+f"(o[35]),
                 "+f"(o[36]), "+f"(o[37]), "+f"(o[38]), "+f"(o[39]), "+f"(o[40]), "+f"(o[41]),
                 "+f"(o[42]), "+f"(o[43]), "+f"(o[44]), "+f"(o[45]), "+f"(o[46]), "+f"(o[47]),
                 "+f"(o[48]), "+f"(o[49]), "+f"(o[50]), "+f"(o[51]), "+f"(o[52]), "+f"(o[53]),
                 "+f"(o[54]), "+f"(o[55]), "+f"(o[56]), "+f"(o[57]), "+f"(o[58]), "+f"(o[59]),
                 "+f"(o[60]), "+f"(o[61]), "+f"(o[62]), "+f"(o[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

KJ_DEV void pf9_qk(kj_s_bf16, float (&s)[64], unsigned long long da, unsigned long long db, int acc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7,"
                 "%8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23,"
                 "%24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39,"
                 "%40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55,"
                 "%56, %57, %58, %59, %60, %61, %62, %63}"
                 ", %64, %65, p, 1, 1, 0, 0;\n}\n"
                 : "+f"(s[0]), "+f"(s[1]), "+f"(s[2]), "+f"(s[3]), "+f"(s[4]), "+f"(s[5]),
                 "+f"(s[6]), "+f"(s[7]), "+f"(s[8]), "+f"(s[9]), "+f"(s[10]), "+f"(s[11]),
                 "+f"(s[12]), "+f"(s[13]), "+f"(s[14]), "+f"(s[15]), "+f"(s[16]), "+f"(s[17]),
                 "+f"(s[18]), "+f"(s[19]), "+f"(s[20]), "+f"(s[21]), "+f"(s[22]), "+f"(s[23]),
                 "+f"(s[24]), "+f"(s[25]), "+f"(s[26]), "+f"(s[27]), "+f"(s[28]), "+f"(s[29]),
                 "+f"(s[30]), "+f"(s[31]), "+f"(s[32]), "+f"(s[33]), "+f"(s[34]), "+f"(s[35]),
                 "+f"(s[36]), "+f"(s[37]), "+f"(s[38]), "+f"(s[39]), "+f"(s[40]), "+f"(s[41]),
                 "+f"(s[42]), "+f"(s[43]), "+f"(s[44]), "+f"(s[45]), "+f"(s[46]), "+f"(s[47]),
                 "+f"(s[48]), "+f"(s[49]), "+f"(s[50]), "+f"(s[51]), "+f"(s[52]), "+f"(s[53]),
                 "+f"(s[54]), "+f"(s[55]), "+f"(s[56]), "+f"(s[57]), "+f"(s[58]), "+f"(s[59]),
                 "+f"(s[60]), "+f"(s[61]), "+f"(s[62]), "+f"(s[63])
                 : "l"(da), "l"(db), "r"(acc));
}

KJ_DEV void pf9_pv(kj_s_bf16, float (&o)[32], const unsigned (&a)[4], unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7,"
                 "%8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23,"
                 "%24, %25, %26, %27, %28, %29, %30, %31}"
                 ", {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
                 : "+f"(o[0]), "+f"(o[1]), "+f"(o[2]), "+f"(o[3]), "+f"(o[4]), "+f"(o[5]),
                 "+f"(o[6]), "+f"(o[7]), "+f"(o[8]), "+f"(o[9]), "+f"(o[10]), "+f"(o[11]),
                 "+f"(o[12]), "+f"(o[13]), "+f"(o[14]), "+f"(o[15]), "+f"(o[16]), "+f"(o[17]),
                 "+f"(o[18]), "+f"(o[19]), "+f"(o[20]), "+f"(o[21]), "+f"(o[22]), "+f"(o[23]),
                 "+f"(o[24]), "+f"(o[25]), "+f"(o[26]), "+f"(o[27]), "+f"(o[28]), "+f"(o[29]),
                 "+f"(o[30]), "+f"(o[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

KJ_DEV void pf9_pv(kj_s_bf16, float (&o)[64], const unsigned (&a)[4], unsigned long long db)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7,"
                 "%8, %9, %10, %11, %12, %13, %14, %15,"
                 "%16, %17, %18, %19, %20, %21, %22, %23,"
                 "%24, %25, %26, %27, %28, %29, %30, %31,"
                 "%32, %33, %34, %35, %36, %37, %38, %39,"
                 "%40, %41, %42, %43, %44, %45, %46, %47,"
                 "%48, %49, %50, %51, %52, %53, %54, %55,"
                 "%56, %57, %58, %59, %60, %61, %62, %63}"
                 ", {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
                 : "+f"(o[0]), "+f"(o[1]), "+f"(o[2]), "+f"(o[3]), "+f"(o[4]), "+f"(o[5]),
                 "+f"(o[6]), "+f"(o[7]), "+f"(o[8]), "+f"(o[9]), "+f"(o[10]), "+f"(o[11]),
                 "+f"(o[12]), "+f"(o[13]), "+f"(o[14]), "+f"(o[15]), "+f"(o[16]), "+f"(o[17]),
                 "+f"(o[18]), "+f"(o[19]), "+f"(o[20]), "+f"(o[21]), "+f"(o[22]), "+f"(o[23]),
                 "+f"(o[24]), "+f"(o[25]), "+f"(o[26]), "+f"(o[27]), "+f"(o[28]), "+f"(o[29]),
                 "+f"(o[30]), "+f"(o[31]), "+f"(o[32]), "+f"(o[33]), "+f"(o[34]), "+f"(o[35]),
                 "+f"(o[36]), "+f"(o[37]), "+f"(o[38]), "+f"(o[39]), "+f"(o[40]), "+f"(o[41]),
                 "+f"(o[42]), "+f"(o[43]), "+f"(o[44]), "+f"(o[45]), "+f"(o[46]), "+f"(o[47]),
                 "+f"(o[48]), "+f"(o[49]), "+f"(o[50]), "+f"(o[51]), "+f"(o[52]), "+f"(o[53]),
                 "+f"(o[54]), "+f"(o[55]), "+f"(o[56]), "+f"(o[57]), "+f"(o[58]), "+f"(o[59]),
                 "+f"(o[60]), "+f"(o[61]), "+f"(o[62]), "+f"(o[63])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

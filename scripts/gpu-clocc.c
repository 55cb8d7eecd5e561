/* gpu-clocc.c: how many thread-block clusters of one kernel an NVIDIA GPU
 * runs at once (the driver's occupancy query), for scripts/gpu-sweep.sh's
 * cluster variants of attn_decode (KJ_ATT_CL).  Built by `gpu-sweep.sh
 * build` beside the cubins (CUDA's headers and libcuda's stub), run on the
 * GPU machine by `gpu-sweep.sh run`.
 *
 *   gpu-clocc CUBIN ENTRY BLOCK C GX GY
 *
 * prints one line: clusters of 1 x C blocks (of BLOCK threads) at once for
 * a GX x GY grid, the blocks they hold, and the device's block slots. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, CUresult r)
{
	const char *s = NULL;

	if (cuGetErrorString(r, &s) != CUDA_SUCCESS || s == NULL)
		s = "unknown error";
	fprintf(stderr, "gpu-clocc: %s: %s\n", what, s);
	return 1;
}

int main(int argc, char **argv)
{
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod;
	CUfunction fn;
	CUresult r;
	int n = -1, sms = 0, per_sm = 0;

	if (argc != 7) {
		fprintf(stderr, "usage: gpu-clocc CUBIN ENTRY BLOCK C GX GY\n");
		return 2;
	}
	unsigned block = (unsigned)atoi(argv[3]), c = (unsigned)atoi(argv[4]);
	if ((r = cuInit(0)) != CUDA_SUCCESS || (r = cuDeviceGet(&dev, 0)) != CUDA_SUCCESS ||
	    (r = cuCtxCreate(&ctx, NULL, 0, dev)) != CUDA_SUCCESS)
		return fail("no device", r);
	if ((r = cuModuleLoad(&mod, argv[1])) != CUDA_SUCCESS || (r = cuModuleGetFunction(&fn, mod, argv[2])) != CUDA_SUCCESS)
		return fail("no kernel", r);
	CUlaunchAttribute at = { 0 };
	at.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
	at.value.clusterDim.x = 1;
	at.value.clusterDim.y = c;
	at.value.clusterDim.z = 1;
	CUlaunchConfig cfg = { 0 };
	cfg.gridDimX = (unsigned)atoi(argv[5]);
	cfg.gridDimY = (unsigned)atoi(argv[6]);
	cfg.gridDimZ = 1;
	cfg.blockDimX = block;
	cfg.blockDimY = cfg.blockDimZ = 1;
	cfg.attrs = &at;
	cfg.numAttrs = 1;
	if ((r = cuOccupancyMaxActiveClusters(&n, fn, &cfg)) != CUDA_SUCCESS)
		return fail("cuOccupancyMaxActiveClusters", r);
	if ((r = cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)) != CUDA_SUCCESS)
		return fail("the SM count", r);
	if ((r = cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fn, (int)block, 0)) != CUDA_SUCCESS)
		return fail("blocks per SM", r);
	printf("# clusters of 1 x %u: %d at once (%d blocks; %d SMs x %d blocks = %d slots), grid %s x %s\n", c, n,
	       n * (int)c, sms, per_sm, sms * per_sm, argv[5], argv[6]);
	return 0;
}

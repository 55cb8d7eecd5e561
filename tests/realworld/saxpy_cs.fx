// saxpy_cs.fx: an HLSL compute shader in the style of DirectX samples
// ported to Vulkan, built by glslc -x hlsl -fentry-point=CSMain (the
// suffix says nothing: -x hlsl does).
[[vk::binding(0, 0)]] RWStructuredBuffer<float> X : register(u0);
[[vk::binding(1, 0)]] RWStructuredBuffer<float> Y : register(u1);

cbuffer Params : register(b0)
{
	float alpha;
	uint count;
};

[numthreads(64, 1, 1)]
void CSMain(uint3 id : SV_DispatchThreadID)
{
	if (id.x < count)
		Y[id.x] = alpha * X[id.x] + Y[id.x];
}

extern "C" __global__ void broken(float *x)
{
	x[threadIdx.x] = undeclared_variable_kjit * 2.0f;
}

// Old code bases carry lexer habits the compilers still take: a comment
// whose line ends in a backslash and a stray blank (gcc and clang splice
// it, with a warning) and, under an ISO mode such as -std=c++14, a
// trigraph for '#' (written by editors of keyboards without it).
#include "lexer_habits_base.h"  // a note that ends in a backslash and a blank \ 
#include "lexer_habits_spliced.h"
??=include "lexer_habits_tri.h"

extern "C" __global__ void lexer_scale(float *x, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		x[i] = x[i] * LEXER_BASE * LEXER_TRI;
}

/* runtime.h - CUDA device probe/selection and the error-check helper shared by
 * the CUDA backends (cuda/runtime.cu). The C-callable part carries no CUDA
 * types; the checking macro is for .cu files only (__CUDACC__). */
#ifndef LT_CUDA_RUNTIME_H
#define LT_CUDA_RUNTIME_H

#ifdef __cplusplus
extern "C" {
#endif

/* Number of usable CUDA devices (compute capability >= 8.0, which this
 * binary has code for) in *count; 0 with a short reason in *why (no driver,
 * no device, ...). Never aborts. Returns 0, or LT_ERR_GPU when count is 0. */
int lt_cuda_probe(int *count, const char **why);

/* Makes `device` current and creates its context (cudaFree(0)). Returns 0 or
 * LT_ERR_GPU after one lt_error. */
int lt_cuda_select(int device);

#ifdef __cplusplus
}
#endif

#ifdef __CUDACC__
#include <cuda_runtime.h>
/* Reports "CUDA error in <what>: <message>" once and returns LT_ERR_GPU. */
int lt_cuda_fail(cudaError_t e, const char *what);
/* Evaluates a CUDA call; on failure reports and returns LT_ERR_GPU from the
 * enclosing function. */
#define LT_CU(call, what)                                  \
  do {                                                     \
    cudaError_t e_ = (call);                               \
    if (e_ != cudaSuccess) return lt_cuda_fail(e_, what);  \
  } while (0)
#endif

#endif

/* tumor_cuda.h - the CUDA backend of the tumour mode (cuda/tumor/corr.cu)
 * and its NVRTC kernel specialisation with an on-disk cache (nvrtc.cu).
 * C-callable; no CUDA types. */
#ifndef LT_TUMOR_CUDA_H
#define LT_TUMOR_CUDA_H

#include "tumor/corr.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Same contract as lt_tumor_backend_cpu (tumor/corr.h). create() compiles
 * (or loads from the cache) a kernel specialised for the template and tile
 * sizes when NVRTC is available, all templates share one size and
 * LT_TUMOR_NVRTC is not "0"; otherwise the generic kernel runs. */
extern const lt_tumor_backend lt_tumor_backend_cuda;

#ifdef __cplusplus
}
#endif

/* Internal to cuda/tumor: NVRTC compilation with the cache. */
#ifdef __CUDACC__
#include <cuda_runtime.h>
typedef struct lt_tk_spec {
  int tw, th, rb, dyn, sxb, ng, ns, cwc; /* compile-time constants of the kernel (corr_kernel.cuh) */
  int threads;                          /* its block size */
} lt_tk_spec;
/* Compiles src (the kernel text) for the current device with the sizes of
 * *sp (or loads it from the cache), loads it and returns the kernel
 * lt_tumor_spec in *kernel, the library in *lib (unload with
 * cudaLibraryUnload). Returns 0; 1 when NVRTC is unavailable or failed (a
 * warning said why; the caller uses the generic kernel); LT_ERR_GPU after an
 * lt_error for CUDA errors. */
int lt_tk_nvrtc_get(const char *src, const lt_tk_spec *sp, cudaLibrary_t *lib, cudaKernel_t *kernel,
                    lt_tumor_stats *st);
#endif

#endif

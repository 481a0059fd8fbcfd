/* runtime.cu - CUDA device probe, selection and error reporting.
 *
 * The probe never aborts: no driver, no device or any runtime error gives a
 * count of 0 and a short reason, so `--backend auto` falls back to the CPU.
 * Devices under compute capability 8.0 are not counted (the binary carries
 * sm_80 and sm_90 code and compute_90 PTX). */
#include <cuda_runtime.h>

extern "C" {
#include "error.h"
#include "log.h"
}
#include "runtime.h"

int lt_cuda_fail(cudaError_t e, const char *what)
{
  lt_error("CUDA error in %s: %s", what, cudaGetErrorString(e));
  (void)cudaGetLastError(); /* clear a non-sticky error */
  return LT_ERR_GPU;
}

extern "C" int lt_cuda_probe(int *count, const char **why)
{
  static int done = 0, cached = 0;
  static const char *cached_why = "no CUDA device";
  if (!done) {
    int n = 0;
    const double t0 = lt_now();
    cudaError_t e = cudaGetDeviceCount(&n); /* initialises the driver */
    if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e != cudaSuccess) {
      if (e == cudaErrorInsufficientDriver) cached_why = "no CUDA driver (or too old for this build)";
      else if (e == cudaErrorNoDevice) cached_why = "no CUDA device";
      else cached_why = cudaGetErrorString(e);
      (void)cudaGetLastError();
      n = 0;
    }
    int usable = 0;
    for (int d = 0; d < n; d++) {
      int major = 0;
      if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) == cudaSuccess && major >= 8)
        usable++;
    }
    if (n > 0 && usable == 0) cached_why = "CUDA devices present but none of compute capability 8.0 or newer";
    /* Device indices stay the runtime's: a mixed machine with an older
     * device reports fewer usable devices than indices (rare; --device N
     * still addresses the runtime's device N). */
    cached = usable;
    done = 1;
    lt_debug("cuda: driver probed in %.1f ms: %d usable device(s)", 1e3 * (lt_now() - t0), usable);
  }
  *count = cached;
  if (why && cached == 0) *why = cached_why;
  return cached > 0 ? 0 : LT_ERR_GPU;
}

extern "C" int lt_cuda_select(int device)
{
  const double t0 = lt_now();
  cudaError_t e = cudaSetDevice(device); /* CUDA 12+: creates the primary context */
  if (e != cudaSuccess) {
    lt_error("CUDA error selecting device %d: %s", device, cudaGetErrorString(e));
    return LT_ERR_GPU;
  }
  e = cudaFree(0); /* the context exists now (older runtimes: created here), not inside the first stage */
  if (e != cudaSuccess) {
    lt_error("CUDA error creating the context on device %d: %s", device, cudaGetErrorString(e));
    return LT_ERR_GPU;
  }
  lt_debug("cuda: context on device %d created in %.1f ms", device, 1e3 * (lt_now() - t0));
  return 0;
}

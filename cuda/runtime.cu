/* runtime.cu - CUDA device probe, selection and error reporting.
 *
 * The probe never aborts: no driver, no device or any runtime error gives a
 * count of 0 and a short reason, so `--backend auto` falls back to the CPU.
 * Devices under compute capability 8.0 are not counted (the binary carries
 * sm_80 and sm_90 code and compute_90 PTX). */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int probe_count;
static const char *probe_why = "no CUDA device";
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;
static int context_made; /* a CUDA context was made in this process (atomic) */
static int exit_reclaims; /* lt_cuda_set_exit_reclaims */

static void probe(void)
{
  int n = 0;
  const double t0 = lt_now();
  cudaError_t e = cudaGetDeviceCount(&n); /* initialises the driver */
  if (e == cudaErrorInsufficientDriver || e == cudaErrorNoDevice || e != cudaSuccess) {
    if (e == cudaErrorInsufficientDriver) probe_why = "no CUDA driver (or too old for this build)";
    else if (e == cudaErrorNoDevice) probe_why = "no CUDA device";
    else probe_why = cudaGetErrorString(e);
    (void)cudaGetLastError();
    n = 0;
  }
  int usable = 0;
  for (int d = 0; d < n; d++) {
    int major = 0;
    if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, d) == cudaSuccess && major >= 8)
      usable++;
  }
  if (n > 0 && usable == 0) probe_why = "CUDA devices present but none of compute capability 8.0 or newer";
  /* Device indices stay the runtime's: a mixed machine with an older
   * device reports fewer usable devices than indices (rare; --device N
   * still addresses the runtime's device N). */
  probe_count = usable;
  lt_debug("cuda: driver probed in %.1f ms (done at +%.1f ms): %d usable device(s)", 1e3 * (lt_now() - t0),
           lt_since_start_ms(), usable);
}

extern "C" int lt_cuda_probe(int *count, const char **why)
{
  pthread_once(&probe_once, probe); /* once per process, whichever thread asks first; the others wait */
  *count = probe_count;
  if (why && probe_count == 0) *why = probe_why;
  return probe_count > 0 ? 0 : LT_ERR_GPU;
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
  __atomic_store_n(&context_made, 1, __ATOMIC_RELAXED);
  lt_debug("cuda: context on device %d created in %.1f ms (ready at +%.1f ms)", device, 1e3 * (lt_now() - t0),
           lt_since_start_ms());
  return 0;
}

extern "C" void lt_cuda_warm(int device)
{
  int n = 0;
  if (lt_cuda_probe(&n, NULL) != 0 || device < 0 || device >= n) return;
  const double t0 = lt_now();
  if (cudaSetDevice(device) != cudaSuccess || cudaFree(0) != cudaSuccess) {
    (void)cudaGetLastError(); /* quiet: lt_cuda_select, when the run gets there, says what failed */
    return;
  }
  __atomic_store_n(&context_made, 1, __ATOMIC_RELAXED);
  lt_debug("cuda: context on device %d made ahead in %.1f ms (ready at +%.1f ms)", device, 1e3 * (lt_now() - t0),
           lt_since_start_ms());
}

extern "C" int lt_cuda_context_made(void) { return __atomic_load_n(&context_made, __ATOMIC_RELAXED); }

extern "C" void lt_cuda_set_exit_reclaims(int on) { __atomic_store_n(&exit_reclaims, on, __ATOMIC_RELAXED); }

extern "C" int lt_cuda_exit_reclaims(void) { return __atomic_load_n(&exit_reclaims, __ATOMIC_RELAXED); }

int lt_cuda_alloc(void **p, size_t bytes, const char *what)
{
  cudaError_t e = cudaMalloc(p, bytes ? bytes : 16);
  if (e == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    lt_error("out of GPU memory allocating %s (%zu MB)", what, bytes >> 20);
    return LT_ERR_GPU;
  }
  if (e != cudaSuccess) return lt_cuda_fail(e, what);
  return 0;
}

int lt_cuda_alloc_host(void **p, size_t bytes, const char *what)
{
  cudaError_t e = cudaMallocHost(p, bytes ? bytes : 16);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    lt_error("out of pinned host memory allocating %s (%zu MB): %s", what, bytes >> 20, cudaGetErrorString(e));
    return LT_ERR_GPU;
  }
  return 0;
}

int lt_cuda_stream(cudaStream_t *s, const char *what)
{
  LT_CU(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), what);
  return 0;
}

int lt_cuda_timer_init(lt_cuda_timer *t, const char *const *names, int n)
{
  memset(t, 0, sizeof *t);
  const char *tv = getenv("LT_CUDA_TIMING");
  t->on = tv && tv[0] && strcmp(tv, "0") != 0;
  t->names = names;
  t->n = n < LT_CUDA_TIMER_MAX ? n : LT_CUDA_TIMER_MAX;
  for (int k = 0; t->on && k < t->n; k++) {
    cudaError_t e;
    if ((e = cudaEventCreate(&t->ev[k][0])) != cudaSuccess || (e = cudaEventCreate(&t->ev[k][1])) != cudaSuccess)
      return lt_cuda_fail(e, "creating timing events");
  }
  return 0;
}

void lt_cuda_timer_tic(lt_cuda_timer *t, int k, cudaStream_t s)
{
  if (t->on && k < t->n) cudaEventRecord(t->ev[k][0], s);
}

void lt_cuda_timer_toc(lt_cuda_timer *t, int k, cudaStream_t s)
{
  if (!t->on || k >= t->n) return;
  cudaEventRecord(t->ev[k][1], s);
  t->calls[k]++;
}

void lt_cuda_timer_collect(lt_cuda_timer *t, const int *ks, int nk)
{
  if (!t->on) return;
  for (int i = 0; i < nk; i++) {
    float ms = 0;
    if (ks[i] < t->n && cudaEventElapsedTime(&ms, t->ev[ks[i]][0], t->ev[ks[i]][1]) == cudaSuccess)
      t->ms[ks[i]] += ms;
    else
      (void)cudaGetLastError();
  }
}

void lt_cuda_timer_print(const lt_cuda_timer *t)
{
  if (!t->on) return;
  fprintf(stderr, "cuda timing (events, ms): %-14s %8s %10s %10s\n", "stage", "calls", "total_ms", "mean_us");
  for (int k = 0; k < t->n; k++)
    if (t->calls[k])
      fprintf(stderr, "cuda timing (events, ms): %-14s %8ld %10.3f %10.1f\n", t->names[k], t->calls[k], t->ms[k],
              1e3 * t->ms[k] / t->calls[k]);
}

void lt_cuda_timer_free(lt_cuda_timer *t)
{
  for (int k = 0; k < t->n; k++) {
    if (t->ev[k][0]) cudaEventDestroy(t->ev[k][0]);
    if (t->ev[k][1]) cudaEventDestroy(t->ev[k][1]);
  }
  (void)cudaGetLastError();
  memset(t, 0, sizeof *t);
}

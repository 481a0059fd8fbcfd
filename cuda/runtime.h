/* runtime.h - what every mode's CUDA backend shares (cuda/runtime.cu): device
 * probe/selection, the error check, allocation with clear out-of-memory
 * messages, streams, and per-stage event timing. Each mode's kernels and
 * stage table live in cuda/MODE/. The C-callable part carries no CUDA
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

/* The probe and lt_cuda_select's context made ahead, quietly (a failure
 * says nothing: lt_cuda_select reports it when the run gets there). For a
 * thread started at the top of main (backend.c: lt_backend_warm), so that
 * the driver's start-up overlaps the inputs' opening. */
void lt_cuda_warm(int device);

/* 1 once a CUDA context was made in this process (lt_cuda_select or
 * lt_cuda_warm succeeded). */
int lt_cuda_context_made(void);

/* On (leuktrack's main, not the tests): the process ends after its run, so
 * the last CUDA buffers need not be freed one by one: the driver reclaims
 * them with the process (backend.cu keeps its spares to the end). */
void lt_cuda_set_exit_reclaims(int on);
int lt_cuda_exit_reclaims(void);

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

/* cudaMalloc / cudaMallocHost (pinned) with one clear message ("out of GPU
 * memory allocating WHAT (N MB)"); 0 or LT_ERR_GPU. Every backend allocates
 * in its create, never per frame. */
int lt_cuda_alloc(void **p, size_t bytes, const char *what);
int lt_cuda_alloc_host(void **p, size_t bytes, const char *what);
/* A non-blocking stream; 0 or LT_ERR_GPU. */
int lt_cuda_stream(cudaStream_t *s, const char *what);

/* Per-stage GPU time by CUDA events, on when LT_CUDA_TIMING=1 (off: every
 * call is a no-op and costs nothing). A backend names its stages, brackets
 * the launches of stage k with tic/toc on its stream, calls collect after
 * a synchronise for the stages it bracketed, and prints the table at the
 * end ("cuda timing (events, ms): ..." lines on stderr). */
#define LT_CUDA_TIMER_MAX 24
typedef struct lt_cuda_timer {
  int on, n;
  const char *const *names;
  cudaEvent_t ev[LT_CUDA_TIMER_MAX][2];
  double ms[LT_CUDA_TIMER_MAX];
  long calls[LT_CUDA_TIMER_MAX];
} lt_cuda_timer;
int lt_cuda_timer_init(lt_cuda_timer *t, const char *const *names, int n);
void lt_cuda_timer_tic(lt_cuda_timer *t, int k, cudaStream_t s);
void lt_cuda_timer_toc(lt_cuda_timer *t, int k, cudaStream_t s);
void lt_cuda_timer_collect(lt_cuda_timer *t, const int *ks, int nk);
void lt_cuda_timer_print(const lt_cuda_timer *t);
void lt_cuda_timer_free(lt_cuda_timer *t);
#endif

#endif

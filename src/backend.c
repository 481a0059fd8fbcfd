/* backend.c - backend registry: the one file with #ifdef LT_HAVE_CUDA.
 * The CUDA stage table of each mode that has one is one row of cuda_tables. */
#include "backend.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "log.h"
#include "mode.h"

#ifdef LT_HAVE_CUDA
/* cuda/runtime.cu */
int lt_cuda_probe(int *count, const char **why);
int lt_cuda_select(int device);
void lt_cuda_warm(int device);
int lt_cuda_context_made(void);
void lt_cuda_set_exit_reclaims(int on);
/* cuda/MODE/: one stage table per mode (declared in the mode's header) */
#include "flow/clg.h"
#include "leuk.h"
#include "../cuda/tumor/tumor_cuda.h"
#include "../cuda/vcm/vcm_cuda.h"
static const struct {
  const char *mode;
  const void *stages;
} cuda_tables[] = {
  {"leukocyte", &lt_leuk_backend_cuda},
  {"tumor", &lt_tumor_backend_cuda},
  {"vcm", &lt_vcm_backend_cuda},
  {"flow", &lt_flow_backend_cuda},
};
#endif

int lt_have_cuda(void)
{
#ifdef LT_HAVE_CUDA
  return 1;
#else
  return 0;
#endif
}

int lt_cuda_device_count(const char **why)
{
#ifdef LT_HAVE_CUDA
  int n = 0;
  lt_cuda_probe(&n, why);
  return n;
#else
  if (why) *why = "this leuktrack was built without CUDA";
  return 0;
#endif
}

static const void *cuda_table(const char *mode)
{
#ifdef LT_HAVE_CUDA
  for (size_t i = 0; i < sizeof cuda_tables / sizeof cuda_tables[0]; i++)
    if (!strcmp(cuda_tables[i].mode, mode)) return cuda_tables[i].stages;
#endif
  (void)mode;
  return NULL;
}

int lt_backend_stages(const char *mode, int choice, int device, const void *cpu, const void **out)
{
  *out = cpu;
  if (choice == LT_BACKEND_CPU) {
    lt_info("backend: cpu (requested)");
    return 0;
  }
  const void *cuda = cuda_table(mode);
  if (lt_have_cuda() && !cuda) {
    if (choice == LT_BACKEND_CUDA) {
      lt_error("--backend cuda: mode '%s' has no CUDA backend in this version", mode);
      return LT_ERR_GPU;
    }
    lt_info("backend: cpu (mode '%s' has no CUDA backend)", mode);
    return 0;
  }
  const char *why = "unknown";
  int n = lt_cuda_device_count(&why);
  if (n > 0 && device >= n) {
    if (choice == LT_BACKEND_CUDA) {
      lt_error("--device %d: only %d CUDA device%s present", device, n, n == 1 ? "" : "s");
      return LT_ERR_GPU;
    }
    lt_info("backend: cpu (--device %d not present: %d CUDA device%s)", device, n, n == 1 ? "" : "s");
    return 0;
  }
  if (n <= 0) {
    if (choice == LT_BACKEND_CUDA) {
      lt_error("--backend cuda: no usable CUDA device (%s)", why);
      return LT_ERR_GPU;
    }
    lt_info("backend: cpu (no usable CUDA device: %s)", why);
    return 0;
  }
#ifdef LT_HAVE_CUDA
  if (lt_cuda_select(device) != 0) {
    if (choice == LT_BACKEND_CUDA) return LT_ERR_GPU;
    lt_info("backend: cpu (CUDA device %d unusable)", device);
    return 0;
  }
  *out = cuda;
  lt_info("backend: cuda (device %d)", device);
#endif
  return 0;
}

/* lt_backend_warm's thread (one per process) */
static pthread_t warm_thread;
static int warm_started, warm_device;

static void *warm_main(void *arg)
{
  (void)arg;
#ifdef LT_HAVE_CUDA
  lt_cuda_warm(warm_device);
#endif
  return NULL;
}

static int env_is(const char *name, const char *value)
{
  const char *v = getenv(name);
  return v && !strcmp(v, value);
}

void lt_backend_warm(const char *mode, int choice, int device)
{
  if (choice == LT_BACKEND_CPU || !lt_have_cuda() || !cuda_table(mode) || warm_started) return;
#ifdef LT_HAVE_CUDA
  if (!env_is("LT_CUDA_FREE", "1")) lt_cuda_set_exit_reclaims(1);
#endif
  if (env_is("LT_CUDA_EARLY", "0")) return;
  warm_device = device;
  /* no thread: the run makes the context itself, as without this */
  if (pthread_create(&warm_thread, NULL, warm_main, NULL) == 0) warm_started = 1;
}

void lt_backend_warm_wait(void)
{
  if (warm_started) pthread_join(warm_thread, NULL);
  warm_started = 0;
}

int lt_backend_quick_exit(void)
{
#ifdef LT_HAVE_CUDA
  /* CUDA_INJECTION64_PATH: a tool (compute-sanitizer, Nsight) is injected
   * into the process and reports through files the child would close;
   * the hand-over made memcheck itself crash (rc 139) in 3 of 12 vcm runs
   * on the H100, 2026-11-24 (0 of 12 with an ordinary exit) */
  const char *inj = getenv("CUDA_INJECTION64_PATH");
  return lt_cuda_context_made() && !env_is("LT_CUDA_FREE", "1") && !env_is("LT_CUDA_QUICK_EXIT", "0") &&
         !(inj && *inj);
#else
  return 0;
#endif
}

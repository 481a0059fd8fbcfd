/* backend.c - backend registry: the one file with #ifdef LT_HAVE_CUDA. */
#include "backend.h"

#include "cli.h"
#include "error.h"
#include "log.h"

#ifdef LT_HAVE_CUDA
/* cuda/runtime.cu */
int lt_cuda_probe(int *count, const char **why);
int lt_cuda_select(int device);
extern const lt_leuk_backend lt_leuk_backend_cuda;
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

int lt_backend_leuk(int choice, int device, const lt_leuk_backend **out)
{
  *out = &lt_leuk_backend_cpu;
  if (choice == LT_BACKEND_CPU) {
    lt_info("backend: cpu (requested)");
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
  *out = &lt_leuk_backend_cuda;
  lt_info("backend: cuda (device %d)", device);
#endif
  return 0;
}

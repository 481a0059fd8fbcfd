/* nvrtc.cu - run-time specialisation of the tumour kernel (seeds/001 section
 * V.C: the paper ran nvcc at run time; NVRTC is its modern form) with an
 * on-disk cache.
 *
 * NVRTC is loaded with dlopen (libnvrtc.so.13, .12, then libnvrtc.so), so the
 * binary neither links nor needs it: without it, or when compilation fails,
 * the caller runs the generic kernel compiled in by nvcc. The kernel text
 * (corr_kernel.cuh) gets an extern "C" entry point lt_tumor_spec that
 * instantiates it with the actual template, tile and shift-block sizes, and
 * is compiled to a CUBIN for the current device's architecture.
 *
 * Cache: $XDG_CACHE_HOME/leuktrack (else ~/.cache/leuktrack), one file per
 * key, tumor-<FNV-1a 64 of the key>.cubin; the key is the architecture, the
 * sizes, the NVRTC version and the FNV-1a hash of the complete source. A
 * file is a 32-byte header (magic, key hash, payload size, payload FNV-1a)
 * and the CUBIN; anything that does not check out is reported and rebuilt.
 * Writes go to a mkstemp file in the same folder and are renamed over the
 * entry, so concurrent processes never see half a file (the last rename
 * wins; all write the same bytes). A cache that cannot be written is a
 * warning, never an error. */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cuda_runtime.h>
#include <nvrtc.h>

extern "C" {
#include "error.h"
#include "log.h"
}
#include "runtime.h"
#include "tumor/tumor_cuda.h"

typedef struct nvrtc_api {
  void *so;
  nvrtcResult (*version)(int *, int *);
  nvrtcResult (*create)(nvrtcProgram *, const char *, const char *, int, const char *const *, const char *const *);
  nvrtcResult (*compile)(nvrtcProgram, int, const char *const *);
  nvrtcResult (*log_size)(nvrtcProgram, size_t *);
  nvrtcResult (*log)(nvrtcProgram, char *);
  nvrtcResult (*cubin_size)(nvrtcProgram, size_t *);
  nvrtcResult (*cubin)(nvrtcProgram, char *);
  nvrtcResult (*destroy)(nvrtcProgram *);
} nvrtc_api;

static int nvrtc_open(nvrtc_api *a)
{
  static const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  memset(a, 0, sizeof *a);
  for (int i = 0; i < 3 && !a->so; i++) a->so = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
  if (!a->so) return 1;
  a->version = (nvrtcResult(*)(int *, int *))dlsym(a->so, "nvrtcVersion");
  a->create = (nvrtcResult(*)(nvrtcProgram *, const char *, const char *, int, const char *const *,
                              const char *const *))dlsym(a->so, "nvrtcCreateProgram");
  a->compile = (nvrtcResult(*)(nvrtcProgram, int, const char *const *))dlsym(a->so, "nvrtcCompileProgram");
  a->log_size = (nvrtcResult(*)(nvrtcProgram, size_t *))dlsym(a->so, "nvrtcGetProgramLogSize");
  a->log = (nvrtcResult(*)(nvrtcProgram, char *))dlsym(a->so, "nvrtcGetProgramLog");
  a->cubin_size = (nvrtcResult(*)(nvrtcProgram, size_t *))dlsym(a->so, "nvrtcGetCUBINSize");
  a->cubin = (nvrtcResult(*)(nvrtcProgram, char *))dlsym(a->so, "nvrtcGetCUBIN");
  a->destroy = (nvrtcResult(*)(nvrtcProgram *))dlsym(a->so, "nvrtcDestroyProgram");
  if (!a->version || !a->create || !a->compile || !a->log_size || !a->log || !a->cubin_size || !a->cubin ||
      !a->destroy) {
    dlclose(a->so);
    a->so = NULL;
    return 1;
  }
  return 0;
}

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
  const unsigned char *c = (const unsigned char *)p;
  for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * 1099511628211ull;
  return h;
}
#define FNV0 14695981039346656037ull

typedef struct cache_hdr {
  char magic[8]; /* "LTTKCUB1" */
  uint64_t key, size, sum;
} cache_hdr;

static int cache_dir(char *dir, size_t n)
{
  const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  char base[512];
  if (x && *x) snprintf(base, sizeof base, "%s", x);
  else if (home && *home) snprintf(base, sizeof base, "%s/.cache", home);
  else return 1;
  if (mkdir(base, 0755) != 0 && errno != EEXIST) return 1;
  if ((size_t)snprintf(dir, n, "%s/leuktrack", base) >= n) return 1;
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) return 1;
  return 0;
}

/* The cached CUBIN for key, malloc'ed in *data; 0 hit, 1 miss, 2 corrupt. */
static int cache_read(const char *path, uint64_t key, char **data, size_t *size)
{
  FILE *fp = fopen(path, "rb");
  if (!fp) return 1;
  cache_hdr h;
  int rc = 2;
  char *buf = NULL;
  struct stat sb;
  if (fread(&h, sizeof h, 1, fp) == 1 && memcmp(h.magic, "LTTKCUB1", 8) == 0 && h.key == key &&
      fstat(fileno(fp), &sb) == 0 && (uint64_t)sb.st_size == sizeof h + h.size && h.size > 0 &&
      (buf = (char *)malloc(h.size)) && fread(buf, 1, h.size, fp) == h.size && fnv1a(buf, h.size, FNV0) == h.sum) {
    *data = buf;
    *size = h.size;
    rc = 0;
  } else {
    free(buf);
  }
  fclose(fp);
  return rc;
}

static void cache_write(const char *dir, const char *path, uint64_t key, const char *data, size_t size)
{
  char tmp[600];
  snprintf(tmp, sizeof tmp, "%s/.tumor-tmp-XXXXXX", dir);
  int fd = mkstemp(tmp);
  if (fd < 0) {
    lt_warn("tumor: cannot write the kernel cache in %s: %s", dir, strerror(errno));
    return;
  }
  cache_hdr h;
  memcpy(h.magic, "LTTKCUB1", 8);
  h.key = key;
  h.size = size;
  h.sum = fnv1a(data, size, FNV0);
  int ok = write(fd, &h, sizeof h) == (ssize_t)sizeof h && write(fd, data, size) == (ssize_t)size && fsync(fd) == 0;
  ok = close(fd) == 0 && ok;
  if (!ok || chmod(tmp, 0644) != 0 || rename(tmp, path) != 0) {
    lt_warn("tumor: cannot write the kernel cache entry %s: %s", path, strerror(errno));
    unlink(tmp);
  }
}

/* Compiles the specialised source; the CUBIN malloc'ed in *out. 0 or 1. */
static int compile(const nvrtc_api *a, const char *src, const char *arch, char **out, size_t *size)
{
  nvrtcProgram prog;
  if (a->create(&prog, src, "lt_tumor_kernel.cu", 0, NULL, NULL) != NVRTC_SUCCESS) {
    lt_warn("tumor: nvrtcCreateProgram failed; using the generic kernel");
    return 1;
  }
  char archopt[64];
  snprintf(archopt, sizeof archopt, "--gpu-architecture=%s", arch);
  const char *opts[] = {archopt, "-std=c++17"};
  nvrtcResult r = a->compile(prog, 2, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    a->log_size(prog, &n);
    char *log = (char *)calloc(n + 1, 1);
    if (log) a->log(prog, log);
    lt_warn("tumor: NVRTC compilation failed (%d); using the generic kernel. Log:\n%s", (int)r, log ? log : "");
    free(log);
    a->destroy(&prog);
    return 1;
  }
  size_t n = 0;
  char *bin = NULL;
  if (a->cubin_size(prog, &n) != NVRTC_SUCCESS || n == 0 || !(bin = (char *)malloc(n)) ||
      a->cubin(prog, bin) != NVRTC_SUCCESS) {
    free(bin);
    a->destroy(&prog);
    lt_warn("tumor: NVRTC produced no CUBIN; using the generic kernel");
    return 1;
  }
  a->destroy(&prog);
  *out = bin;
  *size = n;
  return 0;
}

int lt_tk_nvrtc_get(const char *ksrc, const lt_tk_spec *sp, cudaLibrary_t *lib, cudaKernel_t *kernel,
                    lt_tumor_stats *st)
{
  const double t0 = lt_now();
  nvrtc_api a;
  if (nvrtc_open(&a)) {
    lt_info("tumor: NVRTC not found (libnvrtc.so); using the generic kernel");
    return 1;
  }
  int dev = 0, major = 0, minor = 0, vmaj = 0, vmin = 0;
  LT_CU(cudaGetDevice(&dev), "cudaGetDevice");
  LT_CU(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), "compute capability");
  LT_CU(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), "compute capability");
  a.version(&vmaj, &vmin);
  char arch[16];
  snprintf(arch, sizeof arch, "sm_%d%d", major, minor);
  /* the complete source: the kernel text and the specialised entry point */
  const size_t cap = strlen(ksrc) + 512;
  char *src = (char *)malloc(cap);
  if (!src) {
    lt_error("out of memory (tumor kernel source)");
    dlclose(a.so);
    return LT_ERR_NOMEM;
  }
  snprintf(src, cap,
           "%s\nextern \"C\" __global__ void __launch_bounds__(%d) lt_tumor_spec(lt_tk_params p)\n"
           "{\n  extern __shared__ double lt_tk_smem[];\n  lt_tk_frame<%d, %d, %d, %d, %d, %d, %d, %d>(p, (float *)lt_tk_smem);\n}\n",
           ksrc, sp->threads, sp->tw, sp->th, sp->rb, sp->dyn, sp->sxb, sp->ng, sp->ns, sp->cwc);
  char keystr[256];
  snprintf(keystr, sizeof keystr, "%s tw=%d th=%d rb=%d dyn=%d sxb=%d ng=%d ns=%d cwc=%d thr=%d nvrtc=%d.%d src=%016llx",
           arch, sp->tw, sp->th, sp->rb, sp->dyn, sp->sxb, sp->ng, sp->ns, sp->cwc, sp->threads, vmaj, vmin,
           (unsigned long long)fnv1a(src, strlen(src), FNV0));
  const uint64_t key = fnv1a(keystr, strlen(keystr), FNV0);
  char dir[520] = "", path[600] = "";
  int have_dir = cache_dir(dir, sizeof dir) == 0;
  if (have_dir) snprintf(path, sizeof path, "%s/tumor-%016llx.cubin", dir, (unsigned long long)key);
  char *bin = NULL;
  size_t size = 0;
  int c = have_dir ? cache_read(path, key, &bin, &size) : 1;
  if (c == 2) lt_warn("tumor: kernel cache entry %s is corrupt; rebuilding it", path);
  st->cache_hit = c == 0;
  if (c != 0) {
    int e = compile(&a, src, arch, &bin, &size);
    if (e) {
      free(src);
      dlclose(a.so);
      return e;
    }
    if (have_dir) cache_write(dir, path, key, bin, size);
  }
  free(src);
  dlclose(a.so);
  cudaError_t ce = cudaLibraryLoadData(lib, bin, NULL, NULL, 0, NULL, NULL, 0);
  free(bin);
  if (ce != cudaSuccess) {
    (void)cudaGetLastError();
    lt_warn("tumor: cannot load the specialised kernel (%s); using the generic kernel", cudaGetErrorString(ce));
    return 1;
  }
  ce = cudaLibraryGetKernel(kernel, *lib, "lt_tumor_spec");
  if (ce != cudaSuccess) {
    cudaLibraryUnload(*lib);
    return lt_cuda_fail(ce, "cudaLibraryGetKernel(lt_tumor_spec)");
  }
  st->compile_s = lt_now() - t0;
  snprintf(st->cache_file, sizeof st->cache_file, "%s", path);
  lt_info("tumor: kernel for %dx%d templates, bands of %d rows, %d-column chunks, %dx%dx%d shifts, %d stripes (%s) %s "
          "in %.3f s",
          sp->tw, sp->th, sp->rb, sp->cwc, sp->sxb, sp->ng, sp->dyn, sp->ns, arch,
          st->cache_hit ? "loaded from the cache" : "compiled", st->compile_s);
  return 0;
}

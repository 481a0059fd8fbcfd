/* test_gpu_oom.c - out of GPU memory gives one clear message and exit
 * status 5 (SPEC: bad input and resources never crash).
 *
 * The test takes most of the GPU's free memory itself (through the CUDA
 * driver library, loaded with dlopen, so this file needs no CUDA headers and
 * builds everywhere), leaving about KEEP_MB: enough for leuktrack's CUDA
 * context, not for the buffers of an 8192x8192 video (~40 bytes per
 * pixel, 2.7 GB). Then it runs `leuktrack --backend cuda` on such a video and
 * expects exit status 5, "out of GPU memory" on stderr, and no output file.
 * Skipped (and counted) without a GPU or without the driver library.
 * Env: LT_BIN (default ./leuktrack). */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define KEEP_MB 1536
#define SIDE 8192

typedef int (*fn_init)(unsigned);
typedef int (*fn_dev)(int *, int);
typedef int (*fn_retain)(void **, int);
typedef int (*fn_setcur)(void *);
typedef int (*fn_info)(size_t *, size_t *);
typedef int (*fn_alloc)(unsigned long long *, size_t);

static int write_video(const char *path)
{
  FILE *f = fopen(path, "wb");
  if (!f) return -1;
  unsigned char *row = malloc(SIDE);
  if (!row) {
    fclose(f);
    return -1;
  }
  fprintf(f, "YUV4MPEG2 W%d H%d F25:1 Ip A1:1 Cmono\n", SIDE, SIDE);
  for (int fr = 0; fr < 2; fr++) {
    fputs("FRAME\n", f);
    for (int y = 0; y < SIDE; y++) {
      for (int x = 0; x < SIDE; x++) row[x] = (unsigned char)((x ^ y) & 0x3f);
      fwrite(row, 1, SIDE, f);
    }
  }
  free(row);
  const int bad = ferror(f);
  return fclose(f) == 0 && !bad ? 0 : -1;
}

int main(void)
{
  const char *name = "gpu_oom: exit 5 and a clear message when GPU memory runs out";
  void *lib = dlopen("libcuda.so.1", RTLD_NOW);
  if (!lib) {
    T_SKIP(name, "no CUDA driver library (no GPU on this machine)");
    T_DONE();
  }
  fn_init init = (fn_init)dlsym(lib, "cuInit");
  fn_dev dev = (fn_dev)dlsym(lib, "cuDeviceGet");
  fn_retain retain = (fn_retain)dlsym(lib, "cuDevicePrimaryCtxRetain");
  fn_setcur setcur = (fn_setcur)dlsym(lib, "cuCtxSetCurrent");
  fn_info info = (fn_info)dlsym(lib, "cuMemGetInfo_v2");
  fn_alloc alloc = (fn_alloc)dlsym(lib, "cuMemAlloc_v2");
  int d = 0;
  void *ctx = NULL;
  size_t fr = 0, total = 0;
  if (!init || !dev || !retain || !setcur || !info || !alloc || init(0) != 0 || dev(&d, 0) != 0 ||
      retain(&ctx, d) != 0 || setcur(ctx) != 0 || info(&fr, &total) != 0) {
    T_SKIP(name, "no usable GPU");
    T_DONE();
  }
  /* hold all but KEEP_MB, in 256 MB pieces then 16 MB ones */
  const size_t keep = (size_t)KEEP_MB << 20;
  unsigned long long p;
  for (size_t piece = (size_t)256 << 20; piece >= ((size_t)16 << 20); piece >>= 4)
    while (info(&fr, &total) == 0 && fr > keep + piece && alloc(&p, piece) == 0) {
    }
  info(&fr, &total);
  printf("# GPU: %zu MB of %zu MB left free for leuktrack\n", fr >> 20, total >> 20);

  char dir[] = "/tmp/lt_test_oom.XXXXXX";
  if (!mkdtemp(dir)) {
    T_CHECK(name, 0, "cannot create a temporary directory: %s", strerror(errno));
    T_DONE();
  }
  char video[256], out[256], err[256], cmd[1024];
  snprintf(video, sizeof video, "%s/big.y4m", dir);
  snprintf(out, sizeof out, "%s/tracks.csv", dir);
  snprintf(err, sizeof err, "%s/stderr.txt", dir);
  if (write_video(video) != 0) {
    T_CHECK(name, 0, "cannot write the %dx%d test video", SIDE, SIDE);
    T_DONE();
  }
  const char *lt = getenv("LT_BIN") ? getenv("LT_BIN") : "./leuktrack";
  snprintf(cmd, sizeof cmd, "%s '%s' --backend cuda -o '%s' 2>'%s' >/dev/null", lt, video, out, err);
  int st = system(cmd);
  int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  char msg[4096] = "";
  FILE *f = fopen(err, "r");
  if (f) {
    size_t n = fread(msg, 1, sizeof msg - 1, f);
    msg[n] = '\0';
    fclose(f);
  }
  struct stat sb;
  char partial[300];
  snprintf(partial, sizeof partial, "%s.partial", out);
  const int no_output = stat(out, &sb) != 0 && stat(partial, &sb) != 0;
  printf("# leuktrack (exit %d) said: %s", code, msg);
  T_CHECK(name, code == 5 && strstr(msg, "out of GPU memory") && no_output,
          "exit status %d (want 5), output file %s, stderr: %s", code, no_output ? "absent" : "present", msg);
  unlink(video);
  unlink(err);
  unlink(out);
  unlink(partial);
  rmdir(dir);
  T_DONE();
}

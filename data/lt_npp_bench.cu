/* lt_npp_bench.cu - the NVIDIA NPP peer of the tumour benchmark
 * (scripts/bench_tumor.sh): nppiCrossCorrValid_NormLevel_32f_C1R (_Ctx form)
 * over the same search windows as leuktrack's kernels. Per frame: the 8-bit
 * frame goes up as floats (NPP's 32f routine needs them), one call per
 * template over its (w+2H) x (h+2V) search window (a view into the device
 * frame), the (2H+1) x (2V+1) maps come down, one synchronisation; the
 * time per frame is averaged over the frames after the first.
 *   lt_npp_bench CLIP.y4m TPL.txt V H FRAMES NAME
 * TPL.txt: "x y w h" per template, cut from frame 0. Prints
 * "NAME us_per_frame kernel_us_per_frame". Built only in CUDA builds with
 * NPP present (make npp-bench): links libnppist (where NPP keeps
 * the cross-correlations) + libnppc. */
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>
#include <cuda_runtime.h>
#include <npp.h>

#define CK(x)                                                                               \
  do {                                                                                      \
    cudaError_t e_ = (x);                                                                   \
    if (e_ != cudaSuccess) {                                                                \
      fprintf(stderr, "lt_npp_bench: %s: %s\n", #x, cudaGetErrorString(e_));                \
      return 1;                                                                             \
    }                                                                                       \
  } while (0)

int main(int argc, char **argv)
{
  if (argc != 7) {
    fprintf(stderr, "usage: lt_npp_bench CLIP.y4m TPL.txt V H FRAMES NAME\n");
    return 2;
  }
  const int V = atoi(argv[3]), H = atoi(argv[4]), NF = atoi(argv[5]);
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    fprintf(stderr, "lt_npp_bench: cannot open %s\n", argv[1]);
    return 1;
  }
  char hdr[512];
  if (!fgets(hdr, sizeof hdr, f)) return 1;
  int W = 0, Hh = 0;
  const int mono = strstr(hdr, "Cmono") != NULL; /* else 4:2:0 chroma, skipped */
  for (char *p = strtok(hdr, " \n"); p; p = strtok(NULL, " \n")) {
    if (p[0] == 'W') W = atoi(p + 1);
    if (p[0] == 'H') Hh = atoi(p + 1);
  }
  if (W <= 0 || Hh <= 0) return 1;
  const size_t fs = (size_t)W * Hh;
  std::vector<unsigned char> all;
  std::vector<unsigned char> buf(fs * 3 / 2 + 16);
  int nf = 0;
  char line[64];
  while (nf < NF && fgets(line, sizeof line, f)) { /* "FRAME\n" */
    const size_t chroma = mono ? 0 : fs / 2;
    if (fread(buf.data(), 1, fs + chroma, f) != fs + chroma) break;
    all.insert(all.end(), buf.begin(), buf.begin() + fs);
    nf++;
  }
  fclose(f);
  if (nf < 2) {
    fprintf(stderr, "lt_npp_bench: fewer than 2 frames\n");
    return 1;
  }
  struct T { int x, y, w, h; };
  std::vector<T> tp;
  FILE *tf = fopen(argv[2], "r");
  T t;
  while (tf && fscanf(tf, "%d %d %d %d", &t.x, &t.y, &t.w, &t.h) == 4) tp.push_back(t);
  if (tf) fclose(tf);
  const int K = (int)tp.size();
  if (K == 0) return 1;
  cudaStream_t st;
  CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  NppStreamContext ctx;
  memset(&ctx, 0, sizeof ctx);
  int dev = 0;
  CK(cudaGetDevice(&dev));
  cudaDeviceProp pr;
  CK(cudaGetDeviceProperties(&pr, dev));
  ctx.hStream = st;
  ctx.nCudaDeviceId = dev;
  ctx.nMultiProcessorCount = pr.multiProcessorCount;
  ctx.nMaxThreadsPerMultiProcessor = pr.maxThreadsPerMultiProcessor;
  ctx.nMaxThreadsPerBlock = pr.maxThreadsPerBlock;
  ctx.nSharedMemPerBlock = pr.sharedMemPerBlock;
  ctx.nCudaDevAttrComputeCapabilityMajor = pr.major;
  ctx.nCudaDevAttrComputeCapabilityMinor = pr.minor;
  CK(cudaStreamGetFlags(st, &ctx.nStreamFlags));
  float *h_frame, *d_frame, *d_tpl, *d_maps, *h_maps;
  const int nx = 2 * H + 1, ny = 2 * V + 1;
  size_t tpl_n = 0;
  for (auto &q : tp) tpl_n += (size_t)q.w * q.h;
  CK(cudaMallocHost((void **)&h_frame, sizeof(float) * fs));
  CK(cudaMalloc((void **)&d_frame, sizeof(float) * fs));
  CK(cudaMalloc((void **)&d_tpl, sizeof(float) * tpl_n));
  CK(cudaMalloc((void **)&d_maps, sizeof(float) * nx * ny * K));
  CK(cudaMallocHost((void **)&h_maps, sizeof(float) * nx * ny * K));
  /* templates from frame 0 */
  std::vector<float> tv(tpl_n);
  size_t o = 0;
  for (auto &q : tp)
    for (int r = 0; r < q.h; r++)
      for (int c = 0; c < q.w; c++) tv[o++] = all[(size_t)(q.y + r) * W + q.x + c];
  CK(cudaMemcpy(d_tpl, tv.data(), sizeof(float) * tpl_n, cudaMemcpyHostToDevice));
  size_t bsz = 0, mx = 0;
  for (auto &q : tp) {
    NppiSize sz = {q.w + 2 * H, q.h + 2 * V};
    if (nppiValidNormLevelGetBufferHostSize_32f_C1R_Ctx(sz, &bsz, ctx) != NPP_SUCCESS) {
      fprintf(stderr, "lt_npp_bench: buffer size query failed\n");
      return 1;
    }
    mx = bsz > mx ? bsz : mx;
  }
  Npp8u *d_buf;
  CK(cudaMalloc((void **)&d_buf, mx > 0 ? mx : 1));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  double total = 0, kern = 0;
  for (int i = 0; i < nf; i++) {
    auto t0 = std::chrono::steady_clock::now();
    const unsigned char *src = all.data() + (size_t)i * fs;
    for (size_t p = 0; p < fs; p++) h_frame[p] = src[p];
    CK(cudaMemcpyAsync(d_frame, h_frame, sizeof(float) * fs, cudaMemcpyHostToDevice, st));
    CK(cudaEventRecord(e0, st));
    size_t to = 0;
    for (int k = 0; k < K; k++) {
      const T &q = tp[k];
      NppiSize ss = {q.w + 2 * H, q.h + 2 * V}, ts = {q.w, q.h};
      const float *win = d_frame + (size_t)(q.y - V) * W + (q.x - H);
      NppStatus s = nppiCrossCorrValid_NormLevel_32f_C1R_Ctx(win, W * (int)sizeof(float), ss, d_tpl + to,
                                                              q.w * (int)sizeof(float), ts, d_maps + (size_t)k * nx * ny,
                                                              nx * (int)sizeof(float), d_buf, ctx);
      if (s != NPP_SUCCESS) {
        fprintf(stderr, "lt_npp_bench: NPP status %d (template %d)\n", (int)s, k);
        return 1;
      }
      to += (size_t)q.w * q.h;
    }
    CK(cudaEventRecord(e1, st));
    CK(cudaMemcpyAsync(h_maps, d_maps, sizeof(float) * nx * ny * K, cudaMemcpyDeviceToHost, st));
    CK(cudaStreamSynchronize(st));
    auto t1 = std::chrono::steady_clock::now();
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, e0, e1));
    if (i > 0) {
      total += std::chrono::duration<double>(t1 - t0).count();
      kern += ms * 1e-3;
    }
  }
  /* sanity: the peak of template 0 in frame 0 terms is near r = 1 at some shift */
  float best = -2;
  for (int p = 0; p < nx * ny; p++) best = h_maps[p] > best ? h_maps[p] : best;
  printf("%s %.1f %.1f %.4f\n", argv[6], 1e6 * total / (nf - 1), 1e6 * kern / (nf - 1), best);
  return 0;
}

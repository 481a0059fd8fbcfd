/* clg.cu - the CUDA backend of CLG optical flow (src/flow/clg.h): the CPU
 * backend's algorithm (src/flow/clg.c, src/flow/grid.c) kernel by kernel,
 * over the same dimension-generic grid (nx, ny, nz, spacing h; nz = 1 for
 * 2D). The pyramids of both frames, the motion tensor and the flow stay on
 * the GPU; per pair the two frames go up and u, v come down, on one stream.
 * Everything is allocated in create (one arena), nothing per pair.
 *
 * Matching the CPU: every float and double operation that the CPU rounds
 * separately is written with the _rn intrinsics (__fadd_rn, __fmul_rn, ...),
 * which nvcc never contracts into an FMA, in the CPU's order; the Gaussian
 * kernels and the pyramid sizes come from the same host functions
 * (lt_gauss_kernel_make, lt_flow_pyramid). The result is meant to equal the
 * CPU's to rounding (tests/test_flow_cuda.c allows 1e-3 px).
 *
 * Relaxation (clg.c relax_sweep): K iterations per launch (temporal
 * blocking, relax_tile): a block loads a tile of the flow into shared
 * memory, recomputes a halo redundantly and writes the inner part, which is
 * bit-identical to K separate iterations; the per-sample terms that are
 * constant while the tensor and the lagged robust weights stay (point
 * block, determinant/cofactors, neighbour weights, J w0, J_t) are formed
 * once per launch with the CPU's operations (point_setup), and one step
 * (relax_step) serves the tile and the global pass. 2D red-black SOR (the
 * default): halo 2K, in place in shared memory; the finest level 1
 * iteration per 32x16 tile, a coarser level 2 (3 below 2^18 samples) per
 * 32x32 tile (LT_FLOW_FUSE_SOR, LT_FLOW_FUSE_SOR_COARSE override). 3D SOR
 * and any SOR with the divergence term: one global in-place pass per colour
 * (sor_pass_kernel; a 3D tile's halo of 2 passes costs more than it saves).
 * Jacobi (omega 0): 2D 32x16 tiles, K = 2; 3D 16x8x8, K = 1 (LT_FLOW_FUSE,
 * LT_FLOW_TILE=1 for 2D 32x32 / 3D 8x8x8). The robust weights: one kernel
 * every `lag` iterations (a fused launch never crosses one). The motion
 * tensor takes 2 kernels (warp+average, derivatives+outside rule+f0 copy)
 * and the rho smoothing of its components 4 at a time (the products formed
 * in the first pass).
 *
 * Launches: the whole pair after the upload is one CUDA Graph, captured at
 * the first pair and replayed (buffers never move; every pair starts from
 * the same ping-pong order, f_init). Per pair: 2 uploads, 1 graph launch,
 * dims downloads; the graph's node count is lt_flow_backend.launches
 * (2D 640x480 defaults: 134 nodes; 502 with the earlier Jacobi defaults).
 * A video's later pairs (cu_compute_next): the first frame is the last
 * pair's second, copied on the device, so one upload per pair, of bytes
 * for 8-bit frames (widened by one kernel); the mode downloads u, v into
 * pinned memory (cu_host_alloc). 1920x1080 on the H100: 10.4-11.8 -> 6.6
 * ms per pair (docs/PERFORMANCE.md). */
#include <cuda_runtime.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "error.h"
#include "log.h"
#include "flow/clg.h"
#include "flow/grid.h"
}
#include "runtime.h"

#define TPB 256
#define NJ 10

typedef struct cu_clg {
  lt_flow_params p;
  int nlev, dims;
  lt_grid lev[LT_FLOW_MAX_LEVELS];
  lt_gauss_kernel ks[3], kr[3], ka[3];
  float *in0, *in1;
  float *pyr0[LT_FLOW_MAX_LEVELS], *pyr1[LT_FLOW_MAX_LEVELS];
  float *s0, *s1, *w1, *avg, *tmp, *tmp2;
  float *D[4], *J[NJ], *f[3], *fn[3], *f0[3];
  float *wdat, *wsm;              /* lagged robust weights (clg.c) */
  float *f_init[3], *fn_init[3]; /* ping-pong order at the start of every pair */
  float *f_final[3];              /* where the flow ends (recorded with the graph) */
  float *arena;
  unsigned char *in8; /* 2D: an 8-bit frame's upload (cu_compute_next) */
  cudaStream_t st;
  cudaGraphExec_t exec; /* the whole pair after the upload, captured at the first pair */
  int use_graph;
  long nlaunch; /* kernels + memcpy/memset nodes of one pair */
  int fuse;     /* Jacobi sweeps per launch (LT_FLOW_FUSE overrides) */
  int fuse_sor; /* red-black SOR iterations per 2D launch, finest level (LT_FLOW_FUSE_SOR) */
  int fuse_sor_coarse; /* the same on the coarser levels (LT_FLOW_FUSE_SOR_COARSE) */
  int fuse_sor_env;    /* LT_FLOW_FUSE_SOR_COARSE given: used on every coarser level */
  int tile;     /* 0: the default tile shape, 1: the alternative (LT_FLOW_TILE) */
} cu_clg;

/* Divergence-term coefficients (clg.c relax_sweep), by value. */
typedef struct divcoef {
  double ih[3], bb[3][3], tau, beta;
  int on;
} divcoef;

/* Flow component pointers passed by value to kernels. */
typedef struct fields3 {
  float *p[3];
} fields3;
typedef struct jfields {
  const float *p[NJ];
} jfields;

static inline int jx_host(int a, int b, int dims)
{
  if (a > b) {
    int t = a;
    a = b;
    b = t;
  }
  return a * (dims + 1) - a * (a - 1) / 2 + (b - a);
}

__device__ __forceinline__ int jx(int a, int b, int dims)
{
  if (a > b) {
    int t = a;
    a = b;
    b = t;
  }
  return a * (dims + 1) - a * (a - 1) / 2 + (b - a);
}

__device__ __forceinline__ int reflect(int i, int n)
{
  while (i < 0 || i >= n) i = i < 0 ? -1 - i : 2 * n - 1 - i;
  return i;
}

__device__ __forceinline__ size_t stride_of(const lt_grid &g, int d)
{
  return d == 0 ? 1 : d == 1 ? (size_t)g.n[0] : (size_t)g.n[0] * g.n[1];
}

/* Coordinates of sample i (32-bit division where the grid allows: the
 * 64-bit one is a long subroutine, costly in the element-wise kernels). */
__device__ __forceinline__ void coords(const lt_grid &g, size_t i, int c[3])
{
  if ((size_t)g.n[0] * g.n[1] * g.n[2] <= 0xffffffffu) {
    const unsigned u = (unsigned)i, n0 = (unsigned)g.n[0], n1 = (unsigned)g.n[1], row = u / n0;
    c[0] = (int)(u - row * n0);
    c[1] = (int)(row % n1);
    c[2] = (int)(row / n1);
    return;
  }
  c[0] = (int)(i % (size_t)g.n[0]);
  size_t row = i / (size_t)g.n[0];
  c[1] = (int)(row % (size_t)g.n[1]);
  c[2] = (int)(row / (size_t)g.n[1]);
}

__device__ __forceinline__ void locate(float p, int n, int *i0, float *t)
{
  if (!(p > 0.0f)) p = 0.0f;
  if (p > (float)(n - 1)) p = (float)(n - 1);
  int i = (int)p;
  if (i > n - 2) i = n - 2 > 0 ? n - 2 : 0;
  *i0 = i;
  *t = n > 1 ? __fsub_rn(p, (float)i) : 0.0f;
}

/* lt_grid_sample, operation for operation. */
__device__ float sample(const float *__restrict__ a, const lt_grid &g, const float p[3])
{
  int i[3];
  float t[3];
  size_t st[3];
  for (int d = 0; d < 3; d++) {
    locate(p[d], g.n[d], &i[d], &t[d]);
    st[d] = g.n[d] > 1 ? stride_of(g, d) : 0;
  }
  const float *b = a + i[0] + (size_t)i[1] * g.n[0] + (size_t)i[2] * g.n[0] * g.n[1];
  float r[2];
  const int nk = g.n[2] > 1 ? 2 : 1;
  for (int k = 0; k < nk; k++) {
    const float *q = b + k * st[2];
    float q0 = __ldg(q), q1 = __ldg(q + st[0]), q2 = __ldg(q + st[1]), q3 = __ldg(q + st[1] + st[0]);
    float lo = __fadd_rn(q0, __fmul_rn(t[0], __fsub_rn(q1, q0)));
    float hi = __fadd_rn(q2, __fmul_rn(t[0], __fsub_rn(q3, q2)));
    r[k] = __fadd_rn(lo, __fmul_rn(t[1], __fsub_rn(hi, lo)));
  }
  return g.n[2] > 1 ? __fadd_rn(r[0], __fmul_rn(t[2], __fsub_rn(r[1], r[0]))) : r[0];
}

/* The per-sample constants of one relaxation step that do not change
 * while the tensor and the lagged weights stay (clg.c relax_sweep): the
 * neighbour weights e[d][0] (backward), e[d][1] (forward), the products
 * J w0 (cst), J_t (jt), the point block's determinant and cofactors (P),
 * all with the CPU's operations in its order. */
template <int D> struct ptconst {
  double e[D][2], cst[D][D], jt[D], P[D][D], det;
  bool fw[D], bw[D];
};

template <int D, bool DIV>
__device__ __forceinline__ void point_setup(ptconst<D> &q, const int pos[3], size_t i, const size_t st[3], const lt_grid &g,
                                            const jfields &J, const fields3 &f0, const float *__restrict__ wdat,
                                            const float *__restrict__ wsm, const double wd[3], const divcoef &dc, bool rd,
                                            bool rs, bool sor)
{
  double sw = 0, A[D][D];
  for (int d = 0; d < D; d++) {
    q.fw[d] = pos[d] < g.n[d] - 1;
    q.bw[d] = pos[d] > 0;
  }
  const double wi = rs ? (double)__ldg(wsm + i) : 0.0;
#pragma unroll
  for (int d = 0; d < D; d++) {
    q.e[d][0] = q.e[d][1] = 0.0;
    if (q.bw[d]) {
      q.e[d][0] = rs ? __dmul_rn(wd[d], __dmul_rn(0.5, __dadd_rn(wi, (double)__ldg(wsm + i - st[d])))) : wd[d];
      sw = __dadd_rn(sw, q.e[d][0]);
    }
    if (q.fw[d]) {
      q.e[d][1] = rs ? __dmul_rn(wd[d], __dmul_rn(0.5, __dadd_rn(wi, (double)__ldg(wsm + i + st[d])))) : wd[d];
      sw = __dadd_rn(sw, q.e[d][1]);
    }
  }
  const double dw = rd ? (double)__ldg(wdat + i) : 1.0;
#pragma unroll
  for (int k = 0; k < D; k++) {
#pragma unroll
    for (int e = 0; e < D; e++) {
      double jke = (double)__ldg(J.p[jx(k, e, D)] + i);
      if (rd) jke = __dmul_rn(jke, dw);
      A[k][e] = k == e ? __dadd_rn(jke, sw) : __dadd_rn(jke, 0.0);
      q.cst[k][e] = __dmul_rn(jke, (double)__ldg(f0.p[e] + i));
    }
    q.jt[k] = (double)__ldg(J.p[jx(k, D, D)] + i);
    if (rd) q.jt[k] = __dmul_rn(q.jt[k], dw);
  }
  if (DIV) {
#pragma unroll
    for (int k = 0; k < D; k++) {
      if (!sor) A[k][k] = __dadd_rn(A[k][k], dc.tau);
#pragma unroll
      for (int e = 0; e < D; e++)
        if (q.fw[k] && q.fw[e]) A[k][e] = __dadd_rn(A[k][e], dc.bb[k][e]);
      if (q.bw[k]) A[k][k] = __dadd_rn(A[k][k], dc.bb[k][k]);
    }
  }
  if (D == 2) {
    q.det = __dsub_rn(__dmul_rn(A[0][0], A[1][1]), __dmul_rn(A[0][1], A[0][1]));
    q.P[0][0] = A[0][0], q.P[0][1] = A[0][1], q.P[1][1] = A[1][1], q.P[1][0] = A[1][0];
  } else {
    const int a = 0, b = 1, c = D - 1; /* D == 3 */
    double c00 = __dsub_rn(__dmul_rn(A[b][b], A[c][c]), __dmul_rn(A[b][c], A[b][c]));
    double c01 = __dsub_rn(__dmul_rn(A[a][c], A[b][c]), __dmul_rn(A[a][b], A[c][c]));
    double c02 = __dsub_rn(__dmul_rn(A[a][b], A[b][c]), __dmul_rn(A[a][c], A[b][b]));
    double c11 = __dsub_rn(__dmul_rn(A[a][a], A[c][c]), __dmul_rn(A[a][c], A[a][c]));
    double c12 = __dsub_rn(__dmul_rn(A[a][b], A[a][c]), __dmul_rn(A[a][a], A[b][c]));
    double c22 = __dsub_rn(__dmul_rn(A[a][a], A[b][b]), __dmul_rn(A[a][b], A[a][b]));
    q.det = __dadd_rn(__dadd_rn(__dmul_rn(A[a][a], c00), __dmul_rn(A[a][b], c01)), __dmul_rn(A[a][c], c02));
    q.P[a][a] = c00, q.P[a][b] = c01, q.P[a][c] = c02;
    q.P[b][a] = c01, q.P[b][b] = c11, q.P[b][c] = c12;
    q.P[c][a] = c02, q.P[c][b] = c12, q.P[c][c] = c22;
  }
}

/* One relaxation step at the sample `at` of src (shared-memory tile or the
 * global planes; str: the axis strides there): the new values, Jacobi or
 * SOR (clg.c relax_sweep, operation for operation). */
template <int D, bool DIV, typename T>
__device__ __forceinline__ void relax_step(const ptconst<D> &q, const float *const src[D], T at, const T str[3],
                                           const divcoef &dc, bool sor, double om, float out[D])
{
  double b[D];
#pragma unroll
  for (int k = 0; k < D; k++) b[k] = 0.0;
#pragma unroll
  for (int d = 0; d < D; d++) {
    if (q.bw[d]) {
#pragma unroll
      for (int k = 0; k < D; k++) b[k] = __dadd_rn(b[k], __dmul_rn(q.e[d][0], (double)src[k][at - str[d]]));
    }
    if (q.fw[d]) {
#pragma unroll
      for (int k = 0; k < D; k++) b[k] = __dadd_rn(b[k], __dmul_rn(q.e[d][1], (double)src[k][at + str[d]]));
    }
  }
#pragma unroll
  for (int k = 0; k < D; k++) {
#pragma unroll
    for (int e = 0; e < D; e++) b[k] = __dadd_rn(b[k], q.cst[k][e]);
    b[k] = __dsub_rn(b[k], q.jt[k]);
  }
  if (DIV) {
    double u = 0;
#pragma unroll
    for (int e = 0; e < D; e++)
      if (q.fw[e]) u = __dadd_rn(u, __dmul_rn((double)src[e][at + str[e]], dc.ih[e]));
#pragma unroll
    for (int k = 0; k < D; k++) {
      if (!sor) b[k] = __dadd_rn(b[k], __dmul_rn(dc.tau, (double)src[k][at]));
      if (q.bw[k]) {
        const T j = at - str[k];
        double tt = -__dmul_rn((double)src[k][j], dc.ih[k]);
#pragma unroll
        for (int e = 0; e < D; e++)
          if (e != k && q.fw[e])
            tt = __dadd_rn(tt, __dmul_rn(__dsub_rn((double)src[e][j + str[e]], (double)src[e][j]), dc.ih[e]));
        b[k] = __dsub_rn(b[k], __dmul_rn(__dmul_rn(dc.beta, dc.ih[k]), tt));
      }
      if (q.fw[k]) b[k] = __dadd_rn(b[k], __dmul_rn(__dmul_rn(dc.beta, dc.ih[k]), u));
    }
  }
  double x[D];
  if (D == 2) {
    x[0] = __ddiv_rn(__dsub_rn(__dmul_rn(b[0], q.P[1][1]), __dmul_rn(q.P[0][1], b[1])), q.det);
    x[1] = __ddiv_rn(__dsub_rn(__dmul_rn(q.P[0][0], b[1]), __dmul_rn(q.P[0][1], b[0])), q.det);
  } else {
#pragma unroll
    for (int k = 0; k < D; k++)
      x[k] = __ddiv_rn(__dadd_rn(__dadd_rn(__dmul_rn(q.P[k][0], b[0]), __dmul_rn(q.P[k][1], b[1])),
                                 __dmul_rn(q.P[k][D - 1], b[D - 1])),
                       q.det);
  }
#pragma unroll
  for (int k = 0; k < D; k++) {
    if (sor) {
      const double old = (double)src[k][at];
      out[k] = (float)__dadd_rn(old, __dmul_rn(om, __dsub_rn(x[k], old)));
    } else {
      out[k] = (float)x[k];
    }
  }
}

/* Relaxation sweeps fused per launch (temporal blocking): a block owns a
 * tile of TX x TY x TZ samples (one thread each) whose inner part, P
 * samples in from every tile face along the active axes, is what it
 * writes; the halo around it is loaded and recomputed redundantly, so that
 * after P passes in shared memory the inner samples hold exactly what P
 * separate passes give: at pass s only the samples at least s in from the
 * tile faces are computed, and they read neighbours computed at pass s - 1
 * (or loaded). Jacobi (SOR false): P = K sweeps, ping-pong in shared
 * memory. Red-black SOR (no divergence term): P = 2K passes, red then
 * black, in place (a pass reads only the other colour). The constants of
 * point_setup are formed once per launch (the tensor and the lagged weights
 * do not change within it), so the result is bit-identical to the CPU's. */
template <int D, bool DIV, bool SOR, int TX, int TY, int TZ>
__global__ void __launch_bounds__(TX *TY *TZ) relax_tile(fields3 f, fields3 fn, fields3 f0, jfields J, const float *wdat,
                                                          const float *wsm, lt_grid g, int P, double wd0, double wd1,
                                                          double wd2, divcoef dc, bool rd, bool rs, double om)
{
  constexpr int NT = TX * TY * TZ;
  __shared__ float sf[SOR ? 1 : 2][D][NT];
  const int T[3] = {TX, TY, TZ};
  const int t[3] = {(int)threadIdx.x, (int)threadIdx.y, (int)threadIdx.z};
  const int bid[3] = {(int)blockIdx.x, (int)blockIdx.y, (int)blockIdx.z};
  const int ts = (t[2] * TY + t[1]) * TX + t[0];
  const int tst[3] = {1, TX, TX * TY};
  int pos[3], edge = 1 << 30; /* edge: distance from the nearest tile face (active axes) */
  bool inside = true;
  for (int d = 0; d < 3; d++) {
    const int h = d < D ? P : 0;
    pos[d] = bid[d] * (T[d] - 2 * h) - h + t[d];
    inside = inside && pos[d] >= 0 && pos[d] < g.n[d];
    if (d < D) edge = min(edge, min(t[d], T[d] - 1 - t[d]));
  }
  const size_t i = inside ? ((size_t)pos[2] * g.n[1] + pos[1]) * g.n[0] + pos[0] : 0;
  const size_t st[3] = {1, (size_t)g.n[0], (size_t)g.n[0] * g.n[1]};
  if (inside)
    for (int k = 0; k < D; k++) sf[0][k][ts] = __ldg(f.p[k] + i);
  const bool active = inside && edge >= 1; /* computed at pass 1 at least */
  const double wd[3] = {wd0, wd1, wd2};
  const int colour = (pos[0] + pos[1] + pos[2]) & 1;
  ptconst<D> q;
  if (active) point_setup<D, DIV>(q, pos, i, st, g, J, f0, wdat, wsm, wd, dc, rd, rs, SOR);
  __syncthreads();
  for (int s = 1; s <= P; s++) {
    const int sb = SOR ? 0 : (s - 1) & 1, db = SOR ? 0 : s & 1;
    if (active && edge >= s && (!SOR || colour == ((s - 1) & 1))) {
      const float *src[D];
      for (int k = 0; k < D; k++) src[k] = sf[sb][k];
      float out[D];
      relax_step<D, DIV, int>(q, src, ts, tst, dc, SOR, om, out);
      for (int k = 0; k < D; k++) sf[db][k][ts] = out[k];
    }
    __syncthreads();
  }
  if (inside && edge >= P)
    for (int k = 0; k < D; k++) fn.p[k][i] = sf[SOR ? 0 : P & 1][k][ts];
}

/* One SOR pass over the samples of one colour (lt_flow_colour), in place
 * in global memory: the 3D solver (a 3D tile's halo of 2 passes costs more
 * than it saves) and every solve with the divergence term (2^dims
 * colours). Threads cover every other x of a row; a pass reads only samples
 * of other colours, so the result does not depend on the order. */
template <int D, bool DIV>
__global__ void sor_pass_kernel(fields3 f, fields3 f0, jfields J, const float *wdat, const float *wsm, lt_grid g, int colour,
                                double wd0, double wd1, double wd2, divcoef dc, bool rd, bool rs, double om)
{
  int pos[3] = {0, (int)(blockIdx.y * blockDim.y + threadIdx.y), (int)(blockIdx.z * blockDim.z + threadIdx.z)};
  if (pos[1] >= g.n[1] || pos[2] >= g.n[2]) return;
  const int x2 = (int)(blockIdx.x * blockDim.x + threadIdx.x);
  if (DIV) {
    if ((pos[1] & 1) != ((colour >> 1) & 1) || (pos[2] & 1) != ((colour >> 2) & 1)) return;
    pos[0] = 2 * x2 + (colour & 1);
  } else {
    pos[0] = 2 * x2 + ((pos[1] + pos[2] + colour) & 1);
  }
  if (pos[0] >= g.n[0]) return;
  const size_t i = ((size_t)pos[2] * g.n[1] + pos[1]) * g.n[0] + pos[0];
  const size_t st[3] = {1, (size_t)g.n[0], (size_t)g.n[0] * g.n[1]};
  const double wd[3] = {wd0, wd1, wd2};
  ptconst<D> q;
  point_setup<D, DIV>(q, pos, i, st, g, J, f0, wdat, wsm, wd, dc, rd, rs, true);
  const float *src[D];
  for (int k = 0; k < D; k++) src[k] = f.p[k];
  float out[D];
  relax_step<D, DIV, size_t>(q, src, i, st, dc, true, om, out);
  for (int k = 0; k < D; k++) f.p[k][i] = out[k];
}

/* clg.c robust_weights, operation for operation. */
__global__ void robust_weights_kernel(fields3 f, fields3 f0, jfields J, float *__restrict__ wdat, float *__restrict__ wsm,
                                      lt_grid g, int dims, double ied, double ies, bool rd, bool rs)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int pos[3];
  coords(g, i, pos);
  if (rd) {
    double du[3], q = (double)J.p[jx(dims, dims, dims)][i];
    for (int k = 0; k < dims; k++) du[k] = __dsub_rn((double)f.p[k][i], (double)f0.p[k][i]);
    for (int k = 0; k < dims; k++) q = __dadd_rn(q, __dmul_rn(__dmul_rn(2.0, (double)J.p[jx(k, dims, dims)][i]), du[k]));
    for (int k = 0; k < dims; k++)
      for (int e = 0; e < dims; e++) q = __dadd_rn(q, __dmul_rn(__dmul_rn((double)J.p[jx(k, e, dims)][i], du[k]), du[e]));
    if (!(q > 0.0)) q = 0.0;
    wdat[i] = (float)__ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(1.0, __dmul_rn(q, ied))));
  }
  if (rs) {
    double q = 0.0;
    for (int d = 0; d < dims; d++) {
      const int lo = pos[d] > 0, hi = pos[d] < g.n[d] - 1;
      const size_t s = stride_of(g, d);
      const double den = __dmul_rn((double)(lo + hi), (double)g.h[d]);
      for (int k = 0; k < dims; k++) {
        const double t = __ddiv_rn(__dsub_rn((double)f.p[k][i + (hi ? s : 0)], (double)f.p[k][i - (lo ? s : 0)]), den);
        q = __dadd_rn(q, __dmul_rn(t, t));
      }
    }
    wsm[i] = (float)__ddiv_rn(1.0, __dsqrt_rn(__dadd_rn(1.0, __dmul_rn(q, ies))));
  }
}

/* warp_kernel + avg_kernel in one: avg = (s0 + I1(x + w0)) / 2,
 * D_t = I1(x + w0) - s0 (the warped frame itself is not kept). */
__global__ void warp_avg_kernel(const float *__restrict__ s1, fields3 f, const float *__restrict__ s0, float *__restrict__ avg,
                                float *__restrict__ dt, lt_grid g, int dims, float ih0, float ih1, float ih2)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int c[3];
  coords(g, i, c);
  const float ih[3] = {ih0, ih1, ih2};
  float p[3] = {(float)c[0], (float)c[1], (float)c[2]};
  for (int d = 0; d < dims; d++) p[d] = __fadd_rn(p[d], __fmul_rn(f.p[d][i], ih[d]));
  const float w1 = sample(s1, g, p), a = s0[i];
  avg[i] = __fmul_rn(0.5f, __fadd_rn(a, w1));
  dt[i] = __fsub_rn(w1, a);
}

/* deriv_kernel for every active axis + outside_kernel, and f0 = f (the
 * linearisation point of this warp). */
__global__ void deriv_outside_kernel(const float *__restrict__ avg, fields3 D, fields3 f, fields3 f0, float *__restrict__ dt,
                                     lt_grid g, int dims, float inv0, float inv1, float inv2)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int c[3];
  coords(g, i, c);
  const float inv[3] = {inv0, inv1, inv2};
  float dv[3] = {0.0f, 0.0f, 0.0f};
  int out = 0;
  for (int d = 0; d < dims; d++) {
    const int p = c[d], nd = g.n[d];
    if (nd >= 2) {
      const size_t s = stride_of(g, d);
      const float *base = avg + i - (ptrdiff_t)p * (ptrdiff_t)s;
      float m2 = __ldg(base + (size_t)reflect(p - 2, nd) * s), m1 = __ldg(base + (size_t)reflect(p - 1, nd) * s);
      float p1 = __ldg(base + (size_t)reflect(p + 1, nd) * s), p2 = __ldg(base + (size_t)reflect(p + 2, nd) * s);
      dv[d] = __fmul_rn(__fadd_rn(__fsub_rn(m2, p2), __fmul_rn(8.0f, __fsub_rn(p1, m1))), inv[d]);
    }
    const float fd = f.p[d][i];
    f0.p[d][i] = fd;
    float q = __fadd_rn((float)c[d], __fdiv_rn(fd, g.h[d]));
    out |= !(q >= 0.0f && q <= (float)(g.n[d] - 1));
  }
  for (int d = 0; d < dims; d++) D.p[d][i] = out ? 0.0f : dv[d];
  if (out) dt[i] = 0.0f;
}

/* Up to 4 planes at once: one pass of conv_kernel along axis d (d < 0: no
 * convolution, a copy), the source value being a[c][i] or, with PROD, the
 * product a[c][i] * b[c][i] (product_kernel's value, formed at each tap). */
#define MC 4
typedef struct multi {
  const float *a[MC], *b[MC];
  float *o[MC];
} multi;

template <bool PROD>
__device__ __forceinline__ float mval(const multi &m, int c, size_t j)
{
  return PROD ? __fmul_rn(__ldg(m.a[c] + j), __ldg(m.b[c] + j)) : __ldg(m.a[c] + j);
}

template <bool PROD>
__global__ void conv_multi_kernel(multi m, int nc, lt_grid g, int d, lt_gauss_kernel k)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  if (d < 0) {
#pragma unroll
    for (int c = 0; c < MC; c++)
      if (c < nc) m.o[c][i] = mval<PROD>(m, c, i);
    return;
  }
  int cc[3];
  coords(g, i, cc);
  const int p = cc[d], nd = g.n[d], r = k.r;
  const size_t s = stride_of(g, d);
  const size_t b0 = i - (size_t)p * s;
  const float *w = k.w + r;
  const bool interior = p - r >= 0 && p + r < nd;
#pragma unroll
  for (int c = 0; c < MC; c++) {
    if (c >= nc) break;
    float acc = __fmul_rn(w[0], mval<PROD>(m, c, b0 + (size_t)p * s));
    if (interior) {
      for (int j = 1; j <= r; j++)
        acc = __fadd_rn(acc, __fmul_rn(w[j], __fadd_rn(mval<PROD>(m, c, b0 + (size_t)(p - j) * s),
                                                       mval<PROD>(m, c, b0 + (size_t)(p + j) * s))));
    } else {
      for (int j = 1; j <= r; j++)
        acc = __fadd_rn(acc, __fmul_rn(w[j], __fadd_rn(mval<PROD>(m, c, b0 + (size_t)reflect(p - j, nd) * s),
                                                       mval<PROD>(m, c, b0 + (size_t)reflect(p + j, nd) * s))));
    }
    m.o[c][i] = acc;
  }
}

/* resample_kernel for up to 3 planes of one grid. */
__global__ void resample_multi_kernel(fields3 in, lt_grid gi, fields3 out, lt_grid go, int nc, float f0, float f1, float f2,
                                      float scale)
{
  const size_t n = (size_t)go.n[0] * go.n[1] * go.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int c[3];
  coords(go, i, c);
  float p[3] = {__fsub_rn(__fmul_rn(__fadd_rn((float)c[0], 0.5f), f0), 0.5f),
                __fsub_rn(__fmul_rn(__fadd_rn((float)c[1], 0.5f), f1), 0.5f),
                __fsub_rn(__fmul_rn(__fadd_rn((float)c[2], 0.5f), f2), 0.5f)};
  for (int k = 0; k < nc; k++) out.p[k][i] = __fmul_rn(scale, sample(in.p[k], gi, p));
}

static inline unsigned blocks(size_t n) { return (unsigned)((n + TPB - 1) / TPB); }

static int launched(const char *what) { LT_CU(cudaGetLastError(), what); return 0; }

/* lt_grid_gauss of nc <= MC planes at once (ping-pong so that the last pass
 * lands in out[c], through tmp[c]); with PROD the input of plane c is the
 * product a[c] * b[c]. No axis to smooth: one copy (or product) pass. */
static int gauss_multi(cu_clg *c, bool prod, const float *const a[], const float *const b[], float *const out[],
                       float *const tmp[], int nc, const lt_grid *g, const lt_gauss_kernel k[])
{
  const size_t n = lt_grid_size(g);
  int axes[3], na = 0;
  for (int d = 0; d < 3; d++)
    if (g->n[d] > 1 && k[d].r > 0) axes[na++] = d;
  multi m;
  memset(&m, 0, sizeof m);
  for (int i = 0; i < nc; i++) m.a[i] = a[i], m.b[i] = prod ? b[i] : NULL;
  for (int i = 0; i < (na ? na : 1); i++) {
    for (int j = 0; j < nc; j++) m.o[j] = (na - 1 - i) % 2 == 0 || na == 0 ? out[j] : tmp[j];
    const int d = na ? axes[i] : -1;
    const lt_gauss_kernel &kk = k[na ? axes[i] : 0];
    c->nlaunch++;
    if (prod && i == 0)
      conv_multi_kernel<true><<<blocks(n), TPB, 0, c->st>>>(m, nc, *g, d, kk);
    else
      conv_multi_kernel<false><<<blocks(n), TPB, 0, c->st>>>(m, nc, *g, d, kk);
    for (int j = 0; j < nc; j++) m.a[j] = m.o[j];
  }
  return launched("flow gauss");
}

static int resample_multi(cu_clg *c, float *const in[], const lt_grid *gi, float *const out[], const lt_grid *go, int nc)
{
  float f[3];
  fields3 fi = {{NULL, NULL, NULL}}, fo = {{NULL, NULL, NULL}};
  for (int d = 0; d < 3; d++) f[d] = (float)gi->n[d] / (float)go->n[d];
  for (int k = 0; k < nc; k++) fi.p[k] = in[k], fo.p[k] = out[k];
  c->nlaunch++;
  resample_multi_kernel<<<blocks(lt_grid_size(go)), TPB, 0, c->st>>>(fi, *gi, fo, *go, nc, f[0], f[1], f[2], 1.0f);
  return launched("flow resample");
}

static fields3 fields(float *const p[], int dims)
{
  fields3 f = {{NULL, NULL, NULL}};
  for (int d = 0; d < dims; d++) f.p[d] = p[d];
  return f;
}

/* clg.c motion_tensor: warp + average + D_t (1 kernel), derivatives +
 * outside rule + f0 = f (1 kernel), then the tensor products smoothed by
 * rho, MC components per batch (the product formed in the first pass). */
static int motion_tensor(cu_clg *c, const lt_grid *g)
{
  const size_t n = lt_grid_size(g);
  const int dims = c->dims;
  int r;
  float ih[3], inv[3];
  for (int d = 0; d < 3; d++) ih[d] = 1.0f / g->h[d], inv[d] = 1.0f / (12.0f * g->h[d]);
  c->nlaunch++;
  warp_avg_kernel<<<blocks(n), TPB, 0, c->st>>>(c->s1, fields(c->f, dims), c->s0, c->avg, c->D[dims], *g, dims, ih[0], ih[1],
                                                ih[2]);
  c->nlaunch++;
  deriv_outside_kernel<<<blocks(n), TPB, 0, c->st>>>(c->avg, fields(c->D, dims), fields(c->f, dims), fields(c->f0, dims),
                                                     c->D[dims], *g, dims, inv[0], inv[1], inv[2]);
  if ((r = launched("flow motion tensor"))) return r;
  /* free planes now: tmp, tmp2, avg, w1 */
  float *const tmp[MC] = {c->tmp, c->tmp2, c->avg, c->w1};
  const float *pa[NJ], *pb[NJ];
  float *po[NJ];
  int nj = 0;
  for (int a = 0; a <= dims; a++)
    for (int b = a; b <= dims; b++, nj++) pa[nj] = c->D[a], pb[nj] = c->D[b], po[nj] = c->J[jx_host(a, b, dims)];
  for (int s = 0; s < nj; s += MC) {
    const int nc = nj - s < MC ? nj - s : MC;
    if ((r = gauss_multi(c, true, pa + s, pb + s, po + s, tmp, nc, g, c->kr))) return r;
  }
  return 0;
}

/* Relaxation launch parameters of one level (clg.c relax_sweep's). */
typedef struct relax_args {
  fields3 f0;
  jfields J;
  double wd[3];
  divcoef dc;
  bool rd, rs;
  double om;
} relax_args;

template <int D, bool DIV, bool SOR, int TX, int TY, int TZ>
static void tile_launch(cu_clg *c, const lt_grid *g, int P, const relax_args &a)
{
  dim3 blk(TX, TY, TZ);
  dim3 grd((unsigned)((g->n[0] + TX - 2 * P - 1) / (TX - 2 * P)), (unsigned)((g->n[1] + TY - 2 * P - 1) / (TY - 2 * P)),
           D == 3 ? (unsigned)((g->n[2] + TZ - 2 * P - 1) / (TZ - 2 * P)) : 1u);
  relax_tile<D, DIV, SOR, TX, TY, TZ><<<grd, blk, 0, c->st>>>(fields(c->f, D), fields(c->fn, D), a.f0, a.J, c->wdat, c->wsm,
                                                              *g, P, a.wd[0], a.wd[1], a.wd[2], a.dc, a.rd, a.rs, a.om);
}

template <int D, bool DIV>
static void pass_launch(cu_clg *c, const lt_grid *g, int colour, const relax_args &a)
{
  dim3 blk(32, 4, D == 3 ? 2 : 1);
  dim3 grd((unsigned)(((g->n[0] + 1) / 2 + 31) / 32), (unsigned)((g->n[1] + 3) / 4),
           (unsigned)((g->n[2] + blk.z - 1) / blk.z));
  sor_pass_kernel<D, DIV><<<grd, blk, 0, c->st>>>(fields(c->f, D), a.f0, a.J, c->wdat, c->wsm, *g, colour, a.wd[0], a.wd[1],
                                                   a.wd[2], a.dc, a.rd, a.rs, a.om);
}

/* Tile shapes: 2D 32 x 16, 3D 16 x 8 x 8 (Jacobi only); the alternatives
 * (LT_FLOW_TILE=1): 2D 32 x 32, 3D 8 x 8 x 8. Halo P: K Jacobi sweeps or 2K
 * red-black passes per launch, P <= (TY - 1) / 2. */
#define T2X 32
#define T2Y 16
#define T2YB 32
#define T3XB 8
#define T3X 16
#define T3Y 8
#define T3Z 8

/* K iterations on level g, one launch (2D tile) or 2^dims (SOR passes). */
static void relax_launch(cu_clg *c, const lt_grid *g, int K, const relax_args &a, bool sor, bool div)
{
  const int dims = c->dims;
  if (sor && (dims == 3 || div)) {
    /* in place, one launch per colour and iteration */
    for (int it = 0; it < K; it++)
      for (int col = 0; col < lt_flow_colours(dims, div); col++) {
        c->nlaunch++;
        if (dims == 2) pass_launch<2, true>(c, g, col, a);
        else if (div) pass_launch<3, true>(c, g, col, a);
        else pass_launch<3, false>(c, g, col, a);
      }
    return;
  }
  const int P = sor ? 2 * K : K;
  c->nlaunch++;
  if (dims == 2 && sor) {
    /* one iteration (halo 2): 32 x 16; more: 32 x 32 (halo 2K) */
    if (K == 1) tile_launch<2, false, true, T2X, T2Y, 1>(c, g, P, a);
    else tile_launch<2, false, true, T2X, T2YB, 1>(c, g, P, a);
  } else if (dims == 2 && !c->tile) {
    if (div) tile_launch<2, true, false, T2X, T2Y, 1>(c, g, P, a);
    else tile_launch<2, false, false, T2X, T2Y, 1>(c, g, P, a);
  } else if (dims == 2) {
    if (div) tile_launch<2, true, false, T2X, T2YB, 1>(c, g, P, a);
    else tile_launch<2, false, false, T2X, T2YB, 1>(c, g, P, a);
  } else if (!c->tile) {
    if (div) tile_launch<3, true, false, T3X, T3Y, T3Z>(c, g, P, a);
    else tile_launch<3, false, false, T3X, T3Y, T3Z>(c, g, P, a);
  } else {
    if (div) tile_launch<3, true, false, T3XB, T3Y, T3Z>(c, g, P, a);
    else tile_launch<3, false, false, T3XB, T3Y, T3Z>(c, g, P, a);
  }
  for (int d = 0; d < dims; d++) {
    float *t = c->f[d];
    c->f[d] = c->fn[d];
    c->fn[d] = t;
  }
}

/* clg.c solve_level: per warp the motion tensor, then the iterations, the
 * robust weights recomputed before iteration 0 and every `lag` iterations
 * (a fused launch never crosses such a point). */
static int solve_level(cu_clg *c, const lt_grid *g, int l)
{
  const int nit = lt_flow_level_iterations(&c->p, l);
  const int dims = c->dims;
  relax_args a;
  memset(&a, 0, sizeof a);
  for (int d = 0; d < dims; d++) a.wd[d] = (double)c->p.alpha / ((double)g->h[d] * g->h[d]);
  for (int i = 0; i < NJ; i++) a.J.p[i] = c->J[i];
  a.f0 = fields(c->f0, dims);
  lt_flow_div_coefs(&c->p, g, a.dc.ih, a.dc.bb);
  for (int d = 0; d < dims; d++) a.dc.tau += a.dc.bb[d][d];
  a.dc.tau *= 2.0;
  a.dc.beta = (double)c->p.beta;
  a.dc.on = c->p.beta > 0;
  a.rd = c->p.eps_data > 0;
  a.rs = c->p.eps_smooth > 0;
  a.om = (double)c->p.omega;
  const bool sor = c->p.omega > 0, robust = a.rd || a.rs;
  const double ied = a.rd ? 1.0 / ((double)c->p.eps_data * c->p.eps_data) : 0.0;
  const double ies = a.rs ? 1.0 / ((double)c->p.eps_smooth * c->p.eps_smooth) : 0.0;
  /* SOR: the finest level fuse_sor; a coarser one fuse_sor_coarse, or 3
   * (halo 6 in 32 x 32 tiles) below 2^18 samples, where a launch is short
   * and its latency, not the halo's redundant work, is what counts */
  const int fuse = !sor               ? c->fuse
                   : l == 0           ? c->fuse_sor
                   : c->fuse_sor_env  ? c->fuse_sor_coarse
                   : lt_grid_size(g) < ((size_t)1 << 18) ? 3
                                      : c->fuse_sor_coarse;
  int r;
  for (int w = 0; w < c->p.warps; w++) {
    if ((r = motion_tensor(c, g))) return r;
    for (int it = 0; it < nit;) {
      if (robust && it % c->p.lag == 0) {
        c->nlaunch++;
        robust_weights_kernel<<<blocks(lt_grid_size(g)), TPB, 0, c->st>>>(fields(c->f, dims), a.f0, a.J, c->wdat, c->wsm, *g,
                                                                         dims, ied, ies, a.rd, a.rs);
      }
      int K = nit - it < fuse ? nit - it : fuse;
      if (robust && K > c->p.lag - it % c->p.lag) K = c->p.lag - it % c->p.lag;
      relax_launch(c, g, K, a, sor, a.dc.on);
      it += K;
    }
    if ((r = launched("flow relaxation"))) return r;
  }
  return 0;
}

/* Everything between upload and download: device work only, on c->st
 * (what the CUDA Graph captures). */
static int compute_body(cu_clg *c)
{
  int r;
  c->nlaunch = 0;
  for (int d = 0; d < c->dims; d++) c->f[d] = c->f_init[d], c->fn[d] = c->fn_init[d];
  /* both frames at once; free planes: tmp, tmp2 (results), avg, w1 (scratch) */
  float *const res[2] = {c->tmp2, c->tmp}, *const scr[2] = {c->avg, c->w1};
  for (int l = 1; l < c->nlev; l++) {
    const float *fine[2] = {l == 1 ? c->in0 : c->pyr0[l - 1], l == 1 ? c->in1 : c->pyr1[l - 1]};
    float *coarse[2] = {c->pyr0[l], c->pyr1[l]};
    if ((r = gauss_multi(c, false, fine, NULL, res, scr, 2, &c->lev[l - 1], c->ka))) return r;
    if ((r = resample_multi(c, res, &c->lev[l - 1], coarse, &c->lev[l], 2))) return r;
  }
  for (int l = c->nlev - 1; l >= 0; l--) {
    const lt_grid *g = &c->lev[l];
    const size_t n = lt_grid_size(g);
    if (l == c->nlev - 1) {
      for (int d = 0; d < c->dims; d++) {
        c->nlaunch++;
        LT_CU(cudaMemsetAsync(c->f[d], 0, n * sizeof(float), c->st), "flow zero");
      }
    } else {
      /* physical units: the flow keeps its values, only the grid changes */
      if ((r = resample_multi(c, c->f, &c->lev[l + 1], c->fn, g, c->dims))) return r;
      for (int d = 0; d < c->dims; d++) {
        float *t = c->f[d];
        c->f[d] = c->fn[d];
        c->fn[d] = t;
      }
    }
    const float *src[2] = {l ? c->pyr0[l] : c->in0, l ? c->pyr1[l] : c->in1};
    float *const dst[2] = {c->s0, c->s1}, *const scr2[2] = {c->tmp, c->tmp2};
    if ((r = gauss_multi(c, false, src, NULL, dst, scr2, 2, g, c->ks))) return r;
    if ((r = solve_level(c, g, l))) return r;
  }
  for (int d = 0; d < c->dims; d++) c->f_final[d] = c->f[d];
  return 0;
}

/* 8-bit frame to float (the loop's grey8 holds the same pixels as grey). */
__global__ void bytes_to_float_kernel(const unsigned char *__restrict__ b, float *__restrict__ o, size_t n)
{
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) o[i] = (float)b[i];
}

/* One pair: upload, the captured graph (captured at the first pair: the
 * buffers never move and every pair starts from the same ping-pong order),
 * download. LT_FLOW_NO_GRAPH=1 launches the kernels one by one instead.
 * I0 NULL: the next pair of a sequence (cu_compute_next); I1b: I1 as
 * bytes. */

static int cu_compute_grid(cu_clg *c, const float *I0, const float *I1, const unsigned char *I1b, float *const flow[])
{
  const size_t n0 = lt_grid_size(&c->lev[0]);
  int r;
  /* I0 NULL (cu_compute_next): the last pair's I1, still in in1 */
  if (I0) LT_CU(cudaMemcpyAsync(c->in0, I0, n0 * sizeof(float), cudaMemcpyHostToDevice, c->st), "flow upload");
  else LT_CU(cudaMemcpyAsync(c->in0, c->in1, n0 * sizeof(float), cudaMemcpyDeviceToDevice, c->st), "flow copy");
  if (I1b && c->in8) {
    LT_CU(cudaMemcpyAsync(c->in8, I1b, n0, cudaMemcpyHostToDevice, c->st), "flow upload");
    bytes_to_float_kernel<<<blocks(n0), TPB, 0, c->st>>>(c->in8, c->in1, n0);
    if ((r = launched("flow upload"))) return r;
  } else {
    LT_CU(cudaMemcpyAsync(c->in1, I1, n0 * sizeof(float), cudaMemcpyHostToDevice, c->st), "flow upload");
  }
  if (!c->use_graph) {
    if ((r = compute_body(c))) return r;
  } else {
    if (!c->exec) {
      cudaGraph_t graph = NULL;
      LT_CU(cudaStreamBeginCapture(c->st, cudaStreamCaptureModeThreadLocal), "flow graph capture");
      r = compute_body(c);
      cudaError_t e = cudaStreamEndCapture(c->st, &graph);
      if (r) {
        if (graph) cudaGraphDestroy(graph);
        return r;
      }
      LT_CU(e, "flow graph capture");
      e = cudaGraphInstantiate(&c->exec, graph, 0);
      cudaGraphDestroy(graph);
      LT_CU(e, "flow graph instantiate");
    }
    LT_CU(cudaGraphLaunch(c->exec, c->st), "flow graph launch");
  }
  for (int d = 0; d < c->dims; d++)
    LT_CU(cudaMemcpyAsync(flow[d], c->f_final[d], n0 * sizeof(float), cudaMemcpyDeviceToHost, c->st), "flow download");
  LT_CU(cudaStreamSynchronize(c->st), "flow compute");
  return 0;
}


static void cu_destroy(void *ctx)
{
  cu_clg *c = (cu_clg *)ctx;
  if (!c) return;
  if (c->exec) cudaGraphExecDestroy(c->exec);
  if (c->arena) cudaFree(c->arena);
  if (c->in8) cudaFree(c->in8);
  if (c->st) cudaStreamDestroy(c->st);
  free(c);
}

static int cu_create_grid(void **out, const lt_flow_params *p, const lt_grid *g)
{
  *out = NULL;
  int r = lt_flow_params_check(p);
  if (r) return r;
  if (g->n[0] < 2 || g->n[1] < 2 || g->n[2] < 1) {
    lt_error("flow: image %dx%d is too small (at least 2x2)", g->n[0], g->n[1]);
    return LT_ERR_USAGE;
  }
  cu_clg *c = (cu_clg *)calloc(1, sizeof *c);
  if (!c) return LT_ERR_NOMEM;
  c->p = *p;
  c->dims = lt_grid_dims(g);
  c->nlev = lt_flow_pyramid(p, g, c->lev);
  if ((r = lt_flow_kernels(c->ks, p->sigma, g)) || (r = lt_flow_kernels(c->kr, p->rho, g)) ||
      (r = lt_flow_kernels(c->ka, lt_flow_restrict_sigma(p->eta), g))) {
    free(c);
    return r;
  }
  const size_t n = lt_grid_size(g);
  const int nj = (c->dims + 1) * (c->dims + 2) / 2;
  size_t total = n * (10 + (size_t)(c->dims + 1) + nj + 3 * (size_t)c->dims);
  for (int l = 1; l < c->nlev; l++) total += 2 * lt_grid_size(&c->lev[l]);
  cudaError_t e = cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMalloc((void **)&c->arena, total * sizeof(float));
  if (e == cudaSuccess && c->dims == 2) e = cudaMalloc((void **)&c->in8, n);
  if (e != cudaSuccess) {
    r = lt_cuda_fail(e, "flow create (GPU memory)");
    cu_destroy(c);
    return r;
  }
  float *a = c->arena;
  float **fixed[] = {&c->in0, &c->in1, &c->s0, &c->s1, &c->w1, &c->avg, &c->tmp, &c->tmp2, &c->wdat, &c->wsm};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++, a += n) *fixed[i] = a;
  for (int i = 0; i <= c->dims; i++, a += n) c->D[i] = a;
  for (int i = 0; i < nj; i++, a += n) c->J[i] = a;
  for (int i = 0; i < c->dims; i++) {
    c->f[i] = a, a += n;
    c->fn[i] = a, a += n;
    c->f0[i] = a, a += n;
    c->f_init[i] = c->f[i], c->fn_init[i] = c->fn[i];
  }
  for (int l = 1; l < c->nlev; l++) {
    size_t m = lt_grid_size(&c->lev[l]);
    c->pyr0[l] = a, a += m;
    c->pyr1[l] = a, a += m;
  }
  const char *ng = getenv("LT_FLOW_NO_GRAPH");
  c->use_graph = !(ng && *ng && strcmp(ng, "0") != 0);
  /* sweeps per launch: only (T - 2K)^dims of T^dims samples are written;
   * 2D 32x16 tiles with K = 2 (28x12 written), 3D K = 1 */
  const char *tl = getenv("LT_FLOW_TILE");
  c->tile = tl && atoi(tl) == 1;
  const int kmax = c->dims == 2 ? ((c->tile ? T2YB : T2Y) - 1) / 2 : (T3Y - 1) / 2;
  c->fuse = c->dims == 2 ? 2 : 1;
  /* red-black SOR in 2D: 1 iteration per launch on the finest level
   * (32 x 16 tiles), 2 or 3 on the coarser ones (32 x 32 tiles, halo 4 or
   * 6; solve_level) */
  c->fuse_sor = 1;
  c->fuse_sor_coarse = 2;
  const char *fz = getenv("LT_FLOW_FUSE"), *fs = getenv("LT_FLOW_FUSE_SOR"), *fc = getenv("LT_FLOW_FUSE_SOR_COARSE");
  if (fz && atoi(fz) >= 1) c->fuse = atoi(fz);
  if (fs && atoi(fs) >= 1) c->fuse_sor = atoi(fs);
  if (fc && atoi(fc) >= 1) c->fuse_sor_coarse = atoi(fc), c->fuse_sor_env = 1;
  if (c->fuse > kmax) c->fuse = kmax;
  if (c->fuse_sor > (T2YB - 1) / 4) c->fuse_sor = (T2YB - 1) / 4;
  if (c->fuse_sor_coarse > (T2YB - 1) / 4) c->fuse_sor_coarse = (T2YB - 1) / 4;
  *out = c;
  return 0;
}

static int cu_create(void **ctx, const lt_flow_params *p, int w, int h)
{
  lt_grid g = lt_grid_2d(w, h);
  return cu_create_grid(ctx, p, &g);
}

static int cu_compute(void *ctx, const float *I0, const float *I1, float *u, float *v)
{
  float *const flow[2] = {u, v};
  return cu_compute_grid((cu_clg *)ctx, I0, I1, NULL, flow);
}

static int cu_compute_next(void *ctx, const float *I1, const unsigned char *I1b, float *u, float *v)
{
  float *const flow[2] = {u, v};
  return cu_compute_grid((cu_clg *)ctx, NULL, I1, I1b, flow);
}

static int cu_compute_grid_v(void *ctx, const float *I0, const float *I1, float *const flow[])
{
  return cu_compute_grid((cu_clg *)ctx, I0, I1, NULL, flow);
}

static long cu_launches(void *ctx) { return ctx ? ((cu_clg *)ctx)->nlaunch : 0; }

static void *cu_host_alloc(size_t bytes, const char *what)
{
  void *p = NULL;
  return lt_cuda_alloc_host(&p, bytes, what) ? NULL : p;
}

static void cu_host_free(void *p)
{
  if (p) cudaFreeHost(p);
}

extern "C" const lt_flow_backend lt_flow_backend_cuda = {"cuda",         cu_create,         cu_destroy,  cu_compute,
                                                         cu_create_grid, cu_compute_grid_v, cu_launches, cu_host_alloc,
                                                         cu_host_free,   cu_compute_next};

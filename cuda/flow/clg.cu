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
 * Jacobi: one thread per sample, one sweep per launch (ping-pong buffers),
 * the divergence term (beta > 0) as in clg.c. The neighbours are read
 * through the read-only cache; a shared-memory tile with several sweeps
 * fused per launch (temporal blocking) would cut global traffic further and
 * is not done yet.
 *
 * Launches: the whole pair after the upload is one CUDA Graph, captured at
 * the first pair and replayed (buffers never move; every pair starts from
 * the same ping-pong order, f_init). Per pair: 2 uploads, 1 graph launch,
 * dims downloads; the graph's node count is lt_flow_backend.launches. */
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
  float *f_init[3], *fn_init[3]; /* ping-pong order at the start of every pair */
  float *f_final[3];              /* where the flow ends (recorded with the graph) */
  float *arena;
  cudaStream_t st;
  cudaGraphExec_t exec; /* the whole pair after the upload, captured at the first pair */
  int use_graph;
  long nlaunch; /* kernels + memcpy/memset nodes of one pair */
} cu_clg;

/* Divergence-term coefficients (clg.c jacobi_sweep), by value. */
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

/* Coordinates of sample i. */
__device__ __forceinline__ void coords(const lt_grid &g, size_t i, int c[3])
{
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

__global__ void conv_kernel(const float *__restrict__ in, float *__restrict__ out, lt_grid g, int d, lt_gauss_kernel k)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int c[3];
  coords(g, i, c);
  const int p = c[d], nd = g.n[d], r = k.r;
  const size_t s = stride_of(g, d);
  const float *base = in + i - (ptrdiff_t)p * (ptrdiff_t)s;
  const float *w = k.w + r;
  float acc = __fmul_rn(w[0], __ldg(base + (size_t)p * s));
  if (p - r >= 0 && p + r < nd) {
    for (int j = 1; j <= r; j++)
      acc = __fadd_rn(acc, __fmul_rn(w[j], __fadd_rn(__ldg(base + (size_t)(p - j) * s), __ldg(base + (size_t)(p + j) * s))));
  } else {
    for (int j = 1; j <= r; j++)
      acc = __fadd_rn(acc, __fmul_rn(w[j], __fadd_rn(__ldg(base + (size_t)reflect(p - j, nd) * s),
                                                     __ldg(base + (size_t)reflect(p + j, nd) * s))));
  }
  out[i] = acc;
}

__global__ void deriv_kernel(const float *__restrict__ in, float *__restrict__ out, lt_grid g, int d, float inv)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int c[3];
  coords(g, i, c);
  const int p = c[d], nd = g.n[d];
  const size_t s = stride_of(g, d);
  const float *base = in + i - (ptrdiff_t)p * (ptrdiff_t)s;
  float m2 = __ldg(base + (size_t)reflect(p - 2, nd) * s), m1 = __ldg(base + (size_t)reflect(p - 1, nd) * s);
  float p1 = __ldg(base + (size_t)reflect(p + 1, nd) * s), p2 = __ldg(base + (size_t)reflect(p + 2, nd) * s);
  out[i] = __fmul_rn(__fadd_rn(__fsub_rn(m2, p2), __fmul_rn(8.0f, __fsub_rn(p1, m1))), inv);
}

__global__ void resample_kernel(const float *__restrict__ in, lt_grid gi, float *__restrict__ out, lt_grid go, float f0,
                                float f1, float f2, float scale)
{
  const size_t n = (size_t)go.n[0] * go.n[1] * go.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int c[3];
  coords(go, i, c);
  float p[3] = {__fsub_rn(__fmul_rn(__fadd_rn((float)c[0], 0.5f), f0), 0.5f),
                __fsub_rn(__fmul_rn(__fadd_rn((float)c[1], 0.5f), f1), 0.5f),
                __fsub_rn(__fmul_rn(__fadd_rn((float)c[2], 0.5f), f2), 0.5f)};
  out[i] = __fmul_rn(scale, sample(in, gi, p));
}

__global__ void warp_kernel(const float *__restrict__ in, fields3 f, float *__restrict__ out, lt_grid g, int dims, float ih0,
                            float ih1, float ih2)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int c[3];
  coords(g, i, c);
  const float ih[3] = {ih0, ih1, ih2};
  float p[3] = {(float)c[0], (float)c[1], (float)c[2]};
  for (int d = 0; d < dims; d++) p[d] = __fadd_rn(p[d], __fmul_rn(f.p[d][i], ih[d]));
  out[i] = sample(in, g, p);
}

/* avg = (s0 + w1) / 2, D_t = w1 - s0 */
__global__ void avg_kernel(const float *__restrict__ s0, const float *__restrict__ w1, float *__restrict__ avg,
                           float *__restrict__ dt, size_t n)
{
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  avg[i] = __fmul_rn(0.5f, __fadd_rn(s0[i], w1[i]));
  dt[i] = __fsub_rn(w1[i], s0[i]);
}

/* Zero every derivative where x + w0 leaves the grid (clg.c motion_tensor). */
__global__ void outside_kernel(fields3 D, fields3 f, lt_grid g, int dims, float *__restrict__ dt)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int c[3];
  coords(g, i, c);
  int out = 0;
  for (int d = 0; d < dims; d++) {
    float q = __fadd_rn((float)c[d], __fdiv_rn(f.p[d][i], g.h[d]));
    out |= !(q >= 0.0f && q <= (float)(g.n[d] - 1));
  }
  if (out) {
    for (int d = 0; d < dims; d++) D.p[d][i] = 0.0f;
    dt[i] = 0.0f;
  }
}

__global__ void product_kernel(const float *__restrict__ a, const float *__restrict__ b, float *__restrict__ out, size_t n)
{
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = __fmul_rn(a[i], b[i]);
}

/* One collective Jacobi sweep (clg.c jacobi_sweep), double as on the CPU. */
__global__ void jacobi_kernel(fields3 f, fields3 fn, fields3 f0, jfields J, lt_grid g, int dims, double wd0, double wd1,
                              double wd2, divcoef dc)
{
  const size_t n = (size_t)g.n[0] * g.n[1] * g.n[2];
  size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int pos[3];
  coords(g, i, pos);
  const double wd[3] = {wd0, wd1, wd2};
  double sw = 0, A[3][3], b[3] = {0, 0, 0}, w[3];
  for (int d = 0; d < dims; d++) {
    const size_t s = stride_of(g, d);
    if (pos[d] > 0) {
      sw = __dadd_rn(sw, wd[d]);
      for (int k = 0; k < dims; k++) b[k] = __dadd_rn(b[k], __dmul_rn(wd[d], (double)__ldg(f.p[k] + i - s)));
    }
    if (pos[d] < g.n[d] - 1) {
      sw = __dadd_rn(sw, wd[d]);
      for (int k = 0; k < dims; k++) b[k] = __dadd_rn(b[k], __dmul_rn(wd[d], (double)__ldg(f.p[k] + i + s)));
    }
  }
  for (int k = 0; k < dims; k++) {
    for (int e = 0; e < dims; e++) {
      double jke = (double)__ldg(J.p[jx(k, e, dims)] + i);
      A[k][e] = k == e ? __dadd_rn(jke, sw) : __dadd_rn(jke, 0.0);
      b[k] = __dadd_rn(b[k], __dmul_rn(jke, (double)__ldg(f0.p[e] + i)));
    }
    b[k] = __dsub_rn(b[k], (double)__ldg(J.p[jx(k, dims, dims)] + i));
  }
  if (dc.on) {
    int fw[3], bw[3];
    size_t st[3];
    for (int d = 0; d < dims; d++) {
      fw[d] = pos[d] < g.n[d] - 1;
      bw[d] = pos[d] > 0;
      st[d] = stride_of(g, d);
    }
    double u = 0;
    for (int e = 0; e < dims; e++)
      if (fw[e]) u = __dadd_rn(u, __dmul_rn((double)__ldg(f.p[e] + i + st[e]), dc.ih[e]));
    for (int k = 0; k < dims; k++) {
      A[k][k] = __dadd_rn(A[k][k], dc.tau);
      b[k] = __dadd_rn(b[k], __dmul_rn(dc.tau, (double)__ldg(f.p[k] + i)));
      for (int e = 0; e < dims; e++)
        if (fw[k] && fw[e]) A[k][e] = __dadd_rn(A[k][e], dc.bb[k][e]);
      if (bw[k]) {
        A[k][k] = __dadd_rn(A[k][k], dc.bb[k][k]);
        const size_t j = i - st[k];
        double t = -__dmul_rn((double)__ldg(f.p[k] + j), dc.ih[k]);
        for (int e = 0; e < dims; e++)
          if (e != k && fw[e])
            t = __dadd_rn(t, __dmul_rn(__dsub_rn((double)__ldg(f.p[e] + j + st[e]), (double)__ldg(f.p[e] + j)), dc.ih[e]));
        b[k] = __dsub_rn(b[k], __dmul_rn(__dmul_rn(dc.beta, dc.ih[k]), t));
      }
      if (fw[k]) b[k] = __dadd_rn(b[k], __dmul_rn(__dmul_rn(dc.beta, dc.ih[k]), u));
    }
  }
  if (dims == 2) {
    double det = __dsub_rn(__dmul_rn(A[0][0], A[1][1]), __dmul_rn(A[0][1], A[0][1]));
    w[0] = __ddiv_rn(__dsub_rn(__dmul_rn(b[0], A[1][1]), __dmul_rn(A[0][1], b[1])), det);
    w[1] = __ddiv_rn(__dsub_rn(__dmul_rn(A[0][0], b[1]), __dmul_rn(A[0][1], b[0])), det);
  } else {
    double c00 = __dsub_rn(__dmul_rn(A[1][1], A[2][2]), __dmul_rn(A[1][2], A[1][2]));
    double c01 = __dsub_rn(__dmul_rn(A[0][2], A[1][2]), __dmul_rn(A[0][1], A[2][2]));
    double c02 = __dsub_rn(__dmul_rn(A[0][1], A[1][2]), __dmul_rn(A[0][2], A[1][1]));
    double c11 = __dsub_rn(__dmul_rn(A[0][0], A[2][2]), __dmul_rn(A[0][2], A[0][2]));
    double c12 = __dsub_rn(__dmul_rn(A[0][1], A[0][2]), __dmul_rn(A[0][0], A[1][2]));
    double c22 = __dsub_rn(__dmul_rn(A[0][0], A[1][1]), __dmul_rn(A[0][1], A[0][1]));
    double det = __dadd_rn(__dadd_rn(__dmul_rn(A[0][0], c00), __dmul_rn(A[0][1], c01)), __dmul_rn(A[0][2], c02));
    w[0] = __ddiv_rn(__dadd_rn(__dadd_rn(__dmul_rn(c00, b[0]), __dmul_rn(c01, b[1])), __dmul_rn(c02, b[2])), det);
    w[1] = __ddiv_rn(__dadd_rn(__dadd_rn(__dmul_rn(c01, b[0]), __dmul_rn(c11, b[1])), __dmul_rn(c12, b[2])), det);
    w[2] = __ddiv_rn(__dadd_rn(__dadd_rn(__dmul_rn(c02, b[0]), __dmul_rn(c12, b[1])), __dmul_rn(c22, b[2])), det);
  }
  for (int k = 0; k < dims; k++) fn.p[k][i] = (float)w[k];
}

static inline unsigned blocks(size_t n) { return (unsigned)((n + TPB - 1) / TPB); }

static int launched(const char *what) { LT_CU(cudaGetLastError(), what); return 0; }

/* lt_grid_gauss: ping-pong so that the last pass lands in out. */
static int gauss(cu_clg *c, const float *in, float *out, float *tmp, const lt_grid *g, const lt_gauss_kernel k[])
{
  const size_t n = lt_grid_size(g);
  int axes[3], na = 0;
  for (int d = 0; d < 3; d++)
    if (g->n[d] > 1 && k[d].r > 0) axes[na++] = d;
  if (na == 0) {
    c->nlaunch++;
    LT_CU(cudaMemcpyAsync(out, in, n * sizeof(float), cudaMemcpyDeviceToDevice, c->st), "flow gauss copy");
    return 0;
  }
  const float *src = in;
  for (int i = 0; i < na; i++) {
    float *dst = (na - 1 - i) % 2 == 0 ? out : tmp;
    c->nlaunch++;
    conv_kernel<<<blocks(n), TPB, 0, c->st>>>(src, dst, *g, axes[i], k[axes[i]]);
    src = dst;
  }
  return launched("flow gauss");
}

static int resample(cu_clg *c, const float *in, const lt_grid *gi, float *out, const lt_grid *go, float scale)
{
  float f[3];
  for (int d = 0; d < 3; d++) f[d] = (float)gi->n[d] / (float)go->n[d];
  c->nlaunch++;
  resample_kernel<<<blocks(lt_grid_size(go)), TPB, 0, c->st>>>(in, *gi, out, *go, f[0], f[1], f[2], scale);
  return launched("flow resample");
}

static fields3 fields(float *const p[], int dims)
{
  fields3 f = {{NULL, NULL, NULL}};
  for (int d = 0; d < dims; d++) f.p[d] = p[d];
  return f;
}

static int motion_tensor(cu_clg *c, const lt_grid *g)
{
  const size_t n = lt_grid_size(g);
  const int dims = c->dims;
  int r;
  float ih[3];
  for (int d = 0; d < 3; d++) ih[d] = 1.0f / g->h[d];
  c->nlaunch++;
  warp_kernel<<<blocks(n), TPB, 0, c->st>>>(c->s1, fields(c->f, dims), c->w1, *g, dims, ih[0], ih[1], ih[2]);
  c->nlaunch++;
  avg_kernel<<<blocks(n), TPB, 0, c->st>>>(c->s0, c->w1, c->avg, c->D[dims], n);
  for (int d = 0; d < dims; d++) {
    if (g->n[d] < 2) {
      c->nlaunch++;
      LT_CU(cudaMemsetAsync(c->D[d], 0, n * sizeof(float), c->st), "flow deriv");
      continue;
    }
    c->nlaunch++;
    deriv_kernel<<<blocks(n), TPB, 0, c->st>>>(c->avg, c->D[d], *g, d, 1.0f / (12.0f * g->h[d]));
  }
  c->nlaunch++;
  outside_kernel<<<blocks(n), TPB, 0, c->st>>>(fields(c->D, dims), fields(c->f, dims), *g, dims, c->D[dims]);
  if ((r = launched("flow motion tensor"))) return r;
  for (int a = 0; a <= dims; a++)
    for (int b = a; b <= dims; b++) {
      c->nlaunch++;
      product_kernel<<<blocks(n), TPB, 0, c->st>>>(c->D[a], c->D[b], c->tmp, n);
      if ((r = gauss(c, c->tmp, c->J[jx_host(a, b, dims)], c->tmp2, g, c->kr))) return r;
    }
  return launched("flow tensor products");
}

static int solve_level(cu_clg *c, const lt_grid *g)
{
  const size_t n = lt_grid_size(g);
  const int dims = c->dims;
  double wd[3] = {0, 0, 0};
  for (int d = 0; d < dims; d++) wd[d] = (double)c->p.alpha / ((double)g->h[d] * g->h[d]);
  jfields J;
  for (int i = 0; i < NJ; i++) J.p[i] = c->J[i];
  divcoef dc;
  memset(&dc, 0, sizeof dc);
  lt_flow_div_coefs(&c->p, g, dc.ih, dc.bb);
  for (int d = 0; d < dims; d++) dc.tau += dc.bb[d][d];
  dc.tau *= 2.0;
  dc.beta = (double)c->p.beta;
  dc.on = c->p.beta > 0;
  int r;
  for (int k = 0; k < c->p.warps; k++) {
    if ((r = motion_tensor(c, g))) return r;
    for (int d = 0; d < dims; d++) {
      c->nlaunch++;
      LT_CU(cudaMemcpyAsync(c->f0[d], c->f[d], n * sizeof(float), cudaMemcpyDeviceToDevice, c->st), "flow copy");
    }
    for (int it = 0; it < c->p.iterations; it++) {
      c->nlaunch++;
      jacobi_kernel<<<blocks(n), TPB, 0, c->st>>>(fields(c->f, dims), fields(c->fn, dims), fields(c->f0, dims), J, *g,
                                                  dims, wd[0], wd[1], wd[2], dc);
      for (int d = 0; d < dims; d++) {
        float *t = c->f[d];
        c->f[d] = c->fn[d];
        c->fn[d] = t;
      }
    }
    if ((r = launched("flow jacobi"))) return r;
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
  for (int l = 1; l < c->nlev; l++) {
    const float *fine[2] = {l == 1 ? c->in0 : c->pyr0[l - 1], l == 1 ? c->in1 : c->pyr1[l - 1]};
    float *coarse[2] = {c->pyr0[l], c->pyr1[l]};
    for (int k = 0; k < 2; k++) {
      if ((r = gauss(c, fine[k], c->tmp2, c->tmp, &c->lev[l - 1], c->ka))) return r;
      if ((r = resample(c, c->tmp2, &c->lev[l - 1], coarse[k], &c->lev[l], 1.0f))) return r;
    }
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
      for (int d = 0; d < c->dims; d++) {
        if ((r = resample(c, c->f[d], &c->lev[l + 1], c->fn[d], g, 1.0f))) return r;
        float *t = c->f[d];
        c->f[d] = c->fn[d];
        c->fn[d] = t;
      }
    }
    if ((r = gauss(c, l ? c->pyr0[l] : c->in0, c->s0, c->tmp, g, c->ks))) return r;
    if ((r = gauss(c, l ? c->pyr1[l] : c->in1, c->s1, c->tmp, g, c->ks))) return r;
    if ((r = solve_level(c, g))) return r;
  }
  for (int d = 0; d < c->dims; d++) c->f_final[d] = c->f[d];
  return 0;
}

/* One pair: upload, the captured graph (captured at the first pair: the
 * buffers never move and every pair starts from the same ping-pong order),
 * download. LT_FLOW_NO_GRAPH=1 launches the kernels one by one instead. */
static int cu_compute_grid(cu_clg *c, const float *I0, const float *I1, float *const flow[])
{
  const size_t n0 = lt_grid_size(&c->lev[0]);
  int r;
  LT_CU(cudaMemcpyAsync(c->in0, I0, n0 * sizeof(float), cudaMemcpyHostToDevice, c->st), "flow upload");
  LT_CU(cudaMemcpyAsync(c->in1, I1, n0 * sizeof(float), cudaMemcpyHostToDevice, c->st), "flow upload");
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
  size_t total = n * (8 + (size_t)(c->dims + 1) + nj + 3 * (size_t)c->dims);
  for (int l = 1; l < c->nlev; l++) total += 2 * lt_grid_size(&c->lev[l]);
  cudaError_t e = cudaStreamCreateWithFlags(&c->st, cudaStreamNonBlocking);
  if (e == cudaSuccess) e = cudaMalloc((void **)&c->arena, total * sizeof(float));
  if (e != cudaSuccess) {
    r = lt_cuda_fail(e, "flow create (GPU memory)");
    cu_destroy(c);
    return r;
  }
  float *a = c->arena;
  float **fixed[] = {&c->in0, &c->in1, &c->s0, &c->s1, &c->w1, &c->avg, &c->tmp, &c->tmp2};
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
  return cu_compute_grid((cu_clg *)ctx, I0, I1, flow);
}

static int cu_compute_grid_v(void *ctx, const float *I0, const float *I1, float *const flow[])
{
  return cu_compute_grid((cu_clg *)ctx, I0, I1, flow);
}

static long cu_launches(void *ctx) { return ctx ? ((cu_clg *)ctx)->nlaunch : 0; }

extern "C" const lt_flow_backend lt_flow_backend_cuda = {"cuda",         cu_create,         cu_destroy, cu_compute,
                                                         cu_create_grid, cu_compute_grid_v, cu_launches};

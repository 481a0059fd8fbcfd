/* corr_kernel.cuh - the per-frame kernel of the tumour mode (seeds/001
 * section V: template tiling, problem-specific compilation), written once
 * and used twice: compiled by nvcc into the binary as the generic kernel
 * (sizes run-time values except the band height RB and the shifts per
 * thread DYN), and handed as text to NVRTC, which compiles it with the
 * template, tile and block sizes as compile-time constants.
 *
 * How the text is shared: this file is a single macro argument,
 * LT_TUMOR_KERNEL_CODE( ... ). corr.cu includes it once with the macro
 * expanding to the code itself and once with it stringising the code
 * (#__VA_ARGS__). Hence: no preprocessor directives, no string literals and
 * no macros inside (unrolling is asked for with the _Pragma operator, whose
 * string survives the stringising); comments are fine (removed before macro
 * processing).
 *
 * r needs, per template k and shift, S1 = sum (B - 128), S2 = sum (B - 128)^2
 * over the window and SC = sum Tc (B - 128). Block (k, t, sb): template k,
 * tile t (a band of RB template rows times a chunk of at most CWC columns),
 * shift block sb (SXB dx times NG*DYN dy). The block stages the tile of Tc
 * and the frame region under all its shifts in shared memory.
 * SC: thread (tx, tg, ts) takes dx = tx, the DYN consecutive dy of group tg
 * and the column stripe ts of the chunk; for each column it walks the
 * RB + DYN - 1 region rows once, keeping the last DYN template values in
 * registers, so one region load feeds DYN FMAs (float). S1, S2: box sums,
 * separable: the region's row sums over the chunk's width for every dx, then
 * their sums over the band's rows for every dy (double: exact for 8-bit
 * frames). The stripes are added in order in double and the tile's partials
 * written to part[((k*nt_max + t)*3 + q)*npos + pos], q = S1, S2, SC.
 * The last block of template k to finish (a counter per template) adds its
 * tiles in order, forms r (the maps), finds the peak with its sub-pixel
 * offset as peak.c does and writes it to pk[k]: one launch per frame. */
LT_TUMOR_KERNEL_CODE(

/* Template k's per-frame result (downloaded instead of the maps). */
struct lt_tk_pk {
  int dy, dx, found, pad;
  float score, pad2;
  double dy_sub, dx_sub;
};

struct lt_tk_params {
  const float *roi;        /* search-region union, roi_w x roi_h, row-major, B - 128 */
  const unsigned char *roi8; /* or, when not null, the same region as 8-bit bytes B */
  int roi_x, roi_y, roi_w, roi_h;
  const float *tc;         /* centred templates (T - mean T), concatenated */
  const long long *tc_off; /* per template: offset into tc */
  const int *tdim;         /* per template: w, h, x, y */
  double *part;            /* partial sums per template, tile, quantity and shift */
  const double *sum_tc, *ta; /* per template: sum Tc, sum Tc^2 */
  float *scores;           /* the maps */
  struct lt_tk_pk *pk;     /* the peaks */
  int *done;               /* per template: blocks done this frame (back to 0 after) */
  int K, V, H, nx, ny, npos, nt_max, nsb, nsbx;
  int sxb, ng, ns, cwc;    /* run-time block sizes (generic kernel) */
};

/* Pixel (a, b) of the region as B - 128 (bytes converted here: the same
 * float); 0 outside the region. */
__device__ __forceinline__ float lt_tk_px(const lt_tk_params &p, int a, int b)
{
  if (a < 0 || b < 0 || a >= p.roi_h || b >= p.roi_w) return 0.0f;
  const long long i = (long long)a * p.roi_w + b;
  return p.roi8 ? (float)p.roi8[i] - 128.0f : p.roi[i];
}

/* acc[r] += sum over ncols columns and RB rows of T[i][j] R[i + r][j]:
 * tb: template rows (stride ts), rg: region rows from the thread's first dy
 * (stride rst). Each region value is loaded once per column and used for the
 * DYN shifts it falls under (all bounds compile-time after unrolling). */
template <int RB, int DYN>
__device__ __forceinline__ void lt_tk_cross(const float *tb, int ts, const float *rg, int rst, int ncols, float *acc)
{
  for (int j = 0; j < ncols; j++) {
    float tw[DYN];
_Pragma("unroll")
    for (int r = 0; r < DYN; r++) tw[r] = 0.0f;
_Pragma("unroll")
    for (int q = 0; q < RB + DYN - 1; q++) {
_Pragma("unroll")
      for (int r = DYN - 1; r > 0; r--) tw[r] = tw[r - 1];
      if (q < RB) tw[0] = tb[q * ts + j];
      const float b = rg[q * rst + j];
_Pragma("unroll")
      for (int r = 0; r < DYN; r++)
        if (q - r >= 0 && q - r < RB) acc[r] = __fmaf_rn(tw[r], b, acc[r]);
    }
  }
}

/* peak.c's vertex() */
__device__ __forceinline__ double lt_tk_vertex(double sm, double s0, double sp)
{
  const double curv = sm - 2.0 * s0 + sp;
  if (!(curv < 0.0)) return 0.0;
  const double d = 0.5 * (sm - sp) / curv;
  return d > 0.5 ? 0.5 : d < -0.5 ? -0.5 : d;
}

/* 1 when template k's window at shift (dy, dx) is inside the region (the
 * frame) and the shift in range */
__device__ __forceinline__ bool lt_tk_inside(const lt_tk_params &p, int k, int w, int h, int dy, int dx)
{
  const int wr = p.tdim[4 * k + 3] + dy - p.roi_y, wc = p.tdim[4 * k + 2] + dx - p.roi_x;
  return dy >= -p.V && dy <= p.V && dx >= -p.H && dx <= p.H && wr >= 0 && wc >= 0 && wr + h <= p.roi_h &&
         wc + w <= p.roi_w;
}

/* (v, i) becomes the better of itself and (v2, i2): higher score, then lower
 * index (the first in scan order); i < 0: none. A total order, so any merge
 * order gives the same result. */
__device__ __forceinline__ void lt_tk_better(float &v, int &i, float v2, int i2)
{
  if (i2 >= 0 && (i < 0 || v2 > v || (v2 == v && i2 < i))) {
    v = v2;
    i = i2;
  }
}

/* Template k's maps and peak from its tiles' partials (the block that
 * finished last); fv, fi: shared scratch of blockDim.x entries. */
__device__ void lt_tk_finish(const lt_tk_params &p, int k, int w, int h, int ntiles, float *fv, int *fi)
{
  const int nthr = blockDim.x;
  float *map = p.scores + (long long)k * p.npos;
  const double *part = p.part + (long long)k * p.nt_max * 3 * p.npos;
  const double n = (double)w * h, flat = 1e-6 * n; /* LT_TUMOR_FLAT_VAR */
  const double ta = p.ta[k], stc = p.sum_tc[k];
  float best = -2.0f;
  int at = -1;
  for (int pos = threadIdx.x; pos < p.npos; pos += nthr) {
    const int dy = pos / p.nx - p.V, dx = pos % p.nx - p.H;
    float v = -1.0f; /* LT_TUMOR_OUTSIDE */
    if (lt_tk_inside(p, k, w, h, dy, dx)) {
      double s1 = 0.0, s2 = 0.0, sc = 0.0;
      for (int t = 0; t < ntiles; t++) { /* in order: deterministic */
        const double *q = part + (long long)t * 3 * p.npos + pos;
        s1 += __ldcg(q);
        s2 += __ldcg(q + p.npos);
        sc += __ldcg(q + 2 * p.npos);
      }
      const double bb = s2 - s1 * s1 / n, cross = sc - (s1 / n) * stc;
      double r = 0.0;
      if (ta > flat && bb > flat) {
        r = cross / sqrt(ta * bb);
        r = r > 1.0 ? 1.0 : r < -1.0 ? -1.0 : r;
      }
      v = (float)r;
      lt_tk_better(best, at, v, pos);
    }
    map[pos] = v;
  }
  fv[threadIdx.x] = best;
  fi[threadIdx.x] = at;
  __syncthreads();
  int half = 1;
  while (half < nthr) half *= 2;
  for (half /= 2; half > 0; half /= 2) {
    if ((int)threadIdx.x < half && (int)threadIdx.x + half < nthr) {
      float v = fv[threadIdx.x];
      int i = fi[threadIdx.x];
      lt_tk_better(v, i, fv[threadIdx.x + half], fi[threadIdx.x + half]);
      fv[threadIdx.x] = v;
      fi[threadIdx.x] = i;
    }
    __syncthreads();
  }
  const int b = fi[0];
  const int dy = b >= 0 ? b / p.nx - p.V : 0, dx = b >= 0 ? b % p.nx - p.H : 0;
  /* the peak's neighbours left, right, up, down (one thread each): used when
   * in the shift range with the window inside */
  if (threadIdx.x < 4 && b >= 0) {
    const int u = threadIdx.x;
    const int ny = dy + (u == 2 ? -1 : u == 3 ? 1 : 0), nx = dx + (u == 0 ? -1 : u == 1 ? 1 : 0);
    const bool ok = lt_tk_inside(p, k, w, h, ny, nx);
    fi[nthr - 4 + u] = ok;
    fv[nthr - 4 + u] = ok ? map[(ny + p.V) * p.nx + (nx + p.H)] : 0.0f;
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  lt_tk_pk o;
  o.pad = 0;
  o.pad2 = 0.0f;
  o.found = b >= 0;
  o.dy = dy;
  o.dx = dx;
  o.score = b >= 0 ? fv[0] : -1.0f;
  o.dy_sub = dy;
  o.dx_sub = dx;
  if (b >= 0) {
    const float *nv = fv + nthr - 4;
    const int *nk = fi + nthr - 4;
    if (nk[0] && nk[1]) o.dx_sub += lt_tk_vertex(nv[0], o.score, nv[1]);
    if (nk[2] && nk[3]) o.dy_sub += lt_tk_vertex(nv[2], o.score, nv[3]);
  }
  p.pk[k] = o;
  p.done[k] = 0; /* every block of k has counted: ready for the next frame */
}

/* dst[e] = frame region pixel (ry + e / rw, rx + e % rw) or template value
 * (row e / rw, column e % rw of tc, rows >= rows zero) for e < n, by nthr
 * threads with 8 loads in flight each. */
__device__ __forceinline__ void lt_tk_stage(const lt_tk_params &p, float *dst, int n, int rw, int ry, int rx,
                                            const float *tc, long long tstride, int rows, int nthr)
{
  for (int e0 = 0; e0 < n; e0 += 8 * nthr) {
    float v[8];
_Pragma("unroll")
    for (int u = 0; u < 8; u++) {
      const int e = e0 + u * nthr + (int)threadIdx.x, i = e / rw, j = e - (e / rw) * rw;
      v[u] = e >= n ? 0.0f : tc ? (i < rows ? tc[i * tstride + j] : 0.0f) : lt_tk_px(p, ry + i, rx + j);
    }
_Pragma("unroll")
    for (int u = 0; u < 8; u++) {
      const int e = e0 + u * nthr + (int)threadIdx.x;
      if (e < n) dst[e] = v[u];
    }
  }
}

/* One block. TW, TH: template size (0: per template, run time); RB: band
 * rows; DYN: dy per thread; SXB, NG, NS, CWC: dx per block, dy groups,
 * column stripes, chunk width (0: run time). */
template <int TW, int TH, int RB, int DYN, int SXB, int NG, int NS, int CWC>
__device__ void lt_tk_block(const lt_tk_params &p, float *smem)
{
  const int sxb = SXB > 0 ? SXB : p.sxb, ng = NG > 0 ? NG : p.ng, ns = NS > 0 ? NS : p.ns;
  const int cwc = CWC > 0 ? CWC : p.cwc;
  const int c = blockIdx.x, sb = c % p.nsb, t = (c / p.nsb) % p.nt_max, k = c / (p.nsb * p.nt_max);
  const int w = TW > 0 ? TW : p.tdim[4 * k], h = TH > 0 ? TH : p.tdim[4 * k + 1];
  const int nchunk = (w + cwc - 1) / cwc, nband = (h + RB - 1) / RB;
  if (t >= nchunk * nband) return; /* whole block: this template has fewer tiles */
  const int i0 = (t / nchunk) * RB, j0 = (t % nchunk) * cwc;
  const int cw = min(cwc, w - j0), rows = min(RB, h - i0);
  const int sbx = sb % p.nsbx, sby = sb / p.nsbx;
  const int shy = ng * DYN;
  const int rh = RB + shy - 1, rw = cw + sxb - 1; /* staged region */
  /* region origin in the ROI: first dx / dy of the shift block, tile origin */
  const int ry = p.tdim[4 * k + 3] - p.V - p.roi_y + sby * shy + i0;
  const int rx = p.tdim[4 * k + 2] - p.H - p.roi_x + sbx * sxb + j0;
  float *tt = smem, *reg = smem + RB * cw;
  const int nthr = blockDim.x;
  lt_tk_stage(p, tt, RB * cw, cw, 0, 0, p.tc + p.tc_off[k] + (long long)i0 * w + j0, w, rows, nthr);
  lt_tk_stage(p, reg, rh * rw, rw, ry, rx, (const float *)0, 0, 0, nthr);
  __syncthreads();
  const int tx = threadIdx.x % sxb, tg = (threadIdx.x / sxb) % ng, ts = threadIdx.x / (sxb * ng);
  const int cs = (cw + ns - 1) / ns, c0 = min(cw, ts * cs), c1 = min(cw, c0 + cs);
  float acc[DYN];
_Pragma("unroll")
  for (int r = 0; r < DYN; r++) acc[r] = 0.0f;
  lt_tk_cross<RB, DYN>(tt + c0, cw, reg + tg * DYN * rw + c0 + tx, rw, c1 - c0, acc);
  /* row sums of the region over the chunk's width, for every dx (double),
   * after the stage and the stripes' sums in shared memory */
  const int nth = blockDim.x, nrs = rows + shy - 1;
  int off = RB * cwc + (RB + shy - 1) * (cwc + sxb - 1);
  off = off > nth * DYN ? off : nth * DYN;
  double *rsum = (double *)(smem + off + (off & 1));
  for (int e = threadIdx.x; e < nrs * sxb; e += nth) {
    const float *rr = reg + (e / sxb) * rw + e % sxb;
    double a0 = 0.0, a1 = 0.0, b0 = 0.0, b1 = 0.0;
    int j = 0;
    for (; j + 1 < cw; j += 2) {
      const double u = rr[j], v = rr[j + 1];
      a0 += u;
      b0 += u * u;
      a1 += v;
      b1 += v * v;
    }
    if (j < cw) {
      const double u = rr[j];
      a0 += u;
      b0 += u * u;
    }
    rsum[2 * e] = a0 + a1;
    rsum[2 * e + 1] = b0 + b1;
  }
  __syncthreads(); /* the region is read: the stripes' sums go to its start */
  float *red = smem; /* [ts][tg*DYN + r][tx]; the warp-rounding threads (ts >= ns) have nothing */
  if (ts < ns)
_Pragma("unroll")
    for (int r = 0; r < DYN; r++) red[(ts * shy + tg * DYN + r) * sxb + tx] = acc[r];
  __syncthreads();
  double *out = p.part + ((long long)k * p.nt_max + t) * 3 * p.npos;
  for (int e = threadIdx.x; e < shy * sxb; e += nth) {
    const int iy = sby * shy + e / sxb, ix = sbx * sxb + e % sxb;
    if (iy >= p.ny || ix >= p.nx) continue;
    double s1 = 0.0, s2 = 0.0, sc = 0.0;
    for (int u = 0; u < ns; u++) sc += (double)red[u * shy * sxb + e];
    for (int i = 0; i < rows; i++) {
      s1 += rsum[2 * (e + i * sxb)];
      s2 += rsum[2 * (e + i * sxb) + 1];
    }
    const int pos = iy * p.nx + ix;
    out[pos] = s1;
    out[p.npos + pos] = s2;
    out[2 * p.npos + pos] = sc;
  }
  /* the last of template k's blocks finishes it */
  __threadfence();
  __syncthreads();
  int *last = (int *)(smem + 2 * nth); /* past lt_tk_finish's scratch */
  const int nblk = nchunk * nband * p.nsb;
  if (threadIdx.x == 0) last[0] = atomicAdd(&p.done[k], 1) == nblk - 1;
  __syncthreads();
  if (!last[0]) return;
  __threadfence();
  lt_tk_finish(p, k, w, h, nchunk * nband, smem, (int *)(smem + nth));
}

/* The kernel body (the entry points: corr.cu's generic kernel, nvrtc.cu's
 * specialised one). */
template <int TW, int TH, int RB, int DYN, int SXB, int NG, int NS, int CWC>
__device__ void lt_tk_frame(const lt_tk_params &p, float *smem)
{
  lt_tk_block<TW, TH, RB, DYN, SXB, NG, NS, CWC>(p, smem);
}

)

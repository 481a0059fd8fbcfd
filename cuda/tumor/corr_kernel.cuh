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
 * over the window and SC = sum Tc (B - 128). One launch computes all three
 * in two kinds of blocks:
 *
 * Window blocks (blockIdx.x < K; block k: template k). S1 and S2 are box
 * sums, separable: row sums over the template's width, sliding along dx
 * (rs, global scratch, double), then column sums over its height for every
 * shift (double; exact for 8-bit frames, whose B - 128 are small integers).
 * Written to wsum[(k*2 + q)*npos + pos].
 *
 * Cross blocks (the others). Block (k, t, sb): template k, tile t (a band of
 * RB template rows times a chunk of at most CWC columns), shift block sb (SXB
 * dx times NG*DYN dy). The block stages the tile of Tc and the frame region
 * under all its shifts in shared memory. Thread (tx, tg, ts) takes dx = tx,
 * the DYN consecutive dy of group tg and the column stripe ts of the chunk;
 * for each column it walks the RB + DYN - 1 region rows once, keeping the
 * last DYN template values in registers, so one region load feeds DYN FMAs
 * (float). The stripes are added in order in double and written as the
 * tile's partial part[(k*nt_max + t)*npos + pos]; lt_tumor_finish (corr.cu)
 * adds the tiles in order, forms r and finds each template's peak. */
LT_TUMOR_KERNEL_CODE(

struct lt_tk_params {
  const float *roi;        /* search-region union, roi_w x roi_h, row-major, B - 128 */
  const unsigned char *roi8; /* or, when not null, the same region as 8-bit bytes B */
  int roi_x, roi_y, roi_w, roi_h;
  const float *tc;         /* centred templates (T - mean T), concatenated */
  const long long *tc_off; /* per template: offset into tc */
  const int *tdim;         /* per template: w, h, x, y */
  const long long *rs_off; /* per template: offset into rs */
  double *rs;              /* window blocks' row sums, (h + ny - 1) x nx x 2 per template */
  double *wsum;            /* S1, S2 per template and shift */
  double *part;            /* cross partial sums per template, tile and shift */
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

/* Window block: S1 and S2 of template k at every shift. */
__device__ void lt_tk_window(const lt_tk_params &p, int k, int w, int h)
{
  const int x = p.tdim[4 * k + 2] - p.H - p.roi_x, y = p.tdim[4 * k + 3] - p.V - p.roi_y;
  const int nrows = h + p.ny - 1;
  double *rs = p.rs + p.rs_off[k];
  for (int q = threadIdx.x; q < nrows; q += blockDim.x) {
    double a0 = 0.0, a1 = 0.0, b0 = 0.0, b1 = 0.0;
    int j = 0;
    for (; j + 1 < w; j += 2) {
      const double u = lt_tk_px(p, y + q, x + j), v = lt_tk_px(p, y + q, x + j + 1);
      a0 += u;
      b0 += u * u;
      a1 += v;
      b1 += v * v;
    }
    if (j < w) {
      const double u = lt_tk_px(p, y + q, x + j);
      a0 += u;
      b0 += u * u;
    }
    double s1 = a0 + a1, s2 = b0 + b1;
    double *o = rs + (long long)q * p.nx * 2;
    for (int ix = 0; ix < p.nx; ix++) {
      o[2 * ix] = s1;
      o[2 * ix + 1] = s2;
      if (ix + 1 < p.nx) {
        const double add = lt_tk_px(p, y + q, x + ix + w), sub = lt_tk_px(p, y + q, x + ix);
        s1 += add - sub;
        s2 += add * add - sub * sub;
      }
    }
  }
  __syncthreads(); /* the block's global writes are visible to it after this */
  for (int pos = threadIdx.x; pos < p.npos; pos += blockDim.x) {
    const int iy = pos / p.nx, ix = pos % p.nx;
    const double *r = rs + ((long long)iy * p.nx + ix) * 2;
    const long long st = (long long)p.nx * 2;
    double a0 = 0.0, a1 = 0.0, b0 = 0.0, b1 = 0.0;
    int i = 0;
    for (; i + 1 < h; i += 2) {
      a0 += r[i * st];
      b0 += r[i * st + 1];
      a1 += r[(i + 1) * st];
      b1 += r[(i + 1) * st + 1];
    }
    if (i < h) {
      a0 += r[i * st];
      b0 += r[i * st + 1];
    }
    p.wsum[(long long)k * 2 * p.npos + pos] = a0 + a1;
    p.wsum[((long long)k * 2 + 1) * p.npos + pos] = b0 + b1;
  }
}

/* acc[r] += sum over ncols columns and RB rows of T[i][j] * R[i + r][j]:
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

/* One cross block. TW, TH: template size (0: per template, run time); RB:
 * band rows; DYN: dy per thread; SXB, NG, NS, CWC: dx per block, dy groups,
 * column stripes, chunk width (0: run time). */
template <int TW, int TH, int RB, int DYN, int SXB, int NG, int NS, int CWC>
__device__ void lt_tk_cross_block(const lt_tk_params &p, float *smem, int c)
{
  const int sxb = SXB > 0 ? SXB : p.sxb, ng = NG > 0 ? NG : p.ng, ns = NS > 0 ? NS : p.ns;
  const int cwc = CWC > 0 ? CWC : p.cwc;
  const int sb = c % p.nsb, t = (c / p.nsb) % p.nt_max, k = c / (p.nsb * p.nt_max);
  const int w = TW > 0 ? TW : p.tdim[4 * k], h = TH > 0 ? TH : p.tdim[4 * k + 1];
  const int nchunk = (w + cwc - 1) / cwc, nband = (h + RB - 1) / RB;
  if (t >= nchunk * nband) return; /* whole block: this template has fewer tiles */
  const int i0 = (t / nchunk) * RB, j0 = (t % nchunk) * cwc;
  const int cw = min(cwc, w - j0);
  const int sbx = sb % p.nsbx, sby = sb / p.nsbx;
  const int shy = ng * DYN;
  const int rh = RB + shy - 1, rw = cw + sxb - 1; /* staged region */
  /* region origin in the ROI: first dx / dy of the shift block, tile origin */
  const int ry = p.tdim[4 * k + 3] - p.V - p.roi_y + sby * shy + i0;
  const int rx = p.tdim[4 * k + 2] - p.H - p.roi_x + sbx * sxb + j0;
  float *tt = smem, *reg = smem + RB * cw;
  const float *tc = p.tc + p.tc_off[k];
  const int nthr = sxb * ng * ns;
  for (int e = threadIdx.x; e < RB * cw; e += nthr) {
    const int i = e / cw, j = e - (e / cw) * cw;
    tt[e] = i0 + i < h ? tc[(long long)(i0 + i) * w + j0 + j] : 0.0f;
  }
  for (int e = threadIdx.x; e < rh * rw; e += nthr) {
    const int i = e / rw, j = e - (e / rw) * rw;
    reg[e] = lt_tk_px(p, ry + i, rx + j);
  }
  __syncthreads();
  const int tx = threadIdx.x % sxb, tg = (threadIdx.x / sxb) % ng, ts = threadIdx.x / (sxb * ng);
  const int cs = (cw + ns - 1) / ns, c0 = ts * cs, c1 = min(cw, c0 + cs);
  float acc[DYN];
_Pragma("unroll")
  for (int r = 0; r < DYN; r++) acc[r] = 0.0f;
  if (c1 > c0) lt_tk_cross<RB, DYN>(tt + c0, cw, reg + tg * DYN * rw + c0 + tx, rw, c1 - c0, acc);
  __syncthreads(); /* the stripes' sums go where the region was */
  float *red = smem; /* [ts][tg*DYN + r][tx] */
_Pragma("unroll")
  for (int r = 0; r < DYN; r++) red[(ts * shy + tg * DYN + r) * sxb + tx] = acc[r];
  __syncthreads();
  double *out = p.part + ((long long)k * p.nt_max + t) * p.npos;
  for (int e = threadIdx.x; e < shy * sxb; e += nthr) {
    const int iy = sby * shy + e / sxb, ix = sbx * sxb + e % sxb;
    if (iy >= p.ny || ix >= p.nx) continue;
    double s = 0.0;
    for (int u = 0; u < ns; u++) s += (double)red[u * shy * sxb + e];
    out[iy * p.nx + ix] = s;
  }
}

/* The kernel body: window blocks first (they run longest), then cross blocks. */
template <int TW, int TH, int RB, int DYN, int SXB, int NG, int NS, int CWC>
__device__ void lt_tk_frame(const lt_tk_params &p, float *smem)
{
  const int b = blockIdx.x;
  if (b < p.K) {
    lt_tk_window(p, b, TW > 0 ? TW : p.tdim[4 * b], TH > 0 ? TH : p.tdim[4 * b + 1]);
    return;
  }
  lt_tk_cross_block<TW, TH, RB, DYN, SXB, NG, NS, CWC>(p, smem, b - p.K);
}

)

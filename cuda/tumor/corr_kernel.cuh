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
 * and the frame region under all its shifts in shared memory. Thread
 * (tx, tg, ts) takes dx = tx, the DYN consecutive dy of group tg and the
 * column stripe ts of the chunk; for each column it walks the RB + DYN - 1
 * region rows once, keeping the last DYN template values in registers, so one
 * region load feeds DYN shifts. Per shift it sums in float Tc B and, relative
 * to a centre c (a pixel inside all its DYN windows: a flat window gives
 * exact zeros), d = B - c and d^2; plan() keeps a thread's pixels per tile
 * at most 256, so for 8-bit frames (|d| <= 255) these sums are exact. The
 * stripes are combined in order in double (S1 = sum d + n c,
 * S2 = sum d^2 + 2 c sum d + n c^2) and written as the tile's partials
 * part[((k*nt_max + t)*3 + q)*npos + pos], q = S1, S2, SC; lt_tumor_finish
 * (corr.cu) adds the tiles in order, forms r and finds each template's peak. */
LT_TUMOR_KERNEL_CODE(

struct lt_tk_params {
  const float *roi;        /* search-region union, roi_w x roi_h, row-major, B - 128 */
  const unsigned char *roi8; /* or, when not null, the same region as 8-bit bytes B */
  int roi_x, roi_y, roi_w, roi_h;
  const float *tc;         /* centred templates (T - mean T), concatenated */
  const long long *tc_off; /* per template: offset into tc */
  const int *tdim;         /* per template: w, h, x, y */
  double *part;            /* partial sums per template, tile, quantity and shift */
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

/* acc[r] += sum over ncols columns and RB rows of T[i][j] R[i + r][j],
 * a1[r] += sum of d = R[i + r][j] - c and a2[r] += sum of d^2 over the
 * first rows rows (FULL: rows == RB): tb: template rows (stride ts), rg:
 * region rows from the thread's first dy (stride rst). Each region value is
 * loaded once per column and used for the DYN shifts it falls under (all
 * bounds compile-time after unrolling, but rows when not FULL). */
template <int RB, int DYN, bool FULL>
__device__ __forceinline__ void lt_tk_cross(const float *tb, int ts, const float *rg, int rst, int ncols, int rows,
                                            float c, float *acc, float *a1, float *a2)
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
      const float b = rg[q * rst + j], d = b - c;
_Pragma("unroll")
      for (int r = 0; r < DYN; r++)
        if (q - r >= 0 && q - r < RB) {
          acc[r] = __fmaf_rn(tw[r], b, acc[r]);
          if (FULL || q - r < rows) {
            a1[r] += d;
            a2[r] = __fmaf_rn(d, d, a2[r]);
          }
        }
    }
  }
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
  const int nthr = sxb * ng * ns;
  lt_tk_stage(p, tt, RB * cw, cw, 0, 0, p.tc + p.tc_off[k] + (long long)i0 * w + j0, w, rows, nthr);
  lt_tk_stage(p, reg, rh * rw, rw, ry, rx, (const float *)0, 0, 0, nthr);
  __syncthreads();
  const int tx = threadIdx.x % sxb, tg = (threadIdx.x / sxb) % ng, ts = threadIdx.x / (sxb * ng);
  const int cs = (cw + ns - 1) / ns, c0 = min(cw, ts * cs), c1 = min(cw, c0 + cs);
  const float *r0 = reg + tg * DYN * rw + c0 + tx;
  /* the centre: row min(DYN, rows) - 1 of the thread's region lies in all
   * its windows when rows >= DYN */
  const float ctr = r0[(min(DYN, rows) - 1) * rw];
  float acc[DYN], a1[DYN], a2[DYN];
_Pragma("unroll")
  for (int r = 0; r < DYN; r++) acc[r] = a1[r] = a2[r] = 0.0f;
  if (rows == RB)
    lt_tk_cross<RB, DYN, true>(tt + c0, cw, r0, rw, c1 - c0, rows, ctr, acc, a1, a2);
  else
    lt_tk_cross<RB, DYN, false>(tt + c0, cw, r0, rw, c1 - c0, rows, ctr, acc, a1, a2);
  __syncthreads(); /* the stripes' sums go where the tile was */
  float *red = smem; /* [q][ts][tg*DYN + r][tx], then the centres [ts][tg][tx] */
  const int nred = ns * shy * sxb;
  const int at = (ts * shy + tg * DYN) * sxb + tx;
_Pragma("unroll")
  for (int r = 0; r < DYN; r++) {
    red[at + r * sxb] = acc[r];
    red[nred + at + r * sxb] = a1[r];
    red[2 * nred + at + r * sxb] = a2[r];
  }
  red[3 * nred + threadIdx.x] = ctr;
  __syncthreads();
  double *out = p.part + ((long long)k * p.nt_max + t) * 3 * p.npos;
  for (int e = threadIdx.x; e < shy * sxb; e += nthr) {
    const int iy = sby * shy + e / sxb, ix = sbx * sxb + e % sxb;
    if (iy >= p.ny || ix >= p.nx) continue;
    const int ce = (e / sxb / DYN) * sxb + e % sxb; /* the centre of (tg, tx) */
    double s1 = 0.0, s2 = 0.0, sc = 0.0;
    for (int u = 0; u < ns; u++) {
      const double a = red[nred + u * shy * sxb + e], cc = red[3 * nred + u * ng * sxb + ce];
      const double n = (double)rows * (min(cw, min(cw, u * cs) + cs) - min(cw, u * cs));
      sc += (double)red[u * shy * sxb + e];
      s1 += a + n * cc;
      s2 += (double)red[2 * nred + u * shy * sxb + e] + 2.0 * cc * a + n * cc * cc;
    }
    const int pos = iy * p.nx + ix;
    out[pos] = s1;
    out[p.npos + pos] = s2;
    out[2 * p.npos + pos] = sc;
  }
}

/* The kernel body (the entry points: corr.cu's generic kernel, nvrtc.cu's
 * specialised one). */
template <int TW, int TH, int RB, int DYN, int SXB, int NG, int NS, int CWC>
__device__ void lt_tk_frame(const lt_tk_params &p, float *smem)
{
  lt_tk_block<TW, TH, RB, DYN, SXB, NG, NS, CWC>(p, smem);
}

)

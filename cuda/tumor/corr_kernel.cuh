/* corr_kernel.cuh - the tiled partial-sum kernel of the tumour mode (seeds/001
 * section V: template tiling, problem-specific compilation), written once
 * and used twice: compiled by nvcc into the binary as the generic kernel
 * (every size a run-time value), and handed as text to NVRTC, which compiles
 * it with the template and tile sizes as compile-time constants.
 *
 * How the text is shared: this file is a single macro argument,
 * LT_TUMOR_KERNEL_CODE( ... ). corr.cu includes it once with the macro
 * expanding to the code itself and once with it stringising the code
 * (#__VA_ARGS__). Hence: no preprocessor directives, no string literals and
 * no macros inside; comments are fine (removed before macro processing).
 *
 * Work decomposition. Block (g, sb, k): template k, shift block sb (an
 * SY x SX rectangle of shifts, one thread per shift), tile group g (tiles
 * g*G .. g*G+G-1 of the template's TLH x TLW tiles, row-major; right and
 * bottom tiles are smaller). Per tile the block stages the template tile
 * and the frame region under all its shifts in shared memory; each thread
 * sums, in float over at most TLH*TLW pixels,
 *   s1 = sum (B - c_t), s2 = sum (B - c_t)^2, sc = sum Tc (B - c_t),
 * with c_t the window's pixel at the tile origin (a flat window gives exact
 * zeros; values stay small), and adds them in double to the window's sums
 * relative to c0 (its top-left pixel): S1 = sum (B - c0), S2 = sum (B - c0)^2,
 * SC = sum Tc (B - c0) (needs sum Tc over the tile, precomputed). Output:
 * part[((k*ngroups_max + g)*3 + q)*npos + pos]; lt_tumor_finish (corr.cu)
 * adds the groups in order, forms r and finds each template's peak. */
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
  const double *tile_tc;   /* per template and tile: sum of tc over the tile */
  const int *tile_off;     /* per template: offset into tile_tc */
  double *part;            /* partial sums, layout above */
  int V, H, nx, npos, ngroups_max, group_tiles;
  int tlw, tlh, sx, sy;    /* run-time tile and shift-block sizes (generic) */
  const double *sum_tc, *ta; /* per template: sum Tc, sum Tc^2 */
  float *scores;           /* per template: the map of r (npos floats) */
  lt_tk_pk *pk;     /* per template: the peak */
  unsigned int *count;     /* per template: blocks done (fused: not null, zero between launches) */
};


/* Pixel i of the region as B - 128 (bytes converted here: the same float). */
__device__ __forceinline__ float lt_tk_px(const lt_tk_params &p, long long i)
{
  return p.roi8 ? (float)p.roi8[i] - 128.0f : p.roi[i];
}

/* Sums over one cw x ch tile; CW/CH > 0 fix the loop bounds at compile time. */
template <int CW, int CH>
__device__ __forceinline__ void lt_tk_tile(const float *reg, int rstride, const float *tt, int cw_rt, int ch_rt,
                                           float c, float &s1, float &s2, float &sc)
{
  const int cw = CW > 0 ? CW : cw_rt;
  const int ch = CH > 0 ? CH : ch_rt;
  for (int i = 0; i < ch; i++) {
    const float *r = reg + i * rstride;
    const float *t = tt + i * cw;
    for (int j = 0; j < cw; j++) {
      const float d = r[j] - c;
      s1 += d;
      s2 = __fmaf_rn(d, d, s2);
      sc = __fmaf_rn(t[j], d, sc);
    }
  }
}

/* Size of the last tile along a side of T pixels cut in tiles of TL
 * (compile time; 1 when either is a run-time value, where it is unused). */
template <int T, int TL>
struct lt_tk_edge {
  static const int v = (T > 0 && TL > 0) ? (T % (TL > 0 ? TL : 1) ? T % (TL > 0 ? TL : 1) : TL) : 1;
};

/* TW, TH: template size (0: per template, run time); TLW, TLH: main tile;
 * SX, SY: shift block (threads = SX*SY). */
template <int TW, int TH, int TLW, int TLH, int SX, int SY>
__device__ void lt_tk_partial(const lt_tk_params &p, float *smem)
{
  const int tlw = TLW > 0 ? TLW : p.tlw, tlh = TLH > 0 ? TLH : p.tlh;
  const int sx = SX > 0 ? SX : p.sx, sy = SY > 0 ? SY : p.sy;
  const int k = blockIdx.z, g = blockIdx.x;
  const int w = TW > 0 ? TW : p.tdim[4 * k], h = TH > 0 ? TH : p.tdim[4 * k + 1];
  const int x = p.tdim[4 * k + 2], y = p.tdim[4 * k + 3];
  const int tiles_x = (w + tlw - 1) / tlw, tiles_y = (h + tlh - 1) / tlh, ntiles = tiles_x * tiles_y;
  const int t0 = g * p.group_tiles;
  if (t0 >= ntiles) return; /* whole block: this template has fewer tiles */
  const int t1 = min(ntiles, t0 + p.group_tiles);
  const int nsbx = (p.nx + sx - 1) / sx;
  const int sbx = blockIdx.y % nsbx, sby = blockIdx.y / nsbx;
  const int tx = threadIdx.x % sx, ty = threadIdx.x / sx;
  const int dx = sbx * sx + tx - p.H, dy = sby * sy + ty - p.V;
  const bool valid = dx <= p.H && dy <= p.V;
  const int wr = y + dy - p.roi_y, wc = x + dx - p.roi_x; /* window origin in the ROI */
  const bool inside = valid && wr >= 0 && wc >= 0 && wr + h <= p.roi_h && wc + w <= p.roi_w;
  const float c0 = inside ? lt_tk_px(p, (long long)wr * p.roi_w + wc) : 0.0f;
  const int rw = tlw + sx - 1, rh = tlh + sy - 1; /* staged frame region */
  float *reg = smem, *tt = smem + rw * rh;
  const float *tc = p.tc + p.tc_off[k];
  const double *ttc = p.tile_tc + p.tile_off[k];
  double S1 = 0.0, S2 = 0.0, SC = 0.0;
  const int nthr = sx * sy;
  for (int t = t0; t < t1; t++) {
    const int oy = (t / tiles_x) * tlh, ox = (t % tiles_x) * tlw;
    const int cw = min(tlw, w - ox), ch = min(tlh, h - oy);
    const int ry = y + sby * sy - p.V - p.roi_y + oy, rx = x + sbx * sx - p.H - p.roi_x + ox;
    __syncthreads(); /* the previous tile's readers are done */
    for (int q = threadIdx.x; q < rw * rh; q += nthr) {
      const int a = ry + q / rw, b = rx + q % rw;
      reg[q] = (a >= 0 && b >= 0 && a < p.roi_h && b < p.roi_w) ? lt_tk_px(p, (long long)a * p.roi_w + b) : 0.0f;
    }
    for (int q = threadIdx.x; q < cw * ch; q += nthr) tt[q] = tc[(long long)(oy + q / cw) * w + ox + q % cw];
    __syncthreads();
    if (!inside) continue;
    const float *r0 = reg + ty * rw + tx;
    const float c = r0[0];
    float s1 = 0.0f, s2 = 0.0f, sc = 0.0f;
    if (TW > 0 && TH > 0 && TLW > 0 && TLH > 0) {
      /* the four tile shapes of seeds/001 fig. 3, each with fixed bounds */
      const bool right = cw != tlw, bottom = ch != tlh;
      if (!right && !bottom) lt_tk_tile<TLW, TLH>(r0, rw, tt, cw, ch, c, s1, s2, sc);
      else if (!bottom) lt_tk_tile<lt_tk_edge<TW, TLW>::v, TLH>(r0, rw, tt, cw, ch, c, s1, s2, sc);
      else if (!right) lt_tk_tile<TLW, lt_tk_edge<TH, TLH>::v>(r0, rw, tt, cw, ch, c, s1, s2, sc);
      else lt_tk_tile<lt_tk_edge<TW, TLW>::v, lt_tk_edge<TH, TLH>::v>(r0, rw, tt, cw, ch, c, s1, s2, sc);
    } else {
      lt_tk_tile<0, 0>(r0, rw, tt, cw, ch, c, s1, s2, sc);
    }
    const double n_t = (double)cw * ch, e = (double)c - (double)c0;
    S1 += (double)s1 + n_t * e;
    S2 += (double)s2 + 2.0 * e * (double)s1 + n_t * e * e;
    SC += (double)sc + e * ttc[t];
  }
  if (valid) {
    const int pos = (dy + p.V) * p.nx + (dx + p.H);
    double *out = p.part + ((long long)k * p.ngroups_max + g) * 3 * p.npos + pos;
    out[0] = S1;
    out[p.npos] = S2;
    out[2 * p.npos] = SC;
  }
}

/* r at shift index pos of template k (groups added in order); *inside =
 * false (and -1 returned) when the window leaves the ROI, i.e. the frame.
 * Partial sums read through L2 (__ldcg): other blocks of this launch wrote them. */
__device__ float lt_tk_score(const lt_tk_params &r, int k, int pos, bool *inside)
{
  const int w = r.tdim[4 * k], h = r.tdim[4 * k + 1], x = r.tdim[4 * k + 2], y = r.tdim[4 * k + 3];
  const int dy = pos / r.nx - r.V, dx = pos % r.nx - r.H;
  const int wr = y + dy - r.roi_y, wc = x + dx - r.roi_x;
  if (wr < 0 || wc < 0 || wr + h > r.roi_h || wc + w > r.roi_w) {
    *inside = false;
    return -1.0f; /* LT_TUMOR_OUTSIDE */
  }
  *inside = true;
  const int ntiles = ((w + r.tlw - 1) / r.tlw) * ((h + r.tlh - 1) / r.tlh);
  const int ng = (ntiles + r.group_tiles - 1) / r.group_tiles;
  double s1 = 0, s2 = 0, sc = 0;
  for (int g = 0; g < ng; g++) {
    const double *q = r.part + ((long long)k * r.ngroups_max + g) * 3 * r.npos + pos;
    s1 += __ldcg(q);
    s2 += __ldcg(q + r.npos);
    sc += __ldcg(q + 2 * r.npos);
  }
  const double n = (double)w * h, flat = 1e-6 * n; /* LT_TUMOR_FLAT_VAR */
  double bb = s2 - s1 * s1 / n;
  const double cross = sc - (s1 / n) * r.sum_tc[k];
  double v = 0.0;
  if (r.ta[k] > flat && bb > flat) {
    v = cross / sqrt(r.ta[k] * bb);
    v = v > 1.0 ? 1.0 : v < -1.0 ? -1.0 : v;
  }
  return (float)v;
}

/* peak.c's vertex() */
__device__ double lt_tk_vertex(double sm, double s0, double sp)
{
  double curv = sm - 2.0 * s0 + sp;
  if (!(curv < 0.0)) return 0.0;
  double d = 0.5 * (sm - sp) / curv;
  return d > 0.5 ? 0.5 : d < -0.5 ? -0.5 : d;
}

/* Neighbour (dy, dx) of template k's peak: in the shift range and its window
 * inside; its score in *out. */
__device__ bool lt_tk_nb(const lt_tk_params &r, int k, const float *map, int dy, int dx, double *out)
{
  const int w = r.tdim[4 * k], h = r.tdim[4 * k + 1], x = r.tdim[4 * k + 2], y = r.tdim[4 * k + 3];
  if (dy < -r.V || dy > r.V || dx < -r.H || dx > r.H) return false;
  if (y + dy - r.roi_y < 0 || x + dx - r.roi_x < 0 || y + dy - r.roi_y + h > r.roi_h ||
      x + dx - r.roi_x + w > r.roi_w)
    return false;
  *out = (double)map[(dy + r.V) * r.nx + (dx + r.H)];
  return true;
}

/* The whole block (blockDim.x a power of two <= 256): template k's map
 * (written to r.scores), then its peak exactly as lt_tumor_peak_one (first
 * best in scan order among inside shifts - the result does not depend on
 * the block size -, separable parabola refinement from the same float
 * scores) into r.pk[k]. */
__device__ void lt_tk_finish_block(const lt_tk_params &r, int k)
{
  __shared__ float bv[256];
  __shared__ int bi[256];
  float *map = r.scores + (long long)k * r.npos;
  float best = -2.0f;
  int at = -1;
  for (int pos = threadIdx.x; pos < r.npos; pos += blockDim.x) {
    bool in;
    const float v = lt_tk_score(r, k, pos, &in);
    map[pos] = v;
    if (in && (at < 0 || v > best)) {
      best = v;
      at = pos;
    }
  }
  bv[threadIdx.x] = best;
  bi[threadIdx.x] = at;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) {
      const float v2 = bv[threadIdx.x + s];
      const int i2 = bi[threadIdx.x + s], i1 = bi[threadIdx.x];
      if (i2 >= 0 && (i1 < 0 || v2 > bv[threadIdx.x] || (v2 == bv[threadIdx.x] && i2 < i1))) {
        bv[threadIdx.x] = v2;
        bi[threadIdx.x] = i2;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  lt_tk_pk o;
  o.pad = 0;
  o.pad2 = 0.0f;
  o.found = bi[0] >= 0;
  o.dy = o.dx = 0;
  o.score = -1.0f;
  if (o.found) {
    o.dy = bi[0] / r.nx - r.V;
    o.dx = bi[0] % r.nx - r.H;
    o.score = bv[0];
  }
  o.dy_sub = o.dy;
  o.dx_sub = o.dx;
  if (o.found) {
    double sm, sp;
    if (lt_tk_nb(r, k, map, o.dy, o.dx - 1, &sm) && lt_tk_nb(r, k, map, o.dy, o.dx + 1, &sp))
      o.dx_sub += lt_tk_vertex(sm, o.score, sp);
    if (lt_tk_nb(r, k, map, o.dy - 1, o.dx, &sm) && lt_tk_nb(r, k, map, o.dy + 1, o.dx, &sp))
      o.dy_sub += lt_tk_vertex(sm, o.score, sp);
  }
  r.pk[k] = o;
}

/* The kernel: partial sums of block (g, sb, k); when p.count is set (fused),
 * the last block of template k to finish (threadfence reduction pattern)
 * also adds the groups in order and finds the peak, so one launch does the
 * frame; results are those of the two-kernel path bit for bit. */
template <int TW, int TH, int TLW, int TLH, int SX, int SY>
__device__ void lt_tk_main(const lt_tk_params &p, float *smem)
{
  __shared__ bool last;
  lt_tk_partial<TW, TH, TLW, TLH, SX, SY>(p, smem);
  if (!p.count) return;
  const int k = blockIdx.z;
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned int done = atomicAdd(p.count + k, 1u);
    last = done == gridDim.x * gridDim.y - 1;
    if (last) p.count[k] = 0; /* every block of k has counted: ready for the next launch */
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  lt_tk_finish_block(p, k);
}

)

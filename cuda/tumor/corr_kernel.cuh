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
  if (!valid) return;
  const int pos = (dy + p.V) * p.nx + (dx + p.H);
  double *out = p.part + ((long long)k * p.ngroups_max + g) * 3 * p.npos + pos;
  out[0] = S1;
  out[p.npos] = S2;
  out[2 * p.npos] = SC;
}

)

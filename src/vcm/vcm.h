/* vcm.h - Vector Coherence Mapping (seeds/002 section 6; Quek and Bryll 1998):
 * sparse motion vectors between two frames, as a table of stages that a CPU
 * and a CUDA backend fill (lt_vcm_backend_cpu here, lt_vcm_backend_cuda in
 * cuda/vcm/vcm_cuda.h).
 *
 * Frames are single-channel float, row-major, row 0 = top, values 0..255.
 * A vector (x, y, dx, dy) says that the interest point at pixel (x, y) of
 * frame t is at (x + dx, y + dy) in frame t+1 (x right, y down, pixels).
 * Points come out in a fixed order: sub-window by sub-window in row-major
 * order, inside a sub-window strongest first; both backends give the same
 * points in the same order. The choices behind the stages are documented at
 * the top of vcm.c. */
#ifndef LT_VCM_H
#define LT_VCM_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LT_VCM_MAX_K 16      /* most points per sub-window */
#define LT_VCM_MAX_PATCH 31  /* largest (odd) patch side */
#define LT_VCM_MAX_SEARCH 128 /* largest (even) search side */

/* How a sum of absolute differences d becomes a similarity in [0,1]
 * (best offset of an NCM = 1; offsets whose patch leaves frame t+1 = 0). */
typedef enum {
  LT_VCM_SIM_MINMAX = 0, /* (dmax - d) / (dmax - dmin) over the NCM's offsets */
  LT_VCM_SIM_MINMAX2,    /* the same, squared: a sharper peak */
  LT_VCM_SIM_EXP,        /* exp(-(d - dmin) / (patch^2 * sim_h)) */
} lt_vcm_similarity;

/* Similarities are stored as integers 0..LT_VCM_SIM_ONE (1.0), 16-bit maps;
 * 15 bits so that a pair of them fits the signed 16-bit lanes of a
 * multiply-add (x86 vpmaddwd). */
#define LT_VCM_SIM_ONE 32767
/* Quantised neighbour weight of distance 0 (lt_vcm_weight_q), where the
 * points within the radius are few enough (<= 257) for 32-bit sums. */
#define LT_VCM_W_ONE 255

/* Weight of a neighbour at distance r (r <= coherence_radius; w(0) = 1). */
typedef enum {
  LT_VCM_W_GAUSS = 0, /* exp(-r^2 / (2 s^2)), s = coherence_radius / 2 */
  LT_VCM_W_LINEAR,    /* 1 - r / (coherence_radius + 1) */
  LT_VCM_W_UNIFORM,   /* 1 */
} lt_vcm_weighting;

/* Sub-pixel refinement of the VCM peak, per axis through the peak and its
 * two neighbours. */
typedef enum {
  LT_VCM_SUB_PARABOLA = 0, /* parabola vertex */
  LT_VCM_SUB_EQUIANGULAR,  /* symmetric V (equal slopes): suits SAD-based maps */
} lt_vcm_subpixel;

/* An offset o takes part in V_i only where the neighbours whose search area
 * holds o carry at least this fraction of the weight (near the border). */
#define LT_VCM_MIN_SUPPORT 0.25

typedef struct lt_vcm_params {
  int grid_x, grid_y;      /* sub-windows across and down (32 x 32) */
  int points_per_cell;     /* K strongest points per sub-window (2; 1..LT_VCM_MAX_K) */
  int patch;               /* correlation patch side P, odd (5) */
  int search;              /* search side S, even (64): offsets -S/2..+S/2 both axes */
  int coherence_radius;    /* neighbours within this many pixels vote (20) */
  float min_strength;      /* fuzzy-AND value a point needs, of [0,1] (0.05) */
  float min_contrast;      /* and |I1-I0| and Sobel/8 of at least this many grey levels (2) */
  int similarity;          /* lt_vcm_similarity (LT_VCM_SIM_MINMAX2) */
  float sim_h;             /* grey levels per pixel for LT_VCM_SIM_EXP (16) */
  int weighting;           /* lt_vcm_weighting (LT_VCM_W_LINEAR) */
  float temporal_weight;   /* weight of the previous pair's field as a prior (0 = off) */
  float temporal_radius;   /* prior support around the predicted vector, pixels (3) */
  int subpixel;            /* lt_vcm_subpixel (LT_VCM_SUB_EQUIANGULAR) */
  float evidence;          /* the vcm mode keeps vectors with lt_vcm_evidence <= this (0.7;
                              0 = keep all); the backends do not read it */
} lt_vcm_params;

typedef struct lt_vcm_vector {
  float x, y;   /* interest point in frame t (integer pixel) */
  float dx, dy; /* motion to frame t+1, sub-pixel */
  float score;  /* VCM peak / sum of the votes' weights, 0..1 (higher = more coherent) */
  float evidence; /* lt_vcm_evidence of this vector (lower = better supported by the frames) */
} lt_vcm_vector;

/* The stage table. create allocates everything the pairs need (returns 0 or
 * a negative lt_err after one lt_error; *ctx NULL on failure); destroy
 * accepts NULL; pair allocates nothing: it writes at most cap vectors to out,
 * their number to *n, and returns 0 or a negative lt_err. With
 * temporal_weight > 0 a context remembers the last pair's vectors, so pairs
 * must be given in order (t, t+1), (t+1, t+2), ... Both backends keep their
 * own copy of the last pair's I1 (rounded; on CUDA on the device): I0 NULL
 * means "the last pair's I1" (an error for a context's first pair), and a
 * pair whose I0 is the same pointer as the last pair's I1 is taken the same
 * way, so that buffer must still hold the same frame; a caller that rewrites
 * a buffer in place passes it as I0 only after giving the new frame as I1
 * first. Either way only I1 is rounded (and uploaded). */
typedef struct lt_vcm_backend {
  const char *name;
  int (*create)(void **ctx, const lt_vcm_params *p, int w, int h);
  void (*destroy)(void *ctx);
  int (*pair)(void *ctx, const float *I0, const float *I1, lt_vcm_vector *out, int cap, int *n);
  /* Seconds spent since create in the paper's three phases (seeds/002
   * table 4): s[0] interest points (on CUDA with the frame upload), s[1]
   * NCMs (correlation), s[2] VCMs (accumulation and peak). May be NULL. */
  void (*phases)(void *ctx, double s[3]);
  /* pair on frames that are already bytes (8-bit video's lt_frame.grey8:
   * the values lt_vcm_round8 gives for their floats, so the vectors are
   * pair's to the bit): they are copied, not rounded. Q0 NULL = the last
   * pair's I1, whether it came through pair or pair8 (and pair's I0 NULL
   * after a pair8 the same); no pointer test. */
  int (*pair8)(void *ctx, const uint8_t *Q0, const uint8_t *Q1, lt_vcm_vector *out, int cap, int *n);
  /* Optional (NULL: none): the frame the next pair8 will get as Q1, when
   * known, sent ahead during the next pair8's work; that pair8 uses it only
   * if its Q1 is this pointer (the frame unchanged until then), else it
   * takes Q1 as usual. Gives the same vectors as without. */
  int (*prefetch8)(void *ctx, const uint8_t *next);
  /* Optional (NULL: none): pair8 in two halves, so that the caller can
   * work while the pair runs (the vcm mode writes the last pair's rows):
   * start8 queues the pair and returns, finish waits for it and gives its
   * vectors as pair8 would; one pair in flight (start8, finish, start8...). */
  int (*start8)(void *ctx, const uint8_t *Q0, const uint8_t *Q1);
  int (*finish)(void *ctx, lt_vcm_vector *out, int cap, int *n);
} lt_vcm_backend;

extern const lt_vcm_backend lt_vcm_backend_cpu;

/* Defaults listed above. */
void lt_vcm_params_default(lt_vcm_params *p);
/* 0, or LT_ERR_USAGE (bad parameter) / LT_ERR_INPUT (frame smaller than the
 * patch) after one lt_error. Frames smaller than the search area are fine:
 * the search is clamped to the frame. */
int lt_vcm_params_check(const lt_vcm_params *p, int w, int h);
/* grid_x * grid_y * points_per_cell: the most vectors one pair gives. */
int lt_vcm_max_points(const lt_vcm_params *p);
/* Side of an NCM / VCM: search + 1 (offsets -search/2..search/2). */
int lt_vcm_map_side(const lt_vcm_params *p);
/* Neighbour weight by squared integer distance: table[r2] for r2 = 0 ..
 * coherence_radius^2 (both backends use this table, so weights agree to
 * the bit). */
void lt_vcm_weight_table(const lt_vcm_params *p, float *table);

/* Most points that can lie within the coherence radius of a point (the
 * sub-windows the radius box can span times K): the bound behind
 * lt_vcm_weight_q's scale. */
int lt_vcm_max_neighbours(const lt_vcm_params *p, int w, int h);
/* The weights as the accumulation uses them: qtable[r2] = max(1,
 * round(scale * table[r2])), scale = min(LT_VCM_W_ONE, floor(INT32_MAX /
 * (LT_VCM_SIM_ONE * lt_vcm_max_neighbours))), so that a point's sum of
 * weight x similarity and its weights' sum x LT_VCM_SIM_ONE fit a signed
 * 32-bit integer however many neighbours it has. Returns the scale. */
int lt_vcm_weight_q(const lt_vcm_params *p, int w, int h, int32_t *qtable);

/* The similarity of an offset's SAD d given the NCM's smallest and largest
 * SAD (integers) as an integer 0..LT_VCM_SIM_ONE: s = (dmax - d) inv, inv =
 * lt_vcm_sim_inv(dmin, dmax) = 1 / (dmax - dmin) (squared for
 * LT_VCM_SIM_MINMAX2; 0 when dmax = dmin), or exp(-(d - dmin) / tau) for
 * LT_VCM_SIM_EXP, then (int)(LT_VCM_SIM_ONE s + 0.5), each float operation
 * rounded on its own (no fused multiply-add): both backends call these
 * functions, so the maps agree to the bit (expf excepted: the CUDA
 * library's may differ by an ulp). */
#ifdef __CUDACC__
#define LT_VCM_HD __host__ __device__
#else
#define LT_VCM_HD
#endif
LT_VCM_HD static inline float lt_vcm_sim_inv(int dmin, int dmax)
{
  return dmax > dmin ? 1.0f / (float)(dmax - dmin) : 0.0f; /* IEEE division on both */
}
LT_VCM_HD static inline uint16_t lt_vcm_sim_q(int d, int dmin, int dmax, float inv, int similarity, float tau)
{
  float s;
#ifdef __CUDA_ARCH__
  if (similarity == LT_VCM_SIM_EXP)
    s = expf(__fdiv_rn(-(float)(d - dmin), tau));
  else {
    s = __fmul_rn((float)(dmax - d), inv);
    if (similarity == LT_VCM_SIM_MINMAX2) s = __fmul_rn(s, s);
  }
  return (uint16_t)(int)__fadd_rn(__fmul_rn(s, (float)LT_VCM_SIM_ONE), 0.5f);
#else
  if (similarity == LT_VCM_SIM_EXP)
    s = expf(-(float)(d - dmin) / tau);
  else {
    s = (float)(dmax - d) * inv;
    if (similarity == LT_VCM_SIM_MINMAX2) s = s * s;
  }
  return (uint16_t)(int)(s * (float)LT_VCM_SIM_ONE + 0.5f);
#endif
}

/* --- the CPU stages, exposed for tests and for the CUDA backend's checks --- */

/* L1 Sobel magnitude |Gx| + |Gy| with edge replication. */
void lt_vcm_sobel(const float *img, int w, int h, float *mag);
/* Interest strength F = min(G / Gmax, D / Dmax) (fuzzy AND), D = |I1 - I0|,
 * maxima over the interior (pixels at least max(1, patch/2) from the border);
 * F = 0 on the border band, where Gmax or Dmax is 0, and where the minimum
 * rules fail (F < min_strength, D < min_contrast or G < 8 min_contrast). */
void lt_vcm_strength(const float *mag, const float *I0, const float *I1, int w, int h,
                     const lt_vcm_params *p, float *F);
/* The K strongest pixels with F > 0 per sub-window, ties to the lower
 * row-major index; writes positions to px, py (room for
 * lt_vcm_max_points) and returns their number. */
int lt_vcm_select(const float *F, int w, int h, const lt_vcm_params *p, int *px, int *py);
/* lt_vcm_sobel, lt_vcm_strength and lt_vcm_select in two passes over the
 * frame (the Sobel row by row with the maxima; then, per row of
 * sub-windows, F row by row scanned into the sub-windows' K best, skipping
 * runs of 16 pixels none of which can enter): the same points in the same
 * order. mag: w*h floats (the Sobel); scratch: nthreads *
 * lt_vcm_points_scratch(p, w) bytes; runs on nthreads OpenMP threads (the
 * result does not depend on their number). Returns n. */
size_t lt_vcm_points_scratch(const lt_vcm_params *p, int w);
int lt_vcm_points(const float *I0, const float *I1, int w, int h, const lt_vcm_params *p, int nthreads, float *mag,
                  void *scratch, int *px, int *py);
/* NCM of the point (x, y): side*side similarities (lt_vcm_sim_q),
 * row-major, offset (ox, oy) at [(oy + S/2) * side + ox + S/2]. */
void lt_vcm_ncm(const float *I0, const float *I1, int w, int h, int x, int y,
                const lt_vcm_params *p, uint16_t *ncm);
/* Integer peak of a side*side map (ties: smaller |offset|^2, then lower
 * index) refined along each axis through the peak and its two neighbours
 * (lt_vcm_subpixel; shift clamped to +-0.5). Returns the peak value. */
float lt_vcm_peak(const float *map, int side, int subpixel, float *dx, float *dy);
/* The frames as VCM sees them: each value rounded to an integer 0..255
 * (v clamped to [0, 255], NaN -> 0, then (int)(v + 0.5f)), as bytes in q and,
 * where rf is not NULL, as floats in rf. Both backends run every stage on
 * these values (the CUDA backend uploads q), so 8-bit video is unchanged and
 * SADs are exact integers whatever the order of summation. */
void lt_vcm_round8(const float *src, size_t n, float *rf, uint8_t *q);
/* Bytes a rounded frame buffer needs past w*h (the SIMD SAD's last lanes). */
#define LT_VCM_PAD8 64
/* lt_vcm_ncm on rounded frames (q0/q1 from lt_vcm_round8, each with
 * LT_VCM_PAD8 bytes to spare; I0/I1 their float copies): integer SADs in
 * 16-bit SIMD lanes (32 per AVX-512BW register, written straight into the
 * map; else 16 per AVX2 register through scratch), then turned into
 * similarities in place: the same map to the bit. scratch: (search + 1) *
 * 144 uint16. */
void lt_vcm_ncm8(const uint8_t *q0, const uint8_t *q1, const float *I0, const float *I1, int w, int h, int x,
                 int y, const lt_vcm_params *p, uint16_t *scratch, uint16_t *ncm);
/* The widest SIMD lt_vcm_ncm8 and the CPU accumulation may use, each only
 * where the CPU has it: 3 AVX-512BW with VNNI (the accumulation's
 * vpdpwssd; the SADs as 2), 2 AVX-512BW (32 16-bit lanes), 1 AVX2 (16), 0
 * none (the float reference); 3 by default. For tests, which hold every
 * path to the reference; set it while no backend runs. */
void lt_vcm_set_simd(int level);
/* Motion evidence of a vector, filled in by both backends (the vcm mode
 * drops vectors above --evidence A): e(v) / e(0), where e(o) is the sum of
 * absolute differences over the (2 LT_VCM_EVIDENCE_HALF + 1)^2 window
 * around the point between the rounded frame t (q0) and the rounded frame
 * t+1 (q1) displaced by o, v the vector rounded to whole pixels, both sums
 * over the window pixels whose moved position lies inside the frame. 0 when
 * |v| < 1 px (or both sums are 0); INFINITY when less than half of the window
 * is usable or e(0) = 0 < e(v). A vector whose motion explains frame t+1
 * clearly better than no motion has a small ratio; a vector from an
 * interest point on static background noise, whose coherence map peak is
 * chance, a ratio near 1 or above. The rounded vector, not an interpolated
 * one: interpolation averages the noise away and lets chance vectors pass
 * (lt_synth2 texture clip: 38% of the kept vectors > 7 px instead of 2%).
 * Window and default A measured in tests/test_vcm_cli.sh. */
#define LT_VCM_EVIDENCE_HALF 4
float lt_vcm_evidence(const uint8_t *q0, const uint8_t *q1, int w, int h, const lt_vcm_vector *v);
/* Offsets whose displaced patch stays inside frame t+1 for the point (x, y):
 * r = {ox_min, ox_max, oy_min, oy_max} (a rectangle within +-search/2). */
void lt_vcm_search_rect(const lt_vcm_params *p, int w, int h, int x, int y, int r[4]);

#ifdef __cplusplus
}
#endif

#endif

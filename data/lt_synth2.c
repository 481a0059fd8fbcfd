/* lt_synth2.c - a second, independent generator of leukocyte video with
 * ground truth: appearance families that leuktrack was not developed on
 * (issue 15). Written from scratch; it shares no code or model with
 * lt_synth.c, only the truth format that lt_eval reads.
 *
 * Families (--family):
 *   rim       soft disc with a Gaussian dark rim (sigma 1 px) and a faint bright interior
 *   bright    bright disc with a soft (sigmoid) edge, no rim
 *   halo      dark body with a bright halo ring just outside (phase-contrast look)
 *   blur      rim cells, the whole frame defocused (Gaussian blur, sigma 2 px)
 *   texture   rim cells with bright/dark granules inside that turn as the cell rolls
 *   fluo      fluorescence: dark background, bright cells, signal-dependent noise
 *   clutter   rim cells between two wavy vessel walls, adherent cells that do not
 *             move (in the truth, speed 0), static and drifting debris (not in the truth)
 *   drift     rim cells under illumination drift (gain ramp, moving shading,
 *             per-frame flicker) and strong noise (sigma 7)
 *   fast      rim cells rolling at 3..8 px/frame
 *   touching  cells in side-by-side pairs whose rims touch (gap -1..+1 px)
 *   real      cells cut from Rodinia's real frame (--real FILE.avi) and pasted,
 *             as their difference to an inpainted background, onto that
 *             background (a W x H crop of it)
 *   realref   real, but only the patches that are the reference program's 38
 *             candidates (its GICOV maxima inside the window where it
 *             evaluated GICOV): no patch of background texture, vessel wall or
 *             debris counts as a cell (a second definition of real, added with
 *             issue 15's leukacc pass; real is kept as it was)
 * Motion (all families): cells roll along +x, direction within +-10 deg,
 *   stop-and-go speed v(t) = v0 (1 + 0.35 sin(2 pi t / P + phi)), v0 uniform in
 *   [vmin, vmax] (0.5..5 px/frame; fast: 3..8), P in [15, 40] frames. About
 *   --cells cells are in frame 0, as many again enter from the left during the
 *   first 60 % of the clip. Placement by rejection: in every frame where both
 *   can be seen, two cells stay r1 + r2 + 4 px apart (touching: partners
 *   r1 + r2 - 1..+1). Truth radius = the outer edge of the cell's edge feature.
 * Output: YUV4MPEG2 (mono, 8-bit) and the truth CSV of lt_synth:
 *   frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px (a row per frame per cell
 *   whose centre lies in the frame). Deterministic for a seed. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROG "lt_synth2"
#define PI2 6.28318530717958647692
#define MAXC 256
#define NGRAN 12

enum { F_RIM, F_BRIGHT, F_HALO, F_BLUR, F_TEXTURE, F_FLUO, F_CLUTTER, F_DRIFT, F_FAST, F_TOUCH, F_REAL, F_REALREF, F_N };
static const char *const fam_names[F_N] = {"rim",  "bright", "halo", "blur",     "texture", "fluo",
                                           "clutter", "drift", "fast", "touching", "real", "realref"};

/* Cells found in Rodinia's frame (rodinia_testfile_1frame.avi, displayed rows
 * top-down): x, y, radius. These are the 49 detections of the reference
 * algorithm's GICOV stage (|GICOV| > 1.8, crop rows 110..328) as leuktrack
 * reports them on that frame; used only as the places to cut patches from. */
static const float real_cells[][3] = {
  {239.5f, 123.8f, 8}, {462.6f, 123.6f, 8}, {526.8f, 127.9f, 8}, {557.1f, 128.1f, 8}, {433.1f, 131.0f, 10},
  {491.1f, 134.8f, 8}, {521.3f, 140.0f, 8}, {199.8f, 145.2f, 8}, {95.6f, 167.1f, 8}, {253.3f, 167.3f, 8},
  {352.9f, 167.6f, 10}, {318.1f, 170.9f, 8}, {407.5f, 171.4f, 10}, {224.5f, 176.9f, 8}, {292.6f, 178.3f, 10},
  {624.5f, 180.1f, 8}, {103.4f, 186.0f, 8}, {461.0f, 185.9f, 8}, {487.3f, 192.7f, 10}, {620.1f, 202.8f, 8},
  {321.7f, 205.5f, 10}, {485.4f, 208.9f, 8}, {559.8f, 208.4f, 8}, {211.8f, 215.1f, 8}, {136.1f, 215.6f, 14},
  {280.7f, 215.2f, 8}, {107.7f, 218.0f, 10}, {497.9f, 219.4f, 8}, {387.1f, 222.0f, 8}, {189.3f, 227.6f, 8},
  {340.0f, 227.5f, 8}, {617.4f, 230.5f, 8}, {168.8f, 236.6f, 8}, {558.6f, 239.6f, 8}, {369.9f, 246.0f, 12},
  {579.3f, 247.5f, 10}, {335.5f, 253.0f, 12}, {219.7f, 255.5f, 14}, {550.4f, 260.2f, 8}, {81.5f, 262.0f, 8},
  {480.5f, 264.7f, 8}, {112.8f, 265.2f, 8}, {235.3f, 292.1f, 8}, {192.3f, 299.4f, 10}, {249.3f, 299.2f, 8},
  {408.3f, 305.1f, 8}, {227.4f, 311.9f, 10}, {402.2f, 314.4f, 8}, {184.5f, 319.8f, 8},
};
#define NREAL ((int)(sizeof real_cells / sizeof real_cells[0]))
/* The entries of real_cells within 8.5 px of one of the reference's 38
 * candidates (tests/test_robust_realframe.sh lists them; one entry each):
 * all but the 6 above the upper vessel wall (0-5), the one at the right
 * border (15) and the 4 by or below the lower wall (45-48). */
static const int ref_cells[] = {6,  7,  8,  9,  10, 11, 12, 13, 14, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25,
                                26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44};
#define NREF ((int)(sizeof ref_cells / sizeof ref_cells[0]))
#define RW 640
#define RH 480

typedef struct cell {
  double r, v0, ang, per, ph, vy;
  double amp, amp2;          /* main contrast, second feature (interior / halo) */
  double gx[NGRAN], gy[NGRAN], gr[NGRAN], ga[NGRAN];
  int patch;                 /* real: index into real_cells */
  int truth;                 /* 0: debris (drawn, not in the truth) */
  int partner;               /* touching: index of the pair partner, -1 */
  double *x, *y;             /* per frame */
} cell;

static uint64_t rng_s;
static double urand(void)
{
  uint64_t z = (rng_s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  z ^= z >> 31;
  return (z >> 11) * (1.0 / 9007199254740992.0);
}
static double uni(double a, double b) { return a + (b - a) * urand(); }
static double gauss(void)
{
  double u = urand(), v = urand();
  if (u < 1e-300) u = 1e-300;
  return sqrt(-2 * log(u)) * cos(PI2 * v);
}
static double sig(double d, double edge, double w) { return 1.0 / (1.0 + exp((d - edge) / w)); }

static int W = 320, H = 160, NF = 40, NC = 6, fam = F_RIM;
static int is_real(int f) { return f == F_REAL || f == F_REALREF; }
static double vmin = 0.5, vmax = 5;

/* Separable Gaussian blur of img (W x H) in place. */
static void blur(float *img, int w, int h, double sigma)
{
  int rad = (int)ceil(3 * sigma);
  double k[64], s = 0;
  for (int i = -rad; i <= rad; i++) s += k[i + rad] = exp(-i * i / (2 * sigma * sigma));
  for (int i = 0; i <= 2 * rad; i++) k[i] /= s;
  float *t = malloc(sizeof *t * w * h);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double a = 0;
      for (int i = -rad; i <= rad; i++) a += k[i + rad] * img[y * w + (x + i < 0 ? 0 : x + i >= w ? w - 1 : x + i)];
      t[y * w + x] = (float)a;
    }
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      double a = 0;
      for (int i = -rad; i <= rad; i++) a += k[i + rad] * t[(y + i < 0 ? 0 : y + i >= h ? h - 1 : y + i) * w + x];
      img[y * w + x] = (float)a;
    }
  free(t);
}

/* Rodinia's frame (8-bit, bottom-up DIB rows in the first 00db/00dc chunk of
 * W*H bytes), flipped so that row 0 is the top. */
static int read_real(const char *path, float *img)
{
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, PROG ": error: cannot open '%s': %s\n", path, strerror(errno));
    return -1;
  }
  static unsigned char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  for (size_t i = 0; i + 8 + RW * RH <= n; i++)
    if (buf[i] == '0' && buf[i + 1] == '0' && buf[i + 2] == 'd' && (buf[i + 3] == 'b' || buf[i + 3] == 'c')) {
      uint32_t len = buf[i + 4] | buf[i + 5] << 8 | buf[i + 6] << 16 | (uint32_t)buf[i + 7] << 24;
      if (len != RW * RH) continue;
      for (int y = 0; y < RH; y++)
        for (int x = 0; x < RW; x++) img[y * RW + x] = buf[i + 8 + (size_t)(RH - 1 - y) * RW + x];
      return 0;
    }
  fprintf(stderr, PROG ": error: '%s' has no 640x480 8-bit frame chunk\n", path);
  return -1;
}

/* Background without cells: the discs (radius + 5) around the cells are filled
 * by Laplace diffusion from their borders, plus noise of the frame's texture. */
static void inpaint(const float *img, float *bg)
{
  unsigned char *m = calloc(RW * RH, 1);
  for (int k = 0; k < NREAL; k++) {
    double cx = real_cells[k][0], cy = real_cells[k][1], rr = real_cells[k][2] + 5;
    for (int y = (int)(cy - rr) - 1; y <= (int)(cy + rr) + 1; y++)
      for (int x = (int)(cx - rr) - 1; x <= (int)(cx + rr) + 1; x++)
        if (x >= 1 && y >= 1 && x < RW - 1 && y < RH - 1 && hypot(x - cx, y - cy) <= rr) m[y * RW + x] = 1;
  }
  memcpy(bg, img, sizeof *bg * RW * RH);
  for (int i = 0; i < RW * RH; i++)
    if (m[i]) bg[i] = 128;
  for (int it = 0; it < 400; it++)
    for (int y = 1; y < RH - 1; y++)
      for (int x = 1; x < RW - 1; x++)
        if (m[y * RW + x])
          bg[y * RW + x] = 0.25f * (bg[y * RW + x - 1] + bg[y * RW + x + 1] + bg[(y - 1) * RW + x] + bg[(y + 1) * RW + x]);
  for (int i = 0; i < RW * RH; i++)
    if (m[i]) bg[i] += (float)(3.0 * gauss());
  free(m);
}

static double bilin(const float *img, int w, int h, double x, double y)
{
  if (x < 0) x = 0;
  if (y < 0) y = 0;
  if (x > w - 1.001) x = w - 1.001;
  if (y > h - 1.001) y = h - 1.001;
  int l = (int)x, k = (int)y;
  double a = x - l, b = y - k;
  return (1 - a) * (1 - b) * img[k * w + l] + a * (1 - b) * img[k * w + l + 1] + (1 - a) * b * img[(k + 1) * w + l] +
         a * b * img[(k + 1) * w + l + 1];
}

/* Positions of cell c over all frames, starting at (x0, y0) in frame 0. */
static void move(cell *c, double x0, double y0)
{
  double x = x0, y = y0;
  for (int t = 0; t < NF; t++) {
    c->x[t] = x;
    c->y[t] = y;
    double v = c->v0 * (1 + 0.35 * sin(PI2 * t / c->per + c->ph));
    x += v * cos(c->ang);
    y += v * sin(c->ang);
  }
}

static int visible(const cell *c, int t) { return c->x[t] > -c->r - 4 && c->x[t] < W + c->r + 4; }

static int clear_of(const cell *cs, int n, const cell *c, int self_partner)
{
  for (int t = 0; t < NF; t++) {
    if (!visible(c, t)) continue;
    if (c->y[t] < c->r + 3 || c->y[t] > H - 4 - c->r) return 0;
    for (int j = 0; j < n; j++) {
      if (!visible(&cs[j], t)) continue;
      double d = hypot(c->x[t] - cs[j].x[t], c->y[t] - cs[j].y[t]);
      double need = c->r + cs[j].r + (j == self_partner ? -1.5 : 4);
      if (d < need) return 0;
    }
  }
  return 1;
}

static void new_look(cell *c)
{
  memset(c->gx, 0, sizeof c->gx);
  c->r = uni(8, 14);
  c->v0 = uni(vmin, vmax);
  c->ang = uni(-10, 10) * PI2 / 360;
  c->per = uni(15, 40);
  c->ph = uni(0, PI2);
  c->truth = 1;
  c->partner = -1;
  c->patch = -1;
  switch (fam) {
  case F_BRIGHT: c->amp = uni(25, 45); break;
  case F_HALO: c->amp = uni(20, 35), c->amp2 = uni(25, 40); break;
  case F_FLUO: c->amp = uni(30, 70), c->amp2 = uni(4, 10); break;
  case F_REAL:
    c->patch = (int)(urand() * NREAL);
    c->r = real_cells[c->patch][2];
    break;
  case F_REALREF:
    c->patch = ref_cells[(int)(urand() * NREF)];
    c->r = real_cells[c->patch][2];
    break;
  default: c->amp = uni(25, 45), c->amp2 = uni(0, 8); break;
  }
  for (int g = 0; g < NGRAN; g++) {
    double rho = sqrt(urand()) * (c->r - 3.5), a = uni(0, PI2);
    c->gx[g] = rho * cos(a);
    c->gy[g] = rho * sin(a);
    c->gr[g] = uni(1.2, 2.4);
    c->ga[g] = (urand() < 0.5 ? -1 : 1) * uni(10, 25);
  }
}

/* Intensity offset of cell c at offset (dx, dy) from its centre in frame t. */
static double profile(const cell *c, double dx, double dy, int t)
{
  double d = hypot(dx, dy), r = c->r;
  switch (fam) {
  case F_BRIGHT: return c->amp * sig(d, r - 0.5, 0.6);
  case F_HALO: return -c->amp * sig(d, r - 2.5, 0.6) + c->amp2 * exp(-(d - r + 1) * (d - r + 1) / (2 * 1.1 * 1.1));
  case F_FLUO: return c->amp * sig(d, r - 1, 1.2) * (1 + 0.15 * sin(3 * atan2(dy, dx) + c->ph));
  default: break;
  }
  double v = c->amp2 * sig(d, r - 2.5, 0.5) - c->amp * exp(-(d - r + 1.5) * (d - r + 1.5) / 2.0);
  if (fam == F_TEXTURE && d < r - 2) {
    double rot = c->x[t] / r; /* rolling without slipping */
    double cr = cos(rot), sr = sin(rot);
    for (int g = 0; g < NGRAN; g++) {
      double gx = cr * c->gx[g] - sr * c->gy[g], gy = sr * c->gx[g] + cr * c->gy[g];
      double e = hypot(dx - gx, dy - gy);
      if (e < 2 * c->gr[g]) v += c->ga[g] * exp(-e * e / (2 * c->gr[g] * c->gr[g] / 2));
    }
  }
  return v;
}

static void usage(FILE *f)
{
  fprintf(f, "usage: " PROG " --family NAME --out FILE.y4m --truth FILE.csv [--seed N] [--width W] [--height H]\n"
             "       [--frames N] [--cells N] [--vmin V] [--vmax V] [--real RODINIA.avi]\n"
             "families:");
  for (int i = 0; i < F_N; i++) fprintf(f, " %s", fam_names[i]);
  fprintf(f, "\n");
}

int main(int argc, char **argv)
{
  const char *out = NULL, *truth = NULL, *real = NULL;
  uint64_t seed = 1;
  int vset = 0;
  static const struct option lo[] = {
    {"family", 1, 0, 'f'}, {"out", 1, 0, 'o'}, {"truth", 1, 0, 't'}, {"seed", 1, 0, 's'},
    {"width", 1, 0, 'W'}, {"height", 1, 0, 'H'}, {"frames", 1, 0, 'n'}, {"cells", 1, 0, 'c'},
    {"vmin", 1, 0, 'a'}, {"vmax", 1, 0, 'b'}, {"real", 1, 0, 'r'}, {"help", 0, 0, 'h'}, {0, 0, 0, 0}};
  int o;
  while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
    switch (o) {
    case 'f':
      fam = -1;
      for (int i = 0; i < F_N; i++)
        if (!strcmp(optarg, fam_names[i])) fam = i;
      if (fam < 0) {
        fprintf(stderr, PROG ": error: unknown family '%s'\n", optarg);
        usage(stderr);
        return 2;
      }
      break;
    case 'o': out = optarg; break;
    case 't': truth = optarg; break;
    case 's': seed = strtoull(optarg, NULL, 10); break;
    case 'W': W = atoi(optarg); break;
    case 'H': H = atoi(optarg); break;
    case 'n': NF = atoi(optarg); break;
    case 'c': NC = atoi(optarg); break;
    case 'a': vmin = atof(optarg), vset = 1; break;
    case 'b': vmax = atof(optarg), vset = 1; break;
    case 'r': real = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (!out || !truth || W < 64 || H < 64 || W > 4096 || H > 4096 || NF < 2 || NC < 1 || NC > MAXC / 3 ||
      vmin < 0 || vmax < vmin || (is_real(fam) && !real) || (is_real(fam) && (W > RW || H > RH))) {
    fprintf(stderr, PROG ": error: bad or missing options (real needs --real and W, H <= 640, 480)\n");
    usage(stderr);
    return 2;
  }
  if (fam == F_FAST && !vset) vmin = 3, vmax = 8;
  /* realref draws as real does (the same motions and looks but the patch) */
  rng_s = seed * 0x2545f4914f6cdd1dULL + (uint64_t)(fam == F_REALREF ? F_REAL : fam) * 7919;

  float *realimg = NULL, *realbg = NULL;
  int ox = 0, oy = 0;
  if (is_real(fam)) {
    realimg = malloc(sizeof *realimg * RW * RH);
    realbg = malloc(sizeof *realbg * RW * RH);
    if (read_real(real, realimg)) return 3;
    inpaint(realimg, realbg);
    ox = (RW - W) / 2;
    oy = 110 + (219 - H) / 2 > 0 ? 110 + (219 - H) / 2 : 0;
    if (oy + H > RH) oy = RH - H;
  }

  /* vessel walls (clutter): rows above wtop(x) and below wbot(x) are tissue */
  double wph = uni(0, PI2), wall = fam == F_CLUTTER ? 10 : 0;
  cell *cs = calloc(MAXC, sizeof *cs);
  for (int i = 0; i < MAXC; i++) {
    cs[i].x = malloc(sizeof(double) * NF);
    cs[i].y = malloc(sizeof(double) * NF);
  }
  int n = 0;
  double ylo = wall + 4, yhi = H - wall - 4;
  for (int want = 0; want < 2 * NC; want++) {
    for (int tries = 0; tries < 300; tries++) {
      cell *c = &cs[n];
      new_look(c);
      double x0 = want < NC ? uni(c->r, W - c->r) : -c->r - 2 - c->v0 * uni(0, 0.6 * NF);
      double y0 = uni(ylo + c->r, yhi - c->r);
      move(c, x0, y0);
      if (c->y[NF - 1] < ylo + c->r || c->y[NF - 1] > yhi - c->r || !clear_of(cs, n, c, -1)) continue;
      n++;
      if (fam == F_TOUCH && urand() < 0.8 && n < MAXC) { /* a partner beside it, rims touching */
        cell *p = &cs[n];
        double keep_r;
        new_look(p);
        keep_r = p->r;
        p->v0 = c->v0, p->ang = c->ang, p->per = c->per, p->ph = c->ph, p->r = keep_r;
        double side = urand() < 0.5 ? -1 : 1, gap = uni(-1, 1), along = uni(-0.4, 0.4) * (c->r + p->r);
        double off = sqrt(fmax(0, (c->r + p->r + gap) * (c->r + p->r + gap) - along * along));
        move(p, x0 + along, y0 + side * off);
        if (p->y[NF - 1] > ylo + p->r && p->y[NF - 1] < yhi - p->r && clear_of(cs, n, p, n - 1)) {
          p->partner = n - 1;
          c->partner = n;
          n++;
        }
      }
      break;
    }
  }
  /* adherent cells and debris */
  if (fam == F_CLUTTER) {
    for (int k = 0; k < 2 + 8 + 4; k++)
      for (int tries = 0; tries < 300; tries++) {
        cell *c = &cs[n];
        new_look(c);
        c->v0 = 0;
        if (k >= 2) { /* debris: small, not a cell; the last 4 drift */
          c->truth = 0;
          c->r = uni(2, 4);
          c->amp = uni(20, 50) * (urand() < 0.5 ? -1 : 1);
          c->amp2 = 0;
          if (k >= 10) c->v0 = uni(0.5, 1.5);
        }
        move(c, uni(c->r + 2, W - c->r - 2), uni(ylo + c->r, yhi - c->r));
        if (!clear_of(cs, n, c, -1)) continue;
        n++;
        break;
      }
  }

  FILE *fv = fopen(out, "wb"), *ft = fopen(truth, "w");
  if (!fv || !ft) {
    fprintf(stderr, PROG ": error: cannot write '%s' or '%s'\n", out, truth);
    return 3;
  }
  fprintf(fv, "YUV4MPEG2 W%d H%d F10:1 Ip A1:1 Cmono\n", W, H);
  fprintf(ft, "frame,cell_id,x_px,y_px,radius_px,vx_px,vy_px\n");
  float *bgimg = malloc(sizeof *bgimg * W * H), *img = malloc(sizeof *img * W * H);
  unsigned char *px = malloc((size_t)W * H);
  /* static background */
  double fa[3], fx[3], fy[3], fp[3];
  for (int k = 0; k < 3; k++) fa[k] = uni(2, 4), fx[k] = uni(-1, 1) / uni(40, 200), fy[k] = uni(-1, 1) / uni(40, 200), fp[k] = uni(0, PI2);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      double b;
      if (is_real(fam)) {
        b = realbg[(y + oy) * RW + x + ox];
      } else {
        b = fam == F_FLUO ? 25 : 135;
        for (int k = 0; k < 3; k++) b += fa[k] * sin(PI2 * (fx[k] * x + fy[k] * y) + fp[k]);
        b += 1.5 * gauss();
        if (fam == F_CLUTTER) {
          double wt = wall + 4 * sin(x / 37.0 + wph), wb = H - wall - 4 * sin(x / 53.0 + 2 * wph);
          b += -35 * (sig(y, wt, 1.0)) + 20 * exp(-(y - wt - 2) * (y - wt - 2) / 4.0);
          b += -35 * (1 - sig(y, wb, 1.0)) + 20 * exp(-(y - wb + 2) * (y - wb + 2) / 4.0);
        }
      }
      bgimg[y * W + x] = (float)b;
    }
  if (!is_real(fam)) blur(bgimg, W, H, 1.0);
  double noise = fam == F_DRIFT ? 7 : is_real(fam) ? 2 : 3;

  for (int t = 0; t < NF; t++) {
    memcpy(img, bgimg, sizeof *img * W * H);
    for (int i = 0; i < n; i++) {
      const cell *c = &cs[i];
      if (!visible(c, t)) continue;
      double rr = c->r + 5;
      for (int y = (int)floor(c->y[t] - rr); y <= (int)ceil(c->y[t] + rr); y++)
        for (int x = (int)floor(c->x[t] - rr); x <= (int)ceil(c->x[t] + rr); x++) {
          if (x < 0 || y < 0 || x >= W || y >= H) continue;
          double dx = x - c->x[t], dy = y - c->y[t];
          if (is_real(fam)) {
            double d = hypot(dx, dy), a = fmin(1, fmax(0, (c->r + 4 - d) / 3));
            if (a <= 0) continue;
            double sx = real_cells[c->patch][0] + dx, sy = real_cells[c->patch][1] + dy;
            img[y * W + x] += (float)(a * (bilin(realimg, RW, RH, sx, sy) - bilin(realbg, RW, RH, sx, sy)));
          } else if (c->truth) {
            img[y * W + x] += (float)profile(c, dx, dy, t);
          } else { /* debris: a small soft spot */
            img[y * W + x] += (float)(c->amp * sig(hypot(dx, dy), c->r, 0.5));
          }
        }
    }
    if (fam == F_BLUR) blur(img, W, H, 2.0);
    double gain = 1, flick = 0;
    if (fam == F_DRIFT) gain = 0.8 + 0.4 * t / (NF - 1), flick = 0.04 * gauss();
    for (int y = 0; y < H; y++)
      for (int x = 0; x < W; x++) {
        double v = img[y * W + x];
        if (fam == F_DRIFT) v *= gain * (1 + flick + 0.15 * sin(PI2 * (x / (double)W - t / (double)NF)));
        if (fam == F_FLUO) v += sqrt(fmax(v, 0)) * 1.2 * gauss();
        else v += noise * gauss();
        v = floor(v + 0.5);
        px[y * W + x] = (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
      }
    fprintf(fv, "FRAME\n");
    fwrite(px, 1, (size_t)W * H, fv);
    for (int i = 0; i < n; i++) {
      const cell *c = &cs[i];
      if (!c->truth || c->x[t] < 0 || c->x[t] > W - 1 || c->y[t] < 0 || c->y[t] > H - 1) continue;
      int t2 = t + 1 < NF ? t + 1 : t, t1 = t2 - 1;
      fprintf(ft, "%d,%d,%.6f,%.6f,%.6f,%.6f,%.6f\n", t, i, c->x[t], c->y[t], c->r, c->x[t2] - c->x[t1],
              c->y[t2] - c->y[t1]);
    }
  }
  int bad = ferror(fv) || ferror(ft);
  bad |= fclose(fv) != 0;
  bad |= fclose(ft) != 0;
  if (bad) {
    fprintf(stderr, PROG ": error: write failed\n");
    return 3;
  }
  for (int i = 0; i < MAXC; i++) free(cs[i].x), free(cs[i].y);
  free(cs);
  free(bgimg);
  free(img);
  free(px);
  free(realimg);
  free(realbg);
  return 0;
}

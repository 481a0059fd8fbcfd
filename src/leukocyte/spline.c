/* spline.c - detection refinement: a closed periodic cubic B-spline snake
 * fitted to the initial circle and moved by the gradient along its normals
 * (seeds/000 section 4.2; algorithm spec 4.2-4.7, "splineenergyform01").
 *
 * 36 points of a circle -> least-squares fit of 9 control points through
 * A = (B^T B)^-1 B^T, B = the 36x9 uniform cubic B-spline design matrix
 * (4 samples per segment). Each of snake_iter iterations samples the spline
 * (X, Xs, Y, Ys), probes the image gradient at X +- delta*N on both sides of
 * the contour, accumulates the energy derivative per control point and
 * updates ALL nine control points: C <- C + sigma*dt*dC (sigma = sign of the
 * cell's GICOV). The reference updated only control point 0 (Q2) and probed
 * one side twice (Q4); both fixed here. The initial circle is exactly
 * uniformly spaced, so the reference's uniform re-segmentation is the
 * identity (without its off-by-one, Q3) and is not needed. */
#include <math.h>
#include <string.h>

#include "interp.h"
#include "leuk.h"

#define NS 4 /* samples per segment */
#define NP (LT_LEUK_CTRL * NS)

static double basis[4][NS], dbasis[4][NS]; /* a,b,c,d and derivatives at s=j/4 */
static double fitA[LT_LEUK_CTRL][NP];      /* (B^T B)^-1 B^T */
static int tables_ready;
static void make_tables(void);

void lt_spline_tables(double b[4][4], double db[4][4], double fit[LT_LEUK_CTRL][LT_LEUK_DET_POINTS])
{
  #pragma omp critical(lt_spline_tables)
  if (!tables_ready) make_tables();
  memcpy(b, basis, sizeof basis);
  memcpy(db, dbasis, sizeof dbasis);
  memcpy(fit, fitA, sizeof fitA);
}

static void make_tables(void)
{
  for (int j = 0; j < NS; j++) {
    double s = (double)j / NS, s2 = s * s, s3 = s2 * s;
    basis[0][j] = (-s3 + 3 * s2 - 3 * s + 1) / 6;
    basis[1][j] = (3 * s3 - 6 * s2 + 4) / 6;
    basis[2][j] = (-3 * s3 + 3 * s2 + 3 * s + 1) / 6;
    basis[3][j] = s3 / 6;
    dbasis[0][j] = (-3 * s2 + 6 * s - 3) / 6;
    dbasis[1][j] = (9 * s2 - 12 * s) / 6;
    dbasis[2][j] = (-9 * s2 + 6 * s + 3) / 6;
    dbasis[3][j] = 3 * s2 / 6;
  }
  double B[NP][LT_LEUK_CTRL];
  memset(B, 0, sizeof B);
  for (int i = 0; i < LT_LEUK_CTRL; i++)
    for (int j = 0; j < NS; j++)
      for (int q = 0; q < 4; q++) B[i * NS + j][(i - 1 + q + LT_LEUK_CTRL) % LT_LEUK_CTRL] += basis[q][j];
  /* Gauss-Jordan on [B^T B | B^T]. */
  double M[LT_LEUK_CTRL][LT_LEUK_CTRL + NP];
  for (int r = 0; r < LT_LEUK_CTRL; r++) {
    for (int c = 0; c < LT_LEUK_CTRL; c++) {
      double acc = 0;
      for (int k = 0; k < NP; k++) acc += B[k][r] * B[k][c];
      M[r][c] = acc;
    }
    for (int k = 0; k < NP; k++) M[r][LT_LEUK_CTRL + k] = B[k][r];
  }
  for (int c = 0; c < LT_LEUK_CTRL; c++) {
    int piv = c;
    for (int r = c + 1; r < LT_LEUK_CTRL; r++)
      if (fabs(M[r][c]) > fabs(M[piv][c])) piv = r;
    if (piv != c)
      for (int k = 0; k < LT_LEUK_CTRL + NP; k++) {
        double t = M[c][k];
        M[c][k] = M[piv][k];
        M[piv][k] = t;
      }
    double d = M[c][c];
    for (int k = 0; k < LT_LEUK_CTRL + NP; k++) M[c][k] /= d;
    for (int r = 0; r < LT_LEUK_CTRL; r++) {
      if (r == c) continue;
      double f = M[r][c];
      for (int k = 0; k < LT_LEUK_CTRL + NP; k++) M[r][k] -= f * M[c][k];
    }
  }
  for (int r = 0; r < LT_LEUK_CTRL; r++)
    for (int k = 0; k < NP; k++) fitA[r][k] = M[r][LT_LEUK_CTRL + k];
  tables_ready = 1;
}

/* Spline samples and their parameter derivatives from control points C. */
static void sample(const double *C, double *X, double *Xs)
{
  for (int i = 0; i < LT_LEUK_CTRL; i++)
    for (int j = 0; j < NS; j++) {
      double v = 0, dv = 0;
      for (int q = 0; q < 4; q++) {
        double c = C[(i - 1 + q + LT_LEUK_CTRL) % LT_LEUK_CTRL];
        v += basis[q][j] * c;
        dv += dbasis[q][j] * c;
      }
      X[i * NS + j] = v;
      Xs[i * NS + j] = dv;
    }
}

int lt_spline_refine(const float *gx, const float *gy, int w, int h, double x0, double y0,
                     double r0, int sign, const lt_leuk_params *p, int x_off, int y_off,
                     int fw, int fh, double *xc, double *yc, double *rc)
{
  #pragma omp critical(lt_spline_tables)
  if (!tables_ready) make_tables();

  double px[NP], py[NP], Cx[LT_LEUK_CTRL], Cy[LT_LEUK_CTRL];
  for (int k = 0; k < NP; k++) {
    double t = k * 2.0 * M_PI / NP;
    px[k] = x0 + r0 * cos(t);
    py[k] = y0 + r0 * sin(t);
  }
  for (int r = 0; r < LT_LEUK_CTRL; r++) {
    double ax = 0, ay = 0;
    for (int k = 0; k < NP; k++) {
      ax += fitA[r][k] * px[k];
      ay += fitA[r][k] * py[k];
    }
    Cx[r] = ax;
    Cy[r] = ay;
  }
  const double delta = p->snake_delta, step = (sign >= 0 ? 1.0 : -1.0) * p->snake_dt;
  double X[NP], Xs[NP], Y[NP], Ys[NP];
  for (int it = 0; it < p->snake_iter; it++) {
    sample(Cx, X, Xs);
    sample(Cy, Y, Ys);
    double dCx[LT_LEUK_CTRL] = {0}, dCy[LT_LEUK_CTRL] = {0};
    for (int i = 0; i < LT_LEUK_CTRL; i++)
      for (int j = 0; j < NS; j++) {
        int k = i * NS + j;
        double D = sqrt(Xs[k] * Xs[k] + Ys[k] * Ys[k]);
        if (!(D > 0)) continue;
        double D3 = D * D * D, Nx = Ys[k] / D, Ny = -Xs[k] / D;
        double X1 = X[k] + delta * Nx, Y1 = Y[k] + delta * Ny;
        double X2 = X[k] - delta * Nx, Y2 = Y[k] - delta * Ny;
        double Ix1 = lt_interp(gx, w, h, X1, Y1), Iy1 = lt_interp(gy, w, h, X1, Y1);
        double Ix2 = lt_interp(gx, w, h, X2, Y2), Iy2 = lt_interp(gy, w, h, X2, Y2);
        double XY = Xs[k] * Ys[k], XX = Xs[k] * Xs[k], YY = Ys[k] * Ys[k];
        for (int q = 0; q < 4; q++) {
          int c = (i - 1 + q + LT_LEUK_CTRL) % LT_LEUK_CTRL;
          double A = basis[q][j], Bd = dbasis[q][j];
          double Tx1 = A - delta * XY * Bd / D3, Tx2 = -delta * (Bd / D - XX * Bd / D3);
          double Tx3 = A + delta * XY * Bd / D3, Tx4 = delta * (Bd / D - XX * Bd / D3);
          double Ty1 = delta * (Bd / D - YY * Bd / D3), Ty2 = A + delta * XY * Bd / D3;
          double Ty3 = -delta * (Bd / D - YY * Bd / D3), Ty4 = A - delta * XY * Bd / D3;
          dCx[c] += Tx1 * Ix1 + Tx2 * Iy1 - Tx3 * Ix2 - Tx4 * Iy2;
          dCy[c] += Ty1 * Ix1 + Ty2 * Iy1 - Ty3 * Ix2 - Ty4 * Iy2;
        }
      }
    for (int c = 0; c < LT_LEUK_CTRL; c++) {
      Cx[c] += step * dCx[c];
      Cy[c] += step * dCy[c];
    }
  }
  sample(Cx, X, Xs);
  sample(Cy, Y, Ys);
  double mx = 0, my = 0;
  for (int c = 0; c < LT_LEUK_CTRL; c++) {
    mx += Cx[c];
    my += Cy[c];
  }
  mx /= LT_LEUK_CTRL;
  my /= LT_LEUK_CTRL;
  double mr = 0;
  int inside = 1;
  for (int k = 0; k < NP; k++) {
    mr += hypot(X[k] - mx, Y[k] - my);
    double fx = X[k] + x_off, fy = Y[k] + y_off;
    if (!(fx > p->border && fy > p->border && fx < fw - p->border && fy < fh - p->border)) inside = 0;
  }
  *xc = mx + x_off;
  *yc = my + y_off;
  *rc = mr / NP;
  return inside ? 0 : 1;
}

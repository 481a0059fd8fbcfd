/* fmaexact.h - fmaf (a * b + c rounded once, to nearest even) without FMA
 * hardware, in double, bit for bit what a hardware fused multiply-add gives
 * for every float input (gicov.c uses it on x86 CPUs without FMA, where
 * libm's fmaf is a slow software routine).
 *
 * Why it is exact:
 * - p = (double)a * b is exact: 24 + 24 significant bits <= 53, and the
 *   product of two finite floats (2^-298 <= |p| < 2^256, or 0) neither
 *   overflows nor underflows in double.
 * - s = p + c and TwoSum's e = (p - (s - bb)) + (c - bb), bb = s - p, give
 *   s + e = p + c exactly (no overflow possible). p and c are multiples of
 *   2^-298, so a nonzero sum is >= 2^-298: s is a normal double.
 * - Round to odd: when e != 0 (inexact), the double neighbour of p + c whose
 *   last mantissa bit is 1: s stepped toward zero first when |s| > |p + c|
 *   (s and e of opposite signs), then the last bit set. Converting that to
 *   float rounds p + c correctly, because the double grid there is at least
 *   2^(53-24) = 2^29 times finer than the float grid, also for subnormal
 *   float results (their grid is 2^-149, the double's at 2^-298 or above
 *   at most 2^-350) and for the overflow threshold (FLT_MAX + half an ulp):
 *   the float grid points and midpoints are even multiples of the double's
 *   ulp, and an odd one lies strictly between the same two of them as
 *   p + c, so (float) rounds both the same way.
 * - Signed zeros: p carries the product's exact sign (a zero product of
 *   nonzero floats cannot happen), p + c = 0 in double gives -0 only for
 *   -0 + -0, as fmaf does; e is then 0 and s stays. A nonzero p + c never
 *   rounds to a double zero, and (float) keeps the sign of a result that
 *   underflows to zero.
 * - Infinities and NaN: e is NaN, the test fabs(e) > 0 is false and s (inf
 *   or NaN) is converted unchanged.
 * The code relies on ISO C's FP rules: no contraction of the double
 * operations into fused ones (the Makefile's -std=c11 has contraction off)
 * and no x87 excess precision (x86-64: SSE2). tests/test_fmaexact.c checks
 * it against libm's fmaf on random and hard cases. */
#ifndef LT_FMAEXACT_H
#define LT_FMAEXACT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

static inline float lt_fmaf_exact(float a, float b, float c)
{
  const double p = (double)a * b, cd = c;
  const double s = p + cd, bb = s - p;
  const double e = (p - (s - bb)) + (cd - bb);
  uint64_t us, ue;
  memcpy(&us, &s, sizeof us);
  memcpy(&ue, &e, sizeof ue);
  const uint64_t inexact = fabs(e) > 0.0;
  /* toward zero when |s| > |p + c| (signs differ), then the last bit odd */
  us = (us - (inexact & ((us ^ ue) >> 63))) | inexact;
  double r;
  memcpy(&r, &us, sizeof r);
  return (float)r;
}

#endif

/* test_fmaexact.c - lt_fmaf_exact (src/leukocyte/fmaexact.h, the GICOV's
 * fused multiply-add on x86 CPUs without FMA) against libm's fmaf, bit for
 * bit: random bit patterns over every exponent (subnormals, zeros,
 * infinities and NaN among them), products that cancel c exactly or
 * nearly, sums at and next to a float halfway point far below double
 * precision (where rounding p + c to double first, then to float, is
 * wrong), subnormal results and signed zeros. On a CPU with FMA libm's
 * fmaf is the hardware instruction; elsewhere glibc's correctly rounded
 * software one. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fmaexact.h"
#include "test.h"

static uint64_t rng = 0x9e3779b97f4a7c15u;

static uint64_t next(void) /* splitmix64 */
{
  uint64_t z = (rng += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static float from_bits(uint32_t u)
{
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

static uint32_t bits(float f)
{
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* a float of random sign and mantissa with exponent field e (0: subnormal) */
static float rand_float(int e)
{
  return from_bits((uint32_t)(next() & 0x807fffffu) | (uint32_t)e << 23);
}

typedef struct {
  long n, bad;
  float a, b, c; /* the first mismatch */
} tally;

static void check(tally *t, float a, float b, float c)
{
  const float want = fmaf(a, b, c), got = lt_fmaf_exact(a, b, c);
  t->n++;
  if (bits(got) == bits(want) || (isnan(got) && isnan(want))) return;
  if (!t->bad++) {
    t->a = a;
    t->b = b;
    t->c = c;
  }
}

static void report(const char *name, const tally *t)
{
  T_CHECK(name, t->bad == 0, "%ld of %ld differ, first fmaf(%a, %a, %a) = %a, emulation %a", t->bad, t->n,
          (double)t->a, (double)t->b, (double)t->c, (double)fmaf(t->a, t->b, t->c),
          (double)lt_fmaf_exact(t->a, t->b, t->c));
}

int main(void)
{
  tally t = {0};
  /* 1. random bits: every exponent, subnormals, zeros, inf and NaN */
  for (long i = 0; i < 4000000; i++) {
    const uint64_t r = next();
    check(&t, from_bits((uint32_t)r), from_bits((uint32_t)(r >> 32)), from_bits((uint32_t)next()));
  }
  report("fmaexact: 4e6 random bit patterns (all exponents, subnormals, inf, NaN) equal libm's fmaf", &t);

  /* 2. exponents chosen so that a * b and c overlap (p ~ c 2^-40..2^40):
   * carries, cancellation and long sums, normal and subnormal results */
  memset(&t, 0, sizeof t);
  for (long i = 0; i < 2000000; i++) {
    const int ea = 1 + (int)(next() % 254), eb = 1 + (int)(next() % 254);
    const int ec = ea + eb - 127 + (int)(next() % 81) - 40;
    check(&t, rand_float(ea), rand_float(eb), rand_float(ec < 0 ? 0 : ec > 254 ? 254 : ec));
  }
  report("fmaexact: 2e6 triples with a*b near c (exponents within 2^40) equal libm's fmaf", &t);

  /* 3. c = -(a*b) rounded, then moved by 0..3 ulps: exact and near
   * cancellation (the result is the product's rounding error or close) */
  memset(&t, 0, sizeof t);
  for (long i = 0; i < 2000000; i++) {
    const float a = rand_float(1 + (int)(next() % 254)), b = rand_float(64 + (int)(next() % 128));
    const float c = from_bits(bits(-(a * b)) + (uint32_t)(next() % 7) - 3u);
    if (isfinite(c)) check(&t, a, b, c);
  }
  report("fmaexact: 2e6 products that cancel c exactly or nearly equal libm's fmaf", &t);

  /* 4. halfway: a = 1 + k 2^-23, b = +-h (1 - j 2^-23) with h half an ulp
   * of c: a b = +-h (1 + (k - j) 2^-23 - k j 2^-46), so p + c lies at a
   * float halfway point (k = j = 0) or next to it by far less than a double
   * ulp of c (k = j): rounding p + c to double first lands on the halfway
   * point and then to even, the wrong way half the time */
  memset(&t, 0, sizeof t);
  for (long i = 0; i < 2000000; i++) {
    const int ec = 1 + (int)(next() % 253);
    const float c = rand_float(ec);
    const int k = (int)(next() % 1024), j = next() & 1 ? k : (int)(next() % 1024);
    const float h = ldexpf(1.0f, ec - 127 - 24); /* half an ulp of c (subnormal for small ec) */
    const float a = 1.0f + ldexpf((float)k, -23), b = (next() & 1 ? h : -h) * (1.0f - ldexpf((float)j, -23));
    check(&t, a, b, c);
  }
  report("fmaexact: 2e6 sums at or beside a float halfway point (ties to even) equal libm's fmaf", &t);

  /* 5. subnormal and tiny results: a * b of 2^-166..2^-58 plus a subnormal
   * or smallest-normal c, and p = +-2^-150 (1 - k^2 2^-46) (half the
   * subnormal ulp, or just below it) plus a subnormal c */
  memset(&t, 0, sizeof t);
  for (long i = 0; i < 1000000; i++) {
    const int ea = 1 + (int)(next() % 40), eb = 127 - 40 + (int)(next() % 70);
    check(&t, rand_float(ea), rand_float(eb), rand_float(next() & 1 ? 0 : 1));
    const float k = ldexpf((float)(next() % 1024), -23);
    const float a = ldexpf(1.0f + k, -75), b = ldexpf(next() & 1 ? 1.0f - k : k - 1.0f, -75);
    check(&t, a, b, rand_float(0));
  }
  report("fmaexact: 2e6 triples with subnormal and tiny results (and subnormal halfway points) equal libm's fmaf", &t);

  /* 6. signed zeros and exact zero sums: every combination of +-0, +-1,
   * +-2^-149 and +-FLT_MAX, and x * 1 + (-x) */
  memset(&t, 0, sizeof t);
  const float v[] = {0.0f, -0.0f, 1.0f, -1.0f, 0x1p-149f, -0x1p-149f, 0x1.fffffep127f, -0x1.fffffep127f};
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++)
      for (int l = 0; l < 8; l++) check(&t, v[i], v[j], v[l]);
  for (long i = 0; i < 100000; i++) {
    const float x = from_bits((uint32_t)next() & 0x7f7fffffu);
    check(&t, x, 1.0f, -x);
    check(&t, -x, 1.0f, x);
    check(&t, x, -1.0f, x);
  }
  int zero_sign = signbit(lt_fmaf_exact(1.0f, 1.0f, -1.0f)) == 0 && signbit(lt_fmaf_exact(-0.0f, 1.0f, -0.0f)) != 0 &&
                  signbit(lt_fmaf_exact(0x1p-100f, -0x1p-100f, 0.0f)) != 0;
  report("fmaexact: signed zeros, x - x and the extremes equal libm's fmaf", &t);
  T_CHECK("fmaexact: 1 * 1 - 1 = +0, -0 * 1 - 0 = -0, -2^-200 + 0 = -0 (underflow keeps the sign)", zero_sign,
          "wrong zero sign");
  T_DONE();
}

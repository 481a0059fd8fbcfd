/* test.h - the minimal harness every C test uses. Each check prints one line
 * "PASS name" / "FAIL name: why" / "SKIP name: why"; tests/run.sh counts the
 * lines of all test programs and prints the closing "N passed, N failed,
 * N skipped" line. A test program exits 1 if any of its checks failed. */
#ifndef LT_TEST_H
#define LT_TEST_H
#include <math.h>
#include <stdio.h>

static int t_failed_ = 0;

#define T_PASS(name) printf("PASS %s\n", name)
#define T_SKIP(name, why) printf("SKIP %s: %s\n", name, why)
#define T_CHECK(name, cond, ...)                                                      \
  do {                                                                                \
    if (cond) {                                                                       \
      printf("PASS %s\n", name);                                                      \
    } else {                                                                          \
      printf("FAIL %s: ", name);                                                      \
      printf(__VA_ARGS__);                                                            \
      printf(" (%s:%d)\n", __FILE__, __LINE__);                                       \
      t_failed_++;                                                                    \
    }                                                                                 \
  } while (0)
/* |got - want| <= atol + rtol*|want| */
#define T_NEAR(name, got, want, atol, rtol)                                           \
  do {                                                                                \
    double g_ = (got), w_ = (want);                                                   \
    T_CHECK(name, fabs(g_ - w_) <= (atol) + (rtol)*fabs(w_), "got %.9g want %.9g", g_, \
            w_);                                                                      \
  } while (0)
#define T_DONE() return t_failed_ ? 1 : 0
#endif

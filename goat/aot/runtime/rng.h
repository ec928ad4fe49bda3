/* goat's seeded random draws in C: rand, randn and sample_rows with the same bits as
 * goat/ops/rng.py and the sample_rows op of goat/ops/builtins.py (NumPy back end).
 *
 * A draw depends on (seed, cell number) only, never on the shape beyond its cell count, so
 * the generators take a cell count; cells are numbered in row-major order.
 *
 * rng.c must be compiled without floating-point contraction or value-changing
 * optimisations (-ffp-contract=off; never -ffast-math): it turns contraction off itself
 * where the compiler allows (GCC, Clang) and refuses to compile under -ffast-math or with
 * excess precision (FLT_EVAL_METHOD other than 0, 16 or 32).  It calls sqrt (link with -lm), never log/cos.
 */
#ifndef GOAT_RNG_H
#define GOAT_RNG_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The seed as rng.check_seed returns it, from a one-element value: a whole number
 * 0 <= seed < 2**53.  Anything else (2.5, -1, 2**53, nan, inf) is goat_fail(site, "%s",
 * "a seed must be a whole number from 0 to 9007199254740991, got <seed>"), <seed> spelt as
 * check_seed spells it (goat_format_seed). */
uint64_t goat_check_seed(double seed, const char *site);

/* rng.uniform(xp, shape, seed) for any shape of `cells` cells, in row-major order: cell k
 * is (mix(key + (k+1) * GOLDEN) >> 11) * 2**-53, key = mix((1 << 53) | seed).  `seed`
 * already checked (goat_check_seed).  cells <= 0 writes nothing. */
void goat_rand(double *out, int64_t cells, uint64_t seed);

/* rng.normal(xp, shape, seed) for any shape of `cells` cells, in row-major order
 * (Box-Muller with rng.py's own ln and cos_2pi). */
void goat_randn(double *out, int64_t cells, uint64_t seed);

/* The op sample_rows(p, seed) on p viewed as rows x cols (row-major; rows = the product of
 * p's leading dimensions, 1 for a vector): one column index per row, as a double, into
 * out[0 .. rows).  Row r's draw is goat_rand's cell r.  `seed` already checked.  Weights
 * that are negative or NaN, or a row without a positive weight, are goat_fail(site, "%s",
 * the op's message), naming the first such row.  (cols == 0 with rows > 0 reports row 0 as
 * "[]"; the Python op divides by zero there instead.) */
void goat_sample_rows(double *out, const double *p, int64_t rows, int64_t cols,
                      uint64_t seed, const char *site);

/* A seed as check_seed's message spells it (Python's str(int(v)) for a whole number below
 * 2**63 in magnitude, else repr(v): 2.5, 1e+300, nan, inf, -inf) into buf, NUL-terminated.
 * At most 32 bytes are written.  Exposed for goat_check_seed's tests. */
void goat_format_seed(double v, char buf[32]);

#ifdef __cplusplus
}
#endif
#endif

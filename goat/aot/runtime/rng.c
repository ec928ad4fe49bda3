/* goat's seeded random draws (rand, randn, sample_rows), bit for bit as goat/ops/rng.py and
 * the sample_rows op (goat/ops/builtins.py) compute them with NumPy.  The recipe is rng.py's
 * module docstring; every float operation below is one correctly rounded IEEE operation, in
 * the same order as there, so nothing may be fused (FMA) or reassociated. */

/* No contraction of a * b + c into a fused multiply-add, whatever the command line says. */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#else
#pragma STDC FP_CONTRACT OFF
#endif

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goat_rt.h"
#include "rng.h"

#if defined(__FAST_MATH__)
#error "rng.c must not be compiled with -ffast-math: goat's random draws would change bits"
#endif
/* float and double each evaluated in its own type: 0 (C99), or 16 or 32 (ISO/IEC TS 18661-3:
 * only types narrower than _Float16/_Float32 are widened -- GCC says 16 where the processor
 * has AVX512-FP16 and -march=native is given) */
#if !defined(FLT_EVAL_METHOD) || (FLT_EVAL_METHOD != 0 && FLT_EVAL_METHOD != 16 \
                                  && FLT_EVAL_METHOD != 32)
#error "rng.c needs float and double arithmetic without excess precision (FLT_EVAL_METHOD 0)"
#endif

#define SEED_LIMIT 9007199254740992.0           /* 2**53 */
#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)
#define M1 UINT64_C(0xBF58476D1CE4E5B9)
#define M2 UINT64_C(0x94D049BB133111EB)
#define STREAM_UNIFORM UINT64_C(1)
#define STREAM_NORMAL UINT64_C(2)

static const double SQRT_HALF = 0x1.6a09e667f3bcdp-1;
static const double LN2_HI = 0x1.62e42feep-1;
static const double LN2_LO = 0x1.a39ef35793c76p-33;
static const double PIO2 = 0x1.921fb54442d18p+0;
static const double TWO_M53 = 0x1p-53;
static const double TWO_M51 = 0x1p-51;
static const double TWO_50 = 0x1p+50;

/* rng.LOG_COEFFS: the float64 nearest 1/(2j+1), j = 0..10 */
static const double LOG_COEFFS[11] = {
    0x1.0000000000000p+0, 0x1.5555555555555p-2, 0x1.999999999999ap-3, 0x1.2492492492492p-3,
    0x1.c71c71c71c71cp-4, 0x1.745d1745d1746p-4, 0x1.3b13b13b13b14p-4, 0x1.1111111111111p-4,
    0x1.e1e1e1e1e1e1ep-5, 0x1.af286bca1af28p-5, 0x1.8618618618618p-5,
};
/* rng.COS_COEFFS: the float64 nearest (-1)**j / (2j)!, j = 0..8 */
static const double COS_COEFFS[9] = {
    0x1.0000000000000p+0, -0x1.0000000000000p-1, 0x1.5555555555555p-5,
    -0x1.6c16c16c16c17p-10, 0x1.a01a01a01a01ap-16, -0x1.27e4fb7789f5cp-22,
    0x1.1eed8eff8d898p-29, -0x1.93974a8c07c9dp-37, 0x1.ae7f3e733b81fp-45,
};
/* rng.SIN_COEFFS: the float64 nearest (-1)**j / (2j+1)!, j = 0..8 */
static const double SIN_COEFFS[9] = {
    0x1.0000000000000p+0, -0x1.5555555555555p-3, 0x1.1111111111111p-7,
    -0x1.a01a01a01a01ap-13, 0x1.71de3a556c734p-19, -0x1.ae64567f544e4p-26,
    0x1.6124613a86d09p-33, -0x1.ae7f3e733b81fp-41, 0x1.952c77030ad4ap-49,
};

/* ---------------------------------------------------------------- seeds */

/* One decimal candidate: `nd` digits (no point) times 10**(exp10 - nd + 1), i.e. the
 * scientific d.ddd e exp10.  Returns the double it reads as. */
static double read_digits(const char *digits, int nd, int exp10)
{
    char text[48];
    int n = 0;
    text[n++] = digits[0];
    if (nd > 1) {
        text[n++] = '.';
        memcpy(text + n, digits + 1, (size_t)(nd - 1));
        n += nd - 1;
    }
    snprintf(text + n, sizeof text - (size_t)n, "e%d", exp10);
    return strtod(text, NULL);
}

/* digits +- one unit in the last place (nd digits, exponent adjusted on carry/borrow);
 * returns 0 if that leaves nd digits impossible (never for the values used here). */
static int step_digits(char *digits, int nd, int *exp10, int up)
{
    int i = nd - 1;
    if (up) {
        while (i >= 0 && digits[i] == '9')
            digits[i--] = '0';
        if (i < 0) {                     /* 9.99 -> 10.0: 1.00 with exponent + 1 */
            digits[0] = '1';
            *exp10 += 1;
            return 1;
        }
        digits[i]++;
        return 1;
    }
    while (i >= 0 && digits[i] == '0')
        digits[i--] = '9';
    if (i < 0)
        return 0;
    digits[i]--;
    if (digits[0] == '0') {              /* 1.00 -> 0.99: 9.99 with exponent - 1 */
        if (nd == 1)
            return 0;
        memmove(digits, digits + 1, (size_t)(nd - 1));
        digits[nd - 1] = '9';
        *exp10 -= 1;
    }
    return 1;
}

/* Python's repr of a finite, non-zero double: the shortest digits that read back as v (the
 * nearest such string), in Python's layout (fixed for 1e-4 <= |v| < 1e16, else d.ddde+XX). */
static void python_repr(double v, char *buf, size_t size)
{
    char digits[24];
    int nd = 0, exp10 = 0;
    const double a = fabs(v);
    for (int p = 1; p <= 17; p++) {
        char text[40];
        snprintf(text, sizeof text, "%.*e", p - 1, a);     /* correctly rounded (glibc) */
        /* text: d[.ddd]e[+-]XX */
        nd = 0;
        for (const char *c = text; *c != 'e'; c++)
            if (*c != '.')
                digits[nd++] = *c;
        exp10 = atoi(strchr(text, 'e') + 1);
        const double back = read_digits(digits, nd, exp10);
        if (back == a)
            break;
        /* The nearest p-digit string misses; the only other p-digit string that could read
         * back as a lies on a's other side, next to it. */
        char other[24];
        int oexp = exp10;
        memcpy(other, digits, (size_t)nd);
        if (step_digits(other, nd, &oexp, back < a) && read_digits(other, nd, oexp) == a) {
            memcpy(digits, other, (size_t)nd);
            exp10 = oexp;
            break;
        }
    }
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    char out[48];
    int n = 0;
    if (signbit(v))
        out[n++] = '-';
    const int decpt = exp10 + 1;         /* value = 0.DIGITS * 10**decpt */
    if (decpt > -4 && decpt <= 16) {
        if (decpt <= 0) {
            out[n++] = '0';
            out[n++] = '.';
            for (int i = 0; i < -decpt; i++)
                out[n++] = '0';
            memcpy(out + n, digits, (size_t)nd);
            n += nd;
        } else if (decpt >= nd) {
            memcpy(out + n, digits, (size_t)nd);
            n += nd;
            for (int i = nd; i < decpt; i++)
                out[n++] = '0';
            out[n++] = '.';
            out[n++] = '0';
        } else {
            memcpy(out + n, digits, (size_t)decpt);
            n += decpt;
            out[n++] = '.';
            memcpy(out + n, digits + decpt, (size_t)(nd - decpt));
            n += nd - decpt;
        }
        out[n] = '\0';
    } else {
        out[n++] = digits[0];
        if (nd > 1) {
            out[n++] = '.';
            memcpy(out + n, digits + 1, (size_t)(nd - 1));
            n += nd - 1;
        }
        snprintf(out + n, sizeof out - (size_t)n, "e%c%02d", exp10 < 0 ? '-' : '+',
                 exp10 < 0 ? -exp10 : exp10);
    }
    snprintf(buf, size, "%s", out);
}

void goat_format_seed(double v, char buf[32])
{
    /* rng._format_seed: str(int(v)) for a whole number below 2**63 in magnitude, else
     * repr(v) */
    if (isnan(v)) {
        snprintf(buf, 32, "%s", signbit(v) ? "-nan" : "nan");     /* as a print shows it */
    } else if (isinf(v)) {
        snprintf(buf, 32, "%s", v < 0 ? "-inf" : "inf");
    } else if (fabs(v) < 0x1p63 && (double)(int64_t)v == v) {
        snprintf(buf, 32, "%" PRId64, (int64_t)v);
    } else {
        python_repr(v, buf, 32);
    }
}

uint64_t goat_check_seed(double seed, const char *site)
{
    /* NaN fails every comparison; inf fails < 2**53; the cast is only made in range */
    if (seed >= 0.0 && seed < SEED_LIMIT && (double)(uint64_t)seed == seed)
        return (uint64_t)seed;
    char got[32];
    goat_format_seed(seed, got);
    goat_fail(site, "a seed must be a whole number from 0 to 9007199254740991, got %s", got);
}

/* ---------------------------------------------------------------- the bits */

static inline uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * M1;
    z = (z ^ (z >> 27)) * M2;
    return z ^ (z >> 31);
}

static inline uint64_t stream_key(uint64_t stream, uint64_t seed)
{
    return mix((stream << 53) | seed);
}

/* mix(key + c * GOLDEN) >> 11: an integer in [0, 2**53) */
static inline uint64_t hi53(uint64_t key, uint64_t counter)
{
    return mix(counter * GOLDEN + key) >> 11;
}

/* rng.ln for a positive finite double, operation for operation. */
static double goat_ln(double u)
{
    int e;
    double m = frexp(u, &e);             /* exact: u = m * 2**e, 0.5 <= m < 1 */
    if (m < SQRT_HALF) {
        m = m * 2.0;
        e = e - 1;
    }
    const double s = (m - 1.0) / (m + 1.0);
    const double w = s * s;
    double p = LOG_COEFFS[10];
    for (int j = 9; j >= 0; j--) {       /* p = p * w + L[j]: two roundings */
        p = p * w;
        p = p + LOG_COEFFS[j];
    }
    const double t = s * p;
    const double lm = t + t;
    const double ef = (double)e;
    const double hi = ef * LN2_HI;
    double lo = ef * LN2_LO;
    lo = lo + lm;
    return hi + lo;
}

/* rng.cos_2pi: cos(2 pi n / 2**53) for an integer 0 <= n < 2**53. */
static double goat_cos_2pi(uint64_t n)
{
    const uint64_t t = n + (UINT64_C(1) << 50);
    const uint64_t q = (t >> 51) & 3;
    double f = (double)(t & ((UINT64_C(1) << 51) - 1));     /* exact: below 2**51 */
    f = f - TWO_50;
    f = f * TWO_M51;
    const double x = f * PIO2;
    const double y = x * x;
    double c = COS_COEFFS[8];
    for (int j = 7; j >= 0; j--) {
        c = c * y;
        c = c + COS_COEFFS[j];
    }
    double s = SIN_COEFFS[8];
    for (int j = 7; j >= 0; j--) {
        s = s * y;
        s = s + SIN_COEFFS[j];
    }
    const double sn = x * s;
    switch (q) {
    case 0: return c;
    case 1: return -sn;
    case 2: return -c;
    default: return sn;
    }
}

void goat_rand(double *out, int64_t cells, uint64_t seed)
{
    const uint64_t key = stream_key(STREAM_UNIFORM, seed);
    for (int64_t k = 0; k < cells; k++)
        out[k] = (double)hi53(key, (uint64_t)k + 1) * TWO_M53;
}

void goat_randn(double *out, int64_t cells, uint64_t seed)
{
    const uint64_t key = stream_key(STREAM_NORMAL, seed);
    for (int64_t k = 0; k < cells; k++) {
        const uint64_t k2 = (uint64_t)k * 2;
        const uint64_t n1 = hi53(key, k2 + 1);
        const uint64_t n2 = hi53(key, k2 + 2);
        const double u1 = (double)(n1 + 1) * TWO_M53;       /* (0, 1]; n1 + 1 <= 2**53 exact */
        const double l = goat_ln(u1);
        const double a = -2.0 * l;
        const double r = sqrt(a);        /* sqrt(-0.0) is -0.0, as NumPy's */
        const double cs = goat_cos_2pi(n2);
        out[k] = r * cs;
    }
}

/* ---------------------------------------------------------------- sample_rows */

static void format_number(char *buf, size_t size, double x)
{
    /* goat/interp/printer.py format_number: C's %g, glibc's nan / -nan */
    snprintf(buf, size, "%g", x);
}

void goat_sample_rows(double *out, const double *p, int64_t rows, int64_t cols,
                      uint64_t seed, const char *site)
{
    /* Every row first: weights >= 0 (NaN fails) and a positive, finite sum, added left to
     * right as the draw adds it (an inf weight, or finite ones that overflow, would take
     * every draw) */
    for (int64_t r = 0; r < rows; r++) {
        const double *row = p + r * cols;
        int ok_sign = 1;
        double sum = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            if (!(row[j] >= 0.0))
                ok_sign = 0;
            sum = j ? sum + row[j] : row[j];
        }
        if (ok_sign && sum > 0.0 && sum < INFINITY)
            continue;
        char shown[6 * 32 + 16];
        size_t n = 0;
        shown[0] = '\0';
        for (int64_t j = 0; j < cols && j < 6; j++) {
            char num[32];
            format_number(num, sizeof num, row[j]);
            n += (size_t)snprintf(shown + n, sizeof shown - n, "%s%s", j ? ", " : "", num);
        }
        if (cols > 6)
            snprintf(shown + n, sizeof shown - n, ", ...");
        goat_fail(site, "sample_rows needs weights of 0 or more with a positive, finite sum "
                        "in every row (probabilities, such as nn.softmax_rows(logits)); row %" PRId64
                        " is [%s]", r, shown);
    }
    const uint64_t key = stream_key(STREAM_UNIFORM, seed);
    for (int64_t r = 0; r < rows; r++) {
        const double *row = p + r * cols;
        const double u = (double)hi53(key, (uint64_t)r + 1) * TWO_M53;     /* rand cell r */
        /* total = the running sum's last value (cumsum adds left to right) */
        double total = 0.0;
        for (int64_t j = 0; j < cols; j++)
            total = j ? total + row[j] : row[j];
        const double threshold = u * total;
        int64_t count = 0;
        double c = 0.0;
        for (int64_t j = 0; j < cols; j++) {
            c = j ? c + row[j] : row[j];
            count += c <= threshold;    /* the first running sum that exceeds it */
        }
        out[r] = (double)(count < cols - 1 ? count : cols - 1);
    }
}

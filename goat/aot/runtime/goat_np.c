/* goat_np.c: the compiled program computes what `goat run` computes, bit for bit.
 *
 * `goat run` evaluates with NumPy, and three of NumPy's kernels add or round in an order of
 * their own: the matrix product (NumPy's BLAS, reached through NumPy's matmul dispatch, which
 * picks dot, gemv, gemm or syrk and the transposition flags from the operands' strides), the
 * sum along an axis (pairwise, when the axis is the one NumPy iterates innermost), and, on
 * processors with AVX-512, exp, log and tanh (Intel's SVML, which NumPy ships and exports).
 * A value printed to 6 digits almost never shows the difference, but a chaotic computation
 * (the chapter's training after step 50) amplifies it.  So the compiled program does what
 * NumPy does:
 *
 *  - goat_np_matmul follows numpy/_core/src/umath/matmul.c.src (NumPy 2.x): the same cases,
 *    in the same order, with the same BLAS calls, on operands laid out as `goat run`'s arrays
 *    are (each value carries goat run's layout of it; see "goat run's layouts" below);
 *  - goat_np_sum adds in the order NumPy's reduction does: the axes in NumPy's iteration
 *    order, a pairwise sum (numpy/_core/src/umath/loops_utils.h.src, blocks of 8 accumulators
 *    up to 128 numbers, halves above) of each inner run when the inner axis is reduced;
 *  - goat_np_unary calls NumPy's SVML functions on 8 numbers at a time, where NumPy does.
 *
 * The libraries are the ones NumPy uses, found when the program is compiled (goat/aot/
 * numpy_libs.py) and opened with dlopen when first needed.  When one cannot be opened (NumPy
 * removed, another machine) the program computes with its own code instead (plain loops,
 * C's exp, log and tanh): the same numbers to the last few bits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "goat_rt.h"

/* ------------------------------------------------------------------ configuration */

static const char *cfg_blas;        /* NumPy's BLAS library */
static const char *cfg_prefix;      /* its symbols' prefix and suffix: scipy_ cblas_dgemm 64_ */
static const char *cfg_suffix;
static int cfg_ilp64;               /* 64-bit integers (the "64_" builds) */
static const char *cfg_umath;       /* NumPy's _multiarray_umath (exports SVML) */
static const char *cfg_python;      /* libpython, which _multiarray_umath needs to load */

void goat_np_config(const char *blas, const char *prefix, const char *suffix, int64_t ilp64,
                    const char *umath, const char *python)
{
    cfg_blas = blas && *blas ? blas : NULL;
    cfg_prefix = prefix ? prefix : "";
    cfg_suffix = suffix ? suffix : "";
    cfg_ilp64 = (int)ilp64;
    cfg_umath = umath && *umath ? umath : NULL;
    cfg_python = python && *python ? python : NULL;
}

/* ------------------------------------------------------------------ the BLAS */

enum { ROW_MAJOR = 101, COL_MAJOR = 102, NO_TRANS = 111, TRANS = 112, UPPER = 121 };

typedef double (*ddot64_t)(int64_t, const double *, int64_t, const double *, int64_t);
typedef void (*dgemv64_t)(int, int, int64_t, int64_t, double, const double *, int64_t,
                          const double *, int64_t, double, double *, int64_t);
typedef void (*dgemm64_t)(int, int, int, int64_t, int64_t, int64_t, double, const double *,
                          int64_t, const double *, int64_t, double, double *, int64_t);
typedef void (*dsyrk64_t)(int, int, int, int64_t, int64_t, double, const double *, int64_t,
                          double, double *, int64_t);
typedef double (*ddot32_t)(int, const double *, int, const double *, int);
typedef void (*dgemv32_t)(int, int, int, int, double, const double *, int, const double *, int,
                          double, double *, int);
typedef void (*dgemm32_t)(int, int, int, int, int, int, double, const double *, int,
                          const double *, int, double, double *, int);
typedef void (*dsyrk32_t)(int, int, int, int, int, double, const double *, int, double,
                          double *, int);
typedef void (*threads_t)(int);

static int blas_state;              /* 0: not tried yet, 1: loaded, -1: not available */
static void *f_ddot, *f_dgemv, *f_dgemm, *f_dsyrk;

/* goat run limits the BLAS to one thread (its bits depend on the thread count); so does the
   compiled program, before the library starts its threads */
static void one_thread(void)
{
    setenv("OPENBLAS_NUM_THREADS", "1", 1);
    setenv("MKL_NUM_THREADS", "1", 1);
    setenv("BLIS_NUM_THREADS", "1", 1);
}

static void *blas_symbol(void *h, const char *name)
{
    char full[160];
    snprintf(full, sizeof full, "%s%s%s", cfg_prefix, name, cfg_suffix);
    return dlsym(h, full);
}

static int blas_ready(void)
{
    if (blas_state)
        return blas_state > 0;
    blas_state = -1;
    if (!cfg_blas)
        return 0;
    one_thread();
    void *h = dlopen(cfg_blas, RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    f_ddot = blas_symbol(h, "cblas_ddot");
    f_dgemv = blas_symbol(h, "cblas_dgemv");
    f_dgemm = blas_symbol(h, "cblas_dgemm");
    f_dsyrk = blas_symbol(h, "cblas_dsyrk");
    if (!f_ddot || !f_dgemv || !f_dgemm || !f_dsyrk)
        return 0;
    /* openblas_set_num_threads, under the build's own naming */
    char name[160];
    snprintf(name, sizeof name, "%sopenblas_set_num_threads%s", cfg_prefix, cfg_suffix);
    threads_t set_threads = (threads_t)dlsym(h, name);
    if (set_threads)
        set_threads(1);
    blas_state = 1;
    return 1;
}

static double blas_dot(int64_t n, const double *x, int64_t incx, const double *y, int64_t incy)
{
    if (cfg_ilp64)
        return ((ddot64_t)f_ddot)(n, x, incx, y, incy);
    return ((ddot32_t)f_ddot)((int)n, x, (int)incx, y, (int)incy);
}

static void blas_gemv(int order, int trans, int64_t m, int64_t n, const double *a, int64_t lda,
                      const double *x, int64_t incx, double *y, int64_t incy)
{
    if (cfg_ilp64)
        ((dgemv64_t)f_dgemv)(order, trans, m, n, 1.0, a, lda, x, incx, 0.0, y, incy);
    else
        ((dgemv32_t)f_dgemv)(order, trans, (int)m, (int)n, 1.0, a, (int)lda, x, (int)incx, 0.0,
                             y, (int)incy);
}

static void blas_gemm(int ta, int tb, int64_t m, int64_t n, int64_t k, const double *a,
                      int64_t lda, const double *b, int64_t ldb, double *c, int64_t ldc)
{
    if (cfg_ilp64)
        ((dgemm64_t)f_dgemm)(ROW_MAJOR, ta, tb, m, n, k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
    else
        ((dgemm32_t)f_dgemm)(ROW_MAJOR, ta, tb, (int)m, (int)n, (int)k, 1.0, a, (int)lda, b,
                             (int)ldb, 0.0, c, (int)ldc);
}

static void blas_syrk(int trans, int64_t n, int64_t k, const double *a, int64_t lda, double *c,
                      int64_t ldc)
{
    if (cfg_ilp64)
        ((dsyrk64_t)f_dsyrk)(ROW_MAJOR, UPPER, trans, n, k, 1.0, a, lda, 0.0, c, ldc);
    else
        ((dsyrk32_t)f_dsyrk)(ROW_MAJOR, UPPER, trans, (int)n, (int)k, 1.0, a, (int)lda, 0.0, c,
                             (int)ldc);
}

/* ------------------------------------------------------------------ the matrix product */

/* Strides are in cells.  A 2-d block the BLAS can read: the faster axis contiguous, the
   slower one's stride at least the faster axis's length (matmul.c.src's is_blasable2d). */
static int blasable(int64_t s_slow, int64_t s_fast, int64_t d_slow, int64_t d_fast)
{
    (void)d_slow;
    return s_fast == 1 && s_slow >= d_fast;
}

/* the plain triple loop, each sum from 0 in the order of k, no fused multiply-add */
static void loop_product(const double *a, int64_t a_m, int64_t a_n, const double *b,
                         int64_t b_n, int64_t b_p, double *o, int64_t o_m, int64_t o_p,
                         int64_t m, int64_t n, int64_t p)
{
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < p; j++) {
            double s = 0.0;
            for (int64_t k = 0; k < n; k++)
                s += a[i * a_m + k * a_n] * b[k * b_n + j * b_p];
            o[i * o_m + j * o_p] = s;
        }
}

static void dot_product(const double *a, int64_t inca, const double *b, int64_t incb, double *o,
                        int64_t n)
{
    if (inca > 0 && incb > 0 && blas_ready()) {
        double s = 0.0;
        s += blas_dot(n, a, inca, b, incb);
        *o = s;
        return;
    }
    double s = 0.0;
    for (int64_t i = 0; i < n; i++)
        s += a[i * inca] * b[i * incb];
    *o = s;
}

/* out[i] = sum_k a[i, k] x[k]: a is m x n */
static void matrix_vector(const double *a, int64_t a_m, int64_t a_n, const double *x,
                          int64_t inc, double *o, int64_t o_inc, int64_t m, int64_t n)
{
    if (!blas_ready()) {
        loop_product(a, a_m, a_n, x, inc, 0, o, o_inc, 0, m, n, 1);
        return;
    }
    if (blasable(a_m, a_n, m, n))
        blas_gemv(COL_MAJOR, TRANS, n, m, a, a_m, x, inc, o, o_inc);
    else
        blas_gemv(ROW_MAJOR, TRANS, n, m, a, a_n, x, inc, o, o_inc);
}

static void matrix_matrix(const double *a, int64_t a_m, int64_t a_n, const double *b,
                          int64_t b_n, int64_t b_p, double *o, int64_t o_m, int64_t o_p,
                          int64_t m, int64_t n, int64_t p)
{
    if (!blas_ready()) {
        loop_product(a, a_m, a_n, b, b_n, b_p, o, o_m, o_p, m, n, p);
        return;
    }
    int ta, tb;
    int64_t lda, ldb;
    if (blasable(a_m, a_n, m, n)) {
        ta = NO_TRANS;
        lda = a_m;
    } else {
        ta = TRANS;
        lda = a_n;
    }
    if (blasable(b_n, b_p, n, p)) {
        tb = NO_TRANS;
        ldb = b_n;
    } else {
        tb = TRANS;
        ldb = b_p;
    }
    if (a == b && m == p && a_m == b_p && a_n == b_n && ta != tb) {
        /* a matrix times its own transpose: the upper triangle, mirrored */
        blas_syrk(ta, p, n, a, ta == NO_TRANS ? lda : ldb, o, o_m);
        for (int64_t i = 0; i < p; i++)
            for (int64_t j = i + 1; j < p; j++)
                o[j * o_m + i] = o[i * o_m + j];
    } else {
        blas_gemm(ta, tb, m, p, n, a, lda, b, ldb, o, o_m);
    }
}

/* copy a d1 x d2 block, into rows (transposed: into columns) of the destination */
static void block_copy(const double *src, int64_t s1, int64_t s2, double *dst, int64_t t1,
                       int64_t t2, int64_t d1, int64_t d2)
{
    for (int64_t i = 0; i < d1; i++)
        for (int64_t j = 0; j < d2; j++)
            dst[i * t1 + j * t2] = src[i * s1 + j * s2];
}

static int64_t iabs64(int64_t x) { return x < 0 ? -x : x; }

/* One m x n by n x p product as NumPy's DOUBLE_matmul inner loop computes it, given the
   operands' strides as `goat run`'s arrays have them and a C-ordered output. */
static void one_product(const double *a, int64_t a_m, int64_t a_n, const double *b,
                        int64_t b_n, int64_t b_p, double *o, int64_t o_m, int64_t o_p,
                        int64_t m, int64_t n, int64_t p, double *scratch)
{
    int a_ok = blasable(a_m, a_n, m, n) || blasable(a_n, a_m, n, m);
    int b_ok = blasable(b_n, b_p, n, p) || blasable(b_p, b_n, p, n);
    int o_ok = blasable(o_m, o_p, m, p) || blasable(o_p, o_m, p, m);
    if (m == 0 || n == 0 || p == 0) {
        loop_product(a, a_m, a_n, b, b_n, b_p, o, o_m, o_p, m, n, p);
        return;
    }
    if (m == 1 || n == 1 || p == 1) {
        if (m == 1 && p == 1)
            dot_product(a, a_n, b, b_n, o, n);
        else if (n == 1 && (p == 1 || m == 1))
            loop_product(a, a_m, a_n, b, b_n, b_p, o, o_m, o_p, m, n, p);
        else if (m == 1 && b_ok && a_n >= 1)
            matrix_vector(b, b_p, b_n, a, a_n, o, o_p, p, n);      /* vector @ matrix */
        else if (p == 1 && a_ok && b_n >= 1)
            matrix_vector(a, a_m, a_n, b, b_n, o, o_m, m, n);      /* matrix @ vector */
        else
            loop_product(a, a_m, a_n, b, b_n, b_p, o, o_m, o_p, m, n, p);
        return;
    }
    /* matrix @ matrix: an operand the BLAS cannot read is copied first, in the order of its
       smaller stride */
    int a_t = iabs64(a_m) < iabs64(a_n), b_t = iabs64(b_n) < iabs64(b_p),
        o_t = iabs64(o_m) < iabs64(o_p);
    double *ta = scratch, *tb = scratch + m * n, *to = scratch + m * n + n * p;
    int64_t ta_m = a_t ? 1 : n, ta_n = a_t ? m : 1, tb_n = b_t ? 1 : p, tb_p = b_t ? n : 1,
            to_m = o_t ? 1 : p, to_p = o_t ? m : 1;
    if (!a_ok) {
        block_copy(a, a_m, a_n, ta, ta_m, ta_n, m, n);
        a = ta, a_m = ta_m, a_n = ta_n;
    }
    if (!b_ok) {
        block_copy(b, b_n, b_p, tb, tb_n, tb_p, n, p);
        b = tb, b_n = tb_n, b_p = tb_p;
    }
    double *out = o;
    int64_t out_m = o_m, out_p = o_p;
    if (!o_ok)
        out = to, out_m = to_m, out_p = to_p;
    if (o_t)
        matrix_matrix(b, b_p, b_n, a, a_n, a_m, out, out_p, out_m, p, n, m);
    else
        matrix_matrix(a, a_m, a_n, b, b_n, b_p, out, out_m, out_p, m, n, p);
    if (!o_ok)
        block_copy(to, to_m, to_p, o, o_m, o_p, m, p);
}

/* The batched product out = a @ b as NumPy computes it.  `out` is C-ordered, batch shape
   `bshape` (nb axes) then m x p; a's and b's cells are laid out as `goat run` holds them:
   batch strides `abs_`/`bbs` (0 where broadcast) and matrix strides (a_m, a_n), (b_n, b_p),
   all in cells. */
static void goat_np_matmul(double *out, const double *a, const double *b, int64_t nb,
                    const int64_t *bshape, const int64_t *abs_, const int64_t *bbs, int64_t m,
                    int64_t n, int64_t p, int64_t a_m, int64_t a_n, int64_t b_n, int64_t b_p,
                    const char *site)
{
    int64_t count = 1;
    for (int64_t i = 0; i < nb; i++)
        count *= bshape[i];
    double *scratch = NULL;
    if (m > 1 && n > 1 && p > 1) {
        scratch = malloc(sizeof(double) * (size_t)(m * n + n * p + m * p));
        if (!scratch)
            goat_fail(site, "out of memory computing a matrix product");
    }
    int64_t *idx = calloc((size_t)nb + 1, sizeof(int64_t));
    if (!idx)
        goat_fail(site, "out of memory computing a matrix product");
    for (int64_t c = 0; c < count; c++) {
        int64_t ao = 0, bo = 0;
        for (int64_t i = 0; i < nb; i++) {
            ao += idx[i] * abs_[i];
            bo += idx[i] * bbs[i];
        }
        one_product(a + ao, a_m, a_n, b + bo, b_n, b_p, out + c * m * p, p, 1, m, n, p,
                    scratch);
        for (int64_t i = nb - 1; i >= 0; i--) {
            if (++idx[i] < bshape[i])
                break;
            idx[i] = 0;
        }
    }
    free(idx);
    free(scratch);
}

/* ------------------------------------------------------------------ sums */

/* NumPy's pairwise sum of n numbers `stride` cells apart */
static double pairwise(const double *a, int64_t n, int64_t stride)
{
    if (n < 8) {
        double res = -0.0;
        for (int64_t i = 0; i < n; i++)
            res += a[i * stride];
        return res;
    }
    if (n <= 128) {
        double r[8];
        for (int j = 0; j < 8; j++)
            r[j] = a[j * stride];
        int64_t i;
        for (i = 8; i < n - (n % 8); i += 8)
            for (int j = 0; j < 8; j++)
                r[j] += a[(i + j) * stride];
        double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for (; i < n; i++)
            res += a[i * stride];
        return res;
    }
    int64_t n2 = n / 2;
    n2 -= n2 % 8;
    return pairwise(a, n2, stride) + pairwise(a + n2 * stride, n - n2, stride);
}

/* out (zeroed here) += in, summed in NumPy's order.  The nd axes are listed innermost first,
   in the order NumPy's iterator takes them; istr/ostr are the compiled arrays' strides in
   cells (ostr 0 along a reduced axis).  With `pairwise`, the first `ninner` axes (all
   reduced) form one run that NumPy sums pairwise, and each run's sum is added to its output
   cell; otherwise each number is added to its output cell in iteration order. */
static void goat_np_sum(double *out, int64_t ocells, const double *in, int64_t nd,
                 const int64_t *shape, const int64_t *istr, const int64_t *ostr, int64_t ninner,
                 int64_t pairwise_runs, const char *site)
{
    for (int64_t i = 0; i < ocells; i++)
        out[i] = 0.0;
    for (int64_t i = 0; i < nd; i++)
        if (shape[i] == 0)
            return;
    int64_t first = pairwise_runs ? ninner : 0;
    int64_t run = 1;
    for (int64_t i = 0; i < first; i++)
        run *= shape[i];
    double *buf = NULL;
    int contiguous = first == 1 || first == 0;
    if (pairwise_runs && !contiguous) {
        buf = malloc(sizeof(double) * (size_t)(run ? run : 1));
        if (!buf)
            goat_fail(site, "out of memory computing a sum");
    }
    int64_t *idx = calloc(2 * (size_t)nd + 1, sizeof(int64_t));
    if (!idx)
        goat_fail(site, "out of memory computing a sum");
    int64_t *sub = idx + nd;
    int64_t io = 0, oo = 0;
    for (;;) {
        if (pairwise_runs) {
            double s;
            if (first == 0)
                s = pairwise(in + io, 1, 1);
            else if (first == 1)
                s = pairwise(in + io, shape[0], istr[0]);
            else {
                /* gather the run in iteration order (innermost axis fastest) */
                int64_t off = 0;
                for (int64_t i = 0; i < first; i++)
                    sub[i] = 0;
                for (int64_t c = 0; c < run; c++) {
                    buf[c] = in[io + off];
                    for (int64_t i = 0; i < first; i++) {
                        off += istr[i];
                        if (++sub[i] < shape[i])
                            break;
                        off -= istr[i] * shape[i];
                        sub[i] = 0;
                    }
                }
                s = pairwise(buf, run, 1);
            }
            out[oo] += s;
        } else {
            out[oo] += in[io];
        }
        /* the next position of the outer (non-run) axes, innermost first */
        int64_t i = first;
        for (; i < nd; i++) {
            io += istr[i];
            oo += ostr[i];
            if (++idx[i] < shape[i])
                break;
            io -= istr[i] * shape[i];
            oo -= ostr[i] * shape[i];
            idx[i] = 0;
        }
        if (i == nd)
            break;
    }
    free(idx);
    free(buf);
}

/* ------------------------------------------------------------------ exp, log, tanh */

typedef __m512d (*svml_t)(__m512d);
static int svml_state;
static svml_t f_svml[3];
static const char *const svml_names[3] = {"__svml_exp8_ha", "__svml_log8_ha", "__svml_tanh8"};

static int svml_ready(void)
{
    if (svml_state)
        return svml_state > 0;
    svml_state = -1;
    /* NumPy calls SVML where the processor has AVX512_SKX (F, CD, BW, DQ, VL) */
    __builtin_cpu_init();
    if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
          __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
          __builtin_cpu_supports("avx512vl")))
        return 0;
    if (!cfg_umath)
        return 0;
    if (cfg_python)
        dlopen(cfg_python, RTLD_NOW | RTLD_GLOBAL);
    one_thread();
    void *h = dlopen(cfg_umath, RTLD_LAZY | RTLD_LOCAL);
    if (!h)
        return 0;
    for (int i = 0; i < 3; i++)
        if (!(f_svml[i] = (svml_t)dlsym(h, svml_names[i])))
            return 0;
    svml_state = 1;
    return 1;
}

__attribute__((target("avx512f")))
static void svml_apply(svml_t f, double *out, const double *in, int64_t n, double fill)
{
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm512_storeu_pd(out + i, f(_mm512_loadu_pd(in + i)));
    if (i < n) {
        double buf[8];
        for (int j = 0; j < 8; j++)
            buf[j] = i + j < n ? in[i + j] : fill;
        _mm512_storeu_pd(buf, f(_mm512_loadu_pd(buf)));
        for (int j = 0; i + j < n; j++)
            out[i + j] = buf[j];
    }
}

/* out[i] = exp (which 0), log (1) or tanh (2) of in[i], as NumPy computes them here */
void goat_np_unary(int64_t which, double *out, const double *in, int64_t n)
{
    if (svml_ready()) {
        svml_apply(f_svml[which], out, in, n, which == 1 ? 1.0 : 0.0);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        out[i] = which == 0 ? exp(in[i]) : which == 1 ? log(in[i]) : tanh(in[i]);
}

/* ------------------------------------------------------------------ operands laid out as goat run holds them */

/* A block of `cells` doubles for an operand laid out as goat run holds it. */
static double *goat_np_scratch(int64_t cells, const char *site)
{
    /* every cell of the span of a view of a whole array is written before it is read */
    double *p = malloc((size_t)(cells > 0 ? cells : 1) * sizeof(double));
    if (!p)
        goat_fail(site, "out of memory computing a matrix product");
    return p;
}

static void goat_np_unscratch(double *p) { free(p); }

/* dst[sum_i idx_i * strides_i] = src[row-major index of idx], for every index of `shape`:
   the innermost axis a plain loop, the others an odometer */
static void goat_np_place(double *dst, const double *src, int64_t rank, const int64_t *shape,
                   const int64_t *strides, const char *site)
{
    if (rank == 0) {
        dst[0] = src[0];
        return;
    }
    int64_t count = 1;
    for (int64_t i = 0; i < rank; i++)
        count *= shape[i];
    if (count == 0)
        return;
    int64_t n = shape[rank - 1], st = strides[rank - 1], rows = count / n;
    int64_t *idx = calloc((size_t)rank + 1, sizeof(int64_t)), off = 0;
    if (!idx)
        goat_fail(site, "out of memory computing a matrix product");
    for (int64_t r = 0; r < rows; r++) {
        const double *s = src + r * n;
        double *d = dst + off;
        for (int64_t j = 0; j < n; j++)
            d[j * st] = s[j];
        for (int64_t i = rank - 2; i >= 0; i--) {
            off += strides[i];
            if (++idx[i] < shape[i])
                break;
            off -= strides[i] * shape[i];
            idx[i] = 0;
        }
    }
    free(idx);
}

/* ------------------------------------------------------------------ goat run's layouts
 *
 * NumPy's choices above depend on how goat run holds each array: `transpose` is a view with
 * its strides swapped, an elementwise result is laid out in the operands' order (NumPy's
 * order='K'), a large broadcast_to is a view with zero strides, `reshape` of a row-major
 * array a view.  Every compiled value carries that layout in its header (goat_head: the id of
 * goat run's array it is a view of, its strides when not row-major), set by the kernels that
 * change it and read by the matrix product and the sums.  The rules follow NumPy
 * (numpy/_core/src/multiarray/nditer_constr.c: npyiter_find_best_axis_ordering, the axis
 * coalescing) and goat's evaluators (goat/ops/builtins.py). */

#define MAXR 64

static uint64_t base_of(const double *p)
{
    uint64_t id = HEAD(p)->id;
    return id ? id : ((uint64_t)(uintptr_t)p | (1ULL << 63));
}

static void c_strides(int64_t rank, const int64_t *shape, int64_t *out)
{
    int64_t n = 1;
    for (int64_t i = rank - 1; i >= 0; i--) {
        out[i] = n;
        n *= shape[i];
    }
}

/* goat run's strides of p, of this shape */
static void strides_of(const double *p, int64_t rank, const int64_t *shape, int64_t *out)
{
    if (HEAD(p)->strides)
        memcpy(out, HEAD(p)->strides, (size_t)rank * sizeof(int64_t));
    else
        c_strides(rank, shape, out);
}

/* NumPy's C-contiguity (axes of length 1 may have any stride) */
static int is_c_contiguous(int64_t rank, const int64_t *shape, const int64_t *st)
{
    int64_t n = 1;
    for (int64_t i = 0; i < rank; i++)
        if (shape[i] == 0)
            return 1;
    for (int64_t i = rank - 1; i >= 0; i--) {
        if (shape[i] != 1 && st[i] != n)
            return 0;
        n *= shape[i];
    }
    return 1;
}

static void set_layout(double *p, uint64_t id, int64_t rank, const int64_t *shape,
                       const int64_t *st)
{
    goat_head *h = HEAD(p);
    h->id = id;
    free(h->strides);
    h->strides = NULL;
    if (!is_c_contiguous(rank, shape, st)) {
        h->strides = malloc((size_t)(rank ? rank : 1) * sizeof(int64_t));
        if (!h->strides)
            goat_fail("\x01", "out of memory");
        memcpy(h->strides, st, (size_t)rank * sizeof(int64_t));
    }
}

/* NumPy's iterator axis order for `nop` operands (strides aligned to `shape`, 0 where
   broadcast): perm[0] is the innermost axis.  A stable insertion sort from the C order by
   |stride|; an operand with a zero stride or an axis of length 1 has no say, and a conflict
   between operands keeps the C order. */
static void iteration_order(int64_t ndim, const int64_t *shape, int nop,
                            int64_t st[][MAXR], int64_t *perm)
{
    for (int64_t i = 0; i < ndim; i++)
        perm[i] = ndim - 1 - i;
    for (int64_t i0 = 1; i0 < ndim; i0++) {
        int64_t ipos = i0, a0 = perm[i0];
        for (int64_t i1 = i0 - 1; i1 >= 0; i1--) {
            int64_t a1 = perm[i1];
            int ambiguous = 1, swap = 0;
            for (int op = 0; op < nop; op++) {
                int64_t x0 = shape[a0] == 1 ? 0 : st[op][a0];
                int64_t x1 = shape[a1] == 1 ? 0 : st[op][a1];
                if (x0 != 0 && x1 != 0) {
                    if (llabs(x1) <= llabs(x0))
                        swap = 0;
                    else if (ambiguous)
                        swap = 1;
                    ambiguous = 0;
                }
            }
            if (!ambiguous) {
                if (swap)
                    ipos = i1;
                else
                    break;
            }
        }
        if (ipos != i0) {
            for (int64_t i = i0; i > ipos; i--)
                perm[i] = perm[i - 1];
            perm[ipos] = a0;
        }
    }
}

/* an operand's strides read at each axis of the broadcast shape */
static void aligned(const double *p, int64_t rank, const int64_t *shape, int64_t out_rank,
                    const int64_t *out_shape, int64_t *out)
{
    int64_t st[MAXR];
    strides_of(p, rank, shape, st);
    int64_t pad = out_rank - rank;
    for (int64_t i = 0; i < out_rank; i++) {
        if (i < pad)
            out[i] = 0;
        else
            out[i] = shape[i - pad] == 1 && out_shape[i] != 1 ? 0 : st[i - pad];
    }
}

/* An elementwise result: laid out in NumPy's order='K' for its operands.  `ins` holds nin
   (pointer, rank, shape) operands; operands goat run holds row-major give a row-major
   result, the common case, decided at once. */
static void lay_elementwise(double *out, int64_t rank, const int64_t *shape, int64_t nin,
                            double *const *ins, const int64_t *ranks,
                            const int64_t *const *shapes)
{
    int any = 0;
    for (int64_t i = 0; i < nin; i++)
        any |= HEAD(ins[i])->strides != NULL;
    if (!any || rank > MAXR || nin > 4)
        return;
    int64_t st[4][MAXR], perm[MAXR], res[MAXR], n = 1;
    for (int64_t i = 0; i < nin; i++)
        aligned(ins[i], ranks[i], shapes[i], rank, shape, st[i]);
    iteration_order(rank, shape, (int)nin, st, perm);
    for (int64_t i = 0; i < rank; i++) {
        res[perm[i]] = n;
        n *= shape[perm[i]];
    }
    set_layout(out, HEAD(out)->id, rank, shape, res);
}

void goat_lay_elementwise1(double *out, int64_t rank, const int64_t *shape, double *x,
                           int64_t rx, const int64_t *sx)
{
    if (HEAD(x)->strides == NULL)
        return;
    double *ins[1] = {x};
    int64_t ranks[1] = {rx};
    const int64_t *shapes[1] = {sx};
    lay_elementwise(out, rank, shape, 1, ins, ranks, shapes);
}

void goat_lay_elementwise2(double *out, int64_t rank, const int64_t *shape, double *x,
                           int64_t rx, const int64_t *sx, double *y, int64_t ry,
                           const int64_t *sy)
{
    if (HEAD(x)->strides == NULL && HEAD(y)->strides == NULL)
        return;
    double *ins[2] = {x, y};
    int64_t ranks[2] = {rx, ry};
    const int64_t *shapes[2] = {sx, sy};
    lay_elementwise(out, rank, shape, 2, ins, ranks, shapes);
}

/* transpose: goat run's view of the same array, the last two strides swapped */
void goat_lay_transpose(double *out, const double *in, int64_t rank, const int64_t *in_shape)
{
    int64_t st[MAXR], shape[MAXR];
    if (rank > MAXR)
        return;
    strides_of(in, rank, in_shape, st);
    memcpy(shape, in_shape, (size_t)rank * sizeof(int64_t));
    int64_t t = st[rank - 1];
    st[rank - 1] = st[rank - 2];
    st[rank - 2] = t;
    t = shape[rank - 1];
    shape[rank - 1] = shape[rank - 2];
    shape[rank - 2] = t;
    set_layout(out, base_of(in), rank, shape, st);
}

/* broadcast_to (a derivative's): goat's evaluator returns a view when the result holds more
   than 65,536 cells, else x * ones (an elementwise result); the same value when the shape
   does not change */
void goat_lay_broadcast(double *out, double *in, int64_t in_rank, const int64_t *in_shape,
                        int64_t rank, const int64_t *shape)
{
    int64_t cells = 1, st[MAXR];
    if (rank > MAXR)
        return;
    int same = in_rank == rank;
    for (int64_t i = 0; i < rank; i++) {
        cells *= shape[i];
        if (same && in_shape[i] != shape[i])
            same = 0;
    }
    if (same || cells > 65536) {
        aligned(in, in_rank, in_shape, rank, shape, st);
        set_layout(out, base_of(in), rank, shape, st);
    }
    /* else x * ones: the row-major operand wins every conflict of NumPy's axis order, so the
       result is row-major, as out already is */
}

/* an op that gives back its argument (sum_to to the same shape) */
void goat_lay_same(double *out, const double *in, int64_t rank, const int64_t *shape)
{
    int64_t st[MAXR];
    if (rank > MAXR)
        return;
    strides_of(in, rank, shape, st);
    set_layout(out, base_of(in), rank, shape, st);
}

/* ------------------------------------------------------------------ products and sums of values as goat run holds them */

static int64_t extent(int64_t rank, const int64_t *shape, const int64_t *st)
{
    int64_t e = 1;
    for (int64_t i = 0; i < rank; i++) {
        if (shape[i] == 0)
            return 1;
        e += (shape[i] - 1) * st[i];
    }
    return e;
}

/* a @ b: each operand laid out as goat run holds it (a row-major one as it is; two views of
   one array in one block, as they share one buffer in goat run), then goat_np_matmul */
void goat_np_product(double *out, double *a, int64_t ra, const int64_t *sa, double *b,
                     int64_t rb, const int64_t *sb, int64_t ro, const int64_t *so,
                     const char *site)
{
    int64_t sta[MAXR], stb[MAXR], ba[MAXR], bb[MAXR];
    if (ra > MAXR || rb > MAXR || ro > MAXR)
        goat_fail(site, "goat compile --aot handles products of rank up to %d", MAXR);
    strides_of(a, ra, sa, sta);
    strides_of(b, rb, sb, stb);
    int a_c = HEAD(a)->strides == NULL, b_c = HEAD(b)->strides == NULL;
    int shared = base_of(a) == base_of(b) && !(a_c && b_c);
    const double *pa = a, *pb = b;
    double *block = NULL, *block2 = NULL;
    if (shared) {
        int64_t ea = extent(ra, sa, sta), eb = extent(rb, sb, stb);
        block = goat_np_scratch(ea > eb ? ea : eb, site);
        goat_np_place(block, a, ra, sa, sta, site);
        goat_np_place(block, b, rb, sb, stb, site);
        pa = pb = block;
    } else {
        if (!a_c) {
            block = goat_np_scratch(extent(ra, sa, sta), site);
            goat_np_place(block, a, ra, sa, sta, site);
            pa = block;
        }
        if (!b_c) {
            block2 = goat_np_scratch(extent(rb, sb, stb), site);
            goat_np_place(block2, b, rb, sb, stb, site);
            pb = block2;
        }
    }
    int64_t nb = ro - 2;
    for (int64_t i = 0; i < nb; i++) {
        int64_t ia = i - (nb - (ra - 2)), ib = i - (nb - (rb - 2));
        ba[i] = ia < 0 || sa[ia] == 1 ? 0 : sta[ia];
        bb[i] = ib < 0 || sb[ib] == 1 ? 0 : stb[ib];
    }
    goat_np_matmul(out, pa, pb, nb, so, ba, bb, sa[ra - 2], sa[ra - 1], sb[rb - 1],
                   sta[ra - 2], sta[ra - 1], stb[rb - 2], stb[rb - 1], site);
    goat_np_unscratch(block);
    goat_np_unscratch(block2);
}

/* out = `in` summed over the axes in `reduced` (a bit mask), kept as length 1, in NumPy's
   order for goat run's layout of `in`: the axes in NumPy's iteration order (axes of length
   1 left out), coalesced where the input and the output allow; a pairwise sum of each inner
   run when the innermost axis is reduced, one number after another otherwise */
void goat_np_reduce(double *out, int64_t ocells, double *in, int64_t rank,
                    const int64_t *shape, uint64_t reduced, int64_t lead, const char *site)
{
    int64_t st[1][MAXR], perm[MAXR], cst[MAXR], keep[MAXR], ost[MAXR];
    if (rank > MAXR)
        goat_fail(site, "goat compile --aot handles sums of rank up to %d", MAXR);
    strides_of(in, rank, shape, st[0]);
    c_strides(rank, shape, cst);
    /* goat's sum_to over several axes sums a broadcast view as a row-major copy (_dense in
       goat/ops/builtins.py) */
    if (__builtin_popcountll(reduced) > 1)
        for (int64_t i = 0; i < rank; i++)
            if (st[0][i] == 0 && shape[i] > 1) {
                memcpy(st[0], cst, (size_t)rank * sizeof(int64_t));
                break;
            }
    iteration_order(rank, shape, 1, st, perm);
    for (int64_t i = 0; i < rank; i++)
        keep[i] = (reduced >> i) & 1 ? 1 : shape[i];
    c_strides(rank, keep, ost);
    /* the iterator's output strides (for coalescing): contiguous over the kept axes */
    int64_t itst[MAXR], n = 1;
    int64_t axes[MAXR], na = 0;
    for (int64_t i = 0; i < rank; i++) {
        int64_t a = perm[i];
        if (shape[a] == 1)
            continue;
        axes[na++] = a;
        if ((reduced >> a) & 1)
            itst[a] = 0;
        else {
            itst[a] = n;
            n *= shape[a];
        }
    }
    int64_t ninner = na ? 1 : 0;
    while (ninner < na) {
        int64_t a = axes[ninner], inner = axes[ninner - 1];
        if (st[0][a] == st[0][inner] * shape[inner] && itst[a] == itst[inner] * shape[inner])
            ninner++;
        else
            break;
    }
    int pairwise = na == 0 || ((reduced >> axes[0]) & 1);
    int64_t dims[MAXR], is[MAXR], os[MAXR];
    for (int64_t i = 0; i < na; i++) {
        int64_t a = axes[i];
        dims[i] = shape[a];
        is[i] = cst[a];
        os[i] = (reduced >> a) & 1 ? 0 : ost[a];
    }
    goat_np_sum(out, ocells, in, na, dims, is, os, ninner, pairwise, site);
    /* NumPy allocates the result in its iteration order: contiguous over the kept axes,
       innermost first (the leading `lead` axes, reduced, then dropped by sum_to's reshape) */
    int64_t oshape[MAXR];
    for (int64_t i = 0; i < rank; i++) {
        oshape[i] = keep[i];
        if (keep[i] == 1)
            itst[i] = 0;
    }
    set_layout(out, HEAD(out)->id, rank - lead, oshape + lead, itst + lead);
}

/* the layout NumPy gives a max or min along the axes `reduced` (kept as length 1) */
void goat_lay_reduce(double *out, const double *in, int64_t rank, const int64_t *shape,
                     uint64_t reduced)
{
    int64_t st[1][MAXR], perm[MAXR], res[MAXR], keep[MAXR], n = 1;
    if (rank > MAXR || HEAD(in)->strides == NULL)
        return;
    strides_of(in, rank, shape, st[0]);
    iteration_order(rank, shape, 1, st, perm);
    for (int64_t i = 0; i < rank; i++) {
        keep[i] = (reduced >> i) & 1 ? 1 : shape[i];
        res[i] = 0;
    }
    for (int64_t i = 0; i < rank; i++) {
        int64_t a = perm[i];
        if (keep[a] != 1) {
            res[a] = n;
            n *= keep[a];
        }
    }
    set_layout(out, HEAD(out)->id, rank, keep, res);
}

/* NumPy's reshape without a copy (numpy/_core/src/multiarray/shape.c,
   _attempt_nocopy_reshape, C order): the new strides, or 0 when a copy is needed */
static int nocopy_reshape(int64_t ord, const int64_t *odims_in, const int64_t *ostr_in,
                          int64_t nnd, const int64_t *ndims, int64_t *nstr)
{
    int64_t odims[MAXR], ostr[MAXR], ond = 0;
    for (int64_t i = 0; i < ord; i++)
        if (odims_in[i] != 1) {
            odims[ond] = odims_in[i];
            ostr[ond] = ostr_in[i];
            ond++;
        }
    int64_t oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nnd && oi < ond) {
        int64_t np_ = ndims[ni], op = odims[oi];
        while (np_ != op) {
            if (np_ < op)
                np_ *= ndims[nj++];
            else
                op *= odims[oj++];
        }
        for (int64_t ok = oi; ok < oj - 1; ok++)
            if (ostr[ok] != odims[ok + 1] * ostr[ok + 1])
                return 0;
        nstr[nj - 1] = ostr[oj - 1];
        for (int64_t nk = nj - 1; nk > ni; nk--)
            nstr[nk - 1] = nstr[nk] * ndims[nk];
        ni = nj++;
        oi = oj++;
    }
    int64_t last = ni >= 1 ? nstr[ni - 1] : 1;
    for (int64_t nk = ni; nk < nnd; nk++)
        nstr[nk] = last;
    return 1;
}

/* reshape of a value goat run does not hold row-major (goat_exec's VIEW step): NumPy's view
   when its strides allow one (then a copy of the cells carrying those strides), else a
   row-major copy; `v` is a fresh buffer holding the cells */
void goat_lay_reshape(double *v, const double *in, int64_t ord, const int64_t *odims,
                      int64_t nnd, const int64_t *ndims)
{
    int64_t ost[MAXR], nst[MAXR];
    if (ord > MAXR || nnd > MAXR)
        return;
    strides_of(in, ord, odims, ost);
    if (nocopy_reshape(ord, odims, ost, nnd, ndims, nst))
        set_layout(v, base_of(in), nnd, ndims, nst);
}

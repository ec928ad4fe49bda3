/* goat's AOT runtime: what compiled programs call (goat/aot/lower.py emits the calls).
 *
 * A value is a pointer to its cells, float64 in row-major order, with a header just before
 * them (a reference count); see goat_rt.c.  Shapes are known when the program is compiled,
 * so they are passed as (rank, dims) where a function needs them.
 *
 * A "site" is where a run-time error is reported: the text before the message and the text
 * after it, separated by the byte 0x01, e.g. "prog.mg:4: error: \x01\n4 | print x\n  | ^".
 * goat_fail prints PREFIX MESSAGE SUFFIX and a newline on stderr and exits with status 1,
 * as `goat run` reports a run-time error.
 */
#ifndef GOAT_RT_H
#define GOAT_RT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Report a run-time error at `site` (printf-style message) and exit with status 1. */
__attribute__((noreturn, format(printf, 2, 3)))
void goat_fail(const char *site, const char *fmt, ...);

/* A growable text buffer (format strings). */
typedef struct {
    char *data;
    size_t len;
    size_t cap;
} goat_str;

void goat_str_append(goat_str *s, const char *text, size_t n);
void goat_str_add(goat_str *s, const char *text);

/* values (goat_rt.c): the cells follow a header */
typedef struct {
    int64_t refs;
    int64_t cells;
    uint64_t id;            /* goat run's array this is (a view of); 0: a constant, its own */
    int64_t *strides;       /* goat run's strides in cells when not row-major, else NULL */
} goat_head;

#define HEAD(p) ((goat_head *)((char *)(p) - sizeof(goat_head)))

double *goat_alloc(int64_t cells, const char *site, const char *oom);
void goat_retain(double *p);
void goat_release(double *p);

/* NumPy's argsort(x, axis=-1, kind="stable") of x viewed as rows x cols (NaNs last), the
 * indices as doubles into out (rows * cols cells) */
void goat_argsort_rows(double *out, const double *x, int64_t rows, int64_t cols);

/* The op randperm(N, seed): the order that sorts goat_rand's first n cells (a stable
 * argsort), as doubles into out[0 .. n).  `seed` already checked (goat_check_seed). */
void goat_randperm(double *out, int64_t n, uint64_t seed);

/* the program's start and end; standard output */
void goat_start(int argc, char **argv);
/* the temporary file a save is writing (NULL: none), removed if a signal ends the program */
void goat_pending_file(const char *path);
/* SIGINT, SIGTERM and SIGHUP remove that file, then end the program as the signal does */
void goat_stop_handlers(void);
void goat_folder(const char *dir);
/* Before anything runs: is `folder`, where a save writes, a directory?  If not, report
 * "cannot save into 'SHOWN': ..." at `site` as goat run does (without exiting) and return 1;
 * else 0.  goat_folders_checked(n) then ends the program (status 1) after n such reports,
 * with "goat: N errors" after two or more, as goat run lists several errors. */
int64_t goat_check_folder(const char *folder, const char *shown, const char *site);
void goat_folders_checked(int64_t failed);
int goat_finish(void);
void goat_print(const double *data, int64_t rank, const int64_t *dims);
void goat_print_line(goat_str *s);

/* checks when the program runs */
int64_t goat_bound(double v, const char *site);
__attribute__((noreturn))
int64_t goat_index_fail(double v, int64_t position, int64_t count, const char *op,
                        const char *site);
__attribute__((noreturn))
int64_t goat_rows_fail(double v, int64_t position, int64_t count, const char *where,
                       const char *site);
__attribute__((noreturn))
int64_t goat_narrow_fail(double v, int64_t lo, int64_t last, const char *what,
                         const char *detail, const char *site);
__attribute__((noreturn))
void goat_assert_fail(goat_str *message, const char *site);
void goat_save_named(const char *folder, goat_str *name, const double *data, int64_t rank,
                     const int64_t *dims, const char *site);
void goat_load_named(double *out, const char *folder, goat_str *name, int64_t rank,
                     const int64_t *dims, const char *site);

/* NumPy's own kernels and order of additions (goat_np.c) */
void goat_np_config(const char *blas, const char *prefix, const char *suffix, int64_t ilp64,
                    const char *umath, const char *python);
void goat_np_unary(int64_t which, double *out, const double *in, int64_t n);
void goat_lay_elementwise1(double *out, int64_t rank, const int64_t *shape, double *x,
                           int64_t rx, const int64_t *sx);
void goat_lay_elementwise2(double *out, int64_t rank, const int64_t *shape, double *x,
                           int64_t rx, const int64_t *sx, double *y, int64_t ry,
                           const int64_t *sy);
void goat_lay_transpose(double *out, const double *in, int64_t rank, const int64_t *in_shape);
void goat_lay_broadcast(double *out, double *in, int64_t in_rank, const int64_t *in_shape,
                        int64_t rank, const int64_t *shape);
void goat_lay_same(double *out, const double *in, int64_t rank, const int64_t *shape);
void goat_np_product(double *out, double *a, int64_t ra, const int64_t *sa, double *b,
                     int64_t rb, const int64_t *sb, int64_t ro, const int64_t *so,
                     const char *site);
void goat_np_reduce(double *out, int64_t ocells, double *in, int64_t rank,
                    const int64_t *shape, uint64_t reduced, int64_t lead, const char *site);
void goat_lay_reduce(double *out, const double *in, int64_t rank, const int64_t *shape,
                     uint64_t reduced);
void goat_lay_reshape(double *v, const double *in, int64_t ord, const int64_t *odims,
                      int64_t nnd, const int64_t *ndims);

#ifdef __cplusplus
}
#endif
#endif

/* The core of goat's AOT runtime: values (reference-counted cell buffers), print in the
 * memref format, loop bounds, index checks, and standard output's errors.
 *
 * Every value is a block {refs, cells} followed by its cells (float64, row-major); a program
 * holds a pointer to the cells.  Constants are such blocks in the executable's data, with a
 * count so large it never reaches zero.  The compiled program keeps one reference per value
 * slot and releases it after the slot's last use, as `goat run` drops a value. */
#include <errno.h>
#include <fcntl.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "goat_rt.h"
#include "fmt.h"
#include "rng.h"

/* goat_head (goat_rt.h): a value's reference count and cells, and how goat run would hold
   it (which of goat run's arrays it is a view of, and its strides when not row-major) */
static uint64_t next_id;

static void out_error(void);
static const char *number_format = "%g";       /* print's numbers */

double *goat_alloc(int64_t cells, const char *site, const char *oom)
{
    size_t bytes;
    if (cells < 0 || (uint64_t)cells > (SIZE_MAX - sizeof(goat_head)) / sizeof(double))
        goat_fail(site, "%s", oom);
    bytes = sizeof(goat_head) + (size_t)cells * sizeof(double);
    goat_head *h = malloc(bytes);
    if (h == NULL)
        goat_fail(site, "%s", oom);
    h->refs = 1;
    h->cells = cells;
    h->id = ++next_id;
    h->strides = NULL;
    return (double *)(h + 1);
}

void goat_retain(double *p)
{
    if (p != NULL)
        HEAD(p)->refs++;
}

void goat_release(double *p)
{
    if (p != NULL && --HEAD(p)->refs == 0) {
        free(HEAD(p)->strides);
        free(HEAD(p));
    }
}

/* ------------------------------------------------------------ standard output */

static char out_buffer[1 << 16];

/* The folder the program was compiled in: its file names (load, save) were resolved relative
   to it, as goat run resolves them, and are reported as goat run reports them; so the
   program works there, wherever it is started from. */
void goat_folder(const char *dir)
{
    if (dir && *dir && chdir(dir) != 0) {
        /* gone: relative file names are then relative to where the program runs */
    }
}

void goat_start(int argc, char **argv)
{
    /* the program's numbers (its lets) and file names are compiled in: an argument would be
     * ignored in silence (./prog --let ck=100 running with the ck it was compiled with) */
    if (argc > 1) {
        fprintf(stderr, "goat: error: %s takes no arguments (given: %s%s): its numbers and "
                        "file names were fixed when it was compiled; to change a let, compile it "
                        "again with goat compile --aot --let NAME=VALUE, or run the program "
                        "with goat run --let NAME=VALUE\n",
                argv[0], argv[1], argc > 2 ? " ..." : "");
        exit(1);
    }
    /* GOAT_PRINT_DIGITS=17: print every number with 17 significant digits (for comparing a
     * compiled program's values with the interpreter's beyond %g's 6; tests use it) */
    const char *digits = getenv("GOAT_PRINT_DIGITS");
    if (digits != NULL && strcmp(digits, "17") == 0)
        number_format = "%.17g";
    signal(SIGPIPE, SIG_IGN);
    goat_stop_handlers();
    /* a loop frees and allocates the same sizes every iteration: keep freed memory for
       reuse rather than giving it back to the system and faulting it in again */
#if defined(__GLIBC__)
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
    setvbuf(stdout, out_buffer, _IOFBF, sizeof out_buffer);
}

static void out_error(void)
{
    int e = errno;
    if (e == EPIPE)             /* the reader went away (prog | head): not an error */
        _exit(0);
    /* EBADF: closed, or open but not for writing (goat run says which) */
    fprintf(stderr, "goat: error: cannot write output: %s\n",
            e != EBADF ? strerror(e) : fcntl(1, F_GETFL) == -1 ? "standard output is closed"
                                                            : "standard output is not open for writing");
    _exit(1);
}

static void put(const char *s, size_t n);
#define puts_(lit) put((lit), sizeof(lit) - 1)
static void put(const char *s, size_t n)
{
    static int writable = 0;
    if (!writable) {
        /* a closed or read-only standard output fails the first print, as in goat run (the
         * buffer would otherwise hold it until a later error had been reported) */
        int flags = fcntl(1, F_GETFL);
        if (flags == -1 || (flags & O_ACCMODE) == O_RDONLY) {
            errno = EBADF;
            out_error();
        }
        writable = 1;
    }
    if (n && fwrite(s, 1, n, stdout) != n)
        out_error();
}

int goat_finish(void)
{
    if (fflush(stdout) != 0)
        out_error();
    return 0;
}

/* C's %g for a double, glibc's nan/-nan/inf (print's numbers, as printer.format_number). */
static int number(char *buf, size_t cap, double x)
{
    return snprintf(buf, cap, number_format, x);
}

/* One bracketed level of print's layout (printer.format_memref): between two elements ", ",
 * then a newline unless this is the innermost level, then level + 1 spaces. */
static void layout(const double *data, int64_t rank, const int64_t *dims, int64_t level,
                   int64_t *off)
{
    char buf[64];
    int64_t i, k;
    puts_("[");
    for (i = 0; i < dims[level]; i++) {
        if (i) {
            put(level == rank - 1 ? ", " : ", \n", level == rank - 1 ? 2 : 3);
            for (k = 0; k <= level; k++)
                puts_(" ");
        }
        if (level == rank - 1)
            put(buf, (size_t)number(buf, sizeof buf, data[(*off)++]));
        else
            layout(data, rank, dims, level + 1, off);
    }
    puts_("]");
}

/* print: the memref format of MLIR's runner utilities (goat/interp/printer.py). */
void goat_print(const double *data, int64_t rank, const int64_t *dims)
{
    char buf[64];
    int64_t i, d, off = 0;
    puts_("Unranked Memref base@ = 0x\xe2\x80\xa6 rank = ");
    put(buf, (size_t)snprintf(buf, sizeof buf, "%lld", (long long)rank));
    puts_(" offset = 0 sizes = [");
    for (i = 0; i < rank; i++) {
        if (i)
            puts_(", ");
        put(buf, (size_t)snprintf(buf, sizeof buf, "%lld", (long long)dims[i]));
    }
    puts_("] strides = [");
    for (i = 0; i < rank; i++) {
        int64_t s = 1;
        for (d = i + 1; d < rank; d++)
            s *= dims[d];
        if (i)
            puts_(", ");
        put(buf, (size_t)snprintf(buf, sizeof buf, "%lld", (long long)s));
    }
    puts_("] data = \n");
    if (rank == 0) {
        puts_("[");
        put(buf, (size_t)number(buf, sizeof buf, data[0]));
        puts_("]\n");
        return;
    }
    layout(data, rank, dims, 0, &off);
    puts_("\n");
}

/* A line of text (a format print). */
void goat_print_line(goat_str *s)
{
    put(s->data ? s->data : "", s->len);
    puts_("\n");
    free(s->data);
    s->data = NULL;
    s->len = s->cap = 0;
}

void goat_str_add(goat_str *s, const char *text)
{
    goat_str_append(s, text, strlen(text));
}

/* ------------------------------------------------------------ checks when the program runs */

/* A loop bound: a whole number from -2**53 to 2**53 (evaluator._bound). */
int64_t goat_bound(double v, const char *site)
{
    char buf[64];
    if (!isfinite(v) || v != floor(v)) {
        number(buf, sizeof buf, v);
        double shown = strtod(buf, NULL);
        if (isfinite(v) && shown != v)      /* %g rounds it (2.0000001 shows as 2): every digit */
            goat_fail(site, "a loop bound must be a whole number, got %s (%.17g)", buf, v);
        goat_fail(site, "a loop bound must be a whole number, got %s", buf);
    }
    if (fabs(v) > 9007199254740992.0) {
        char got[32];
        goat_format_seed(v, got);       /* as Python spells it: 1e+300, not %.17g's digits */
        goat_fail(site, "a loop bound must be a whole number from -%lld to %lld (the loop "
                  "index is a float, exact up to 2**53), got %s",
                  9007199254740992LL, 9007199254740992LL, got);
    }
    return (int64_t)v;
}

/* An index of gather/onehot/scatter_add (builtins._indices): a whole number from 0 to
 * count - 1; `position` is its place among the indices. */
/* an index or a start as a message shows it (builtins.index_text): Python's repr, without
 * the .0 of a whole number (-1, not -1.0), a NaN with its sign as a print shows it */
static void index_text(goat_str *text, double v)
{
    if (isnan(v))
        goat_str_append(text, signbit(v) ? "-nan" : "nan", signbit(v) ? 4 : 3);
    else
        goat_format_repr(text, v);
    if (text->len >= 2 && strcmp(text->data + text->len - 2, ".0") == 0)
        text->data[text->len -= 2] = '\0';
}

int64_t goat_index_fail(double v, int64_t position, int64_t count, const char *op,
                        const char *site)
{
    goat_str text = {0};
    index_text(&text, v);
    if (count == 0)
        goat_fail(site, "%s's indices point into 0 rows or classes, so none is valid; got %s at "
                  "position %lld", op, text.data, (long long)position);
    goat_fail(site, "%s's indices must be whole numbers from 0 to %lld, got %s at position %lld",
              op, (long long)(count - 1), text.data, (long long)position);
}

/* A subscript's tensor of indices, x[idx] (builtins._index_problem for a pair): a whole
 * number from -count to count - 1; `where` names the axis ("axis 0 of 5x3"). */
int64_t goat_rows_fail(double v, int64_t position, int64_t count, const char *where,
                       const char *site)
{
    goat_str text = {0};
    index_text(&text, v);
    if (count == 0)
        goat_fail(site, "%s has no cells to index, got %s at position %lld", where, text.data,
                  (long long)position);
    goat_fail(site, "an index must be a whole number from %lld to %lld (%s has %lld cell%s), "
              "got %s at position %lld", -(long long)count, (long long)(count - 1), where,
              (long long)count, count == 1 ? "" : "s", text.data, (long long)position);
}

/* narrow's start out of range, not whole, or NaN: the message builtins._narrow_start gives */
int64_t goat_narrow_fail(double v, int64_t lo, int64_t last, const char *what,
                         const char *detail, const char *site)
{
    goat_str text = {0};
    index_text(&text, v);
    goat_fail(site, "%s must be a whole number from %lld to %lld (%s), got %s", what,
              (long long)lo, (long long)last, detail, text.data);
}

/* an assert that fails: its message, made in the format buffer */
void goat_assert_fail(goat_str *message, const char *site)
{
    goat_fail(site, "%s", message->data ? message->data : "");
}

/* save and load with a name made when it runs ("w_{step}.npy", in the format buffer `name`,
 * emptied here): relative to the program's folder. */
void goat_save_npy(const char *path, const char *shown, const double *data, int64_t rank,
                   const int64_t *dims, const char *site);
void goat_load_npy(double *out, const char *path, const char *shown, int64_t rank,
                   const int64_t *dims, const char *site);

static char *named_path(const char *folder, const char *shown)
{
    goat_str path = {0};
    if (shown[0] != '/') {
        goat_str_add(&path, folder);
        if (path.len && path.data[path.len - 1] != '/')
            goat_str_add(&path, "/");
    }
    goat_str_add(&path, shown);
    return path.data;
}

static void empty(goat_str *name)
{
    free(name->data);
    name->data = NULL;
    name->len = name->cap = 0;
}

void goat_save_named(const char *folder, goat_str *name, const double *data, int64_t rank,
                     const int64_t *dims, const char *site)
{
    const char *shown = name->data ? name->data : "";
    char *path = named_path(folder, shown);
    goat_save_npy(path, shown, data, rank, dims, site);
    free(path);
    empty(name);
}

void goat_load_named(double *out, const char *folder, goat_str *name, int64_t rank,
                     const int64_t *dims, const char *site)
{
    const char *shown = name->data ? name->data : "";
    char *path = named_path(folder, shown);
    goat_load_npy(out, path, shown, rank, dims, site);
    free(path);
    empty(name);
}

/* ------------------------------------------------------------ step code */

/* The tables step code refers to, set once at the start (goat/aot/lower.py emits them). */
static double **slots;
static void **kernels;
static const char *strtab;
static double **consts;

void goat_tables(double **slot_table, void **kernel_table, const char *string_table,
                 double **const_table)
{
    slots = slot_table;
    kernels = kernel_table;
    strtab = string_table;
    consts = const_table;
}

typedef void (*kernel0)(double *, const char *);
typedef void (*kernel1)(double *, double *, const char *);
typedef void (*kernel2)(double *, double *, double *, const char *);
typedef void (*kernel3)(double *, double *, double *, double *, const char *);

static inline void set_slot(int64_t i, double *v)
{
    double *old = slots[i];
    slots[i] = v;
    goat_release(old);
}

/* Run a straight-line run of steps (goat/aot/lower.py, Lowering.step_code):
 *   1 CALL    kernel out nargs arg... cells site oom: out = a fresh buffer of `cells`, the
 *             kernel computes it from the argument slots
 *   2 ALIAS   out in: out shares in's value (a cast, reshape, a tuple's element)
 *   3 CONST   out k: out is the program's constant k
 *   4 RELEASE slot: the slot's last use is done
 *   5 FAIL    site message: the run-time error goat run reports at this step
 *   6 RESHAPE out in cells site oom rank dims... rank dims...: out shares in's value when goat
 *             run holds it row-major (NumPy's reshape is then a view); otherwise a copy of
 *             the cells with the layout NumPy's reshape gives (a view or a row-major copy)
 *   7 UPDATE  as CALL, but the kernel writes part of its first argument's value (a tape's
 *             row, grad through a loop): out is that value itself when its slot alone holds
 *             it (a loop's state moved in), else a copy of it */
void goat_exec(const int64_t *code, int64_t n)
{
    const int64_t *p = code, *end = code + n;
    while (p < end) {
        switch (*p++) {
        case 1: {
            void *k = kernels[p[0]];
            int64_t out = p[1], nargs = p[2];
            const int64_t *a = p + 3;
            const char *site = strtab + a[nargs + 1];
            double *o = goat_alloc(a[nargs], site, strtab + a[nargs + 2]);
            switch (nargs) {
            case 0: ((kernel0)k)(o, site); break;
            case 1: ((kernel1)k)(o, slots[a[0]], site); break;
            case 2: ((kernel2)k)(o, slots[a[0]], slots[a[1]], site); break;
            default: ((kernel3)k)(o, slots[a[0]], slots[a[1]], slots[a[2]], site); break;
            }
            set_slot(out, o);
            p = a + nargs + 3;
            break;
        }
        case 2: {
            double *v = slots[p[1]];
            goat_retain(v);
            set_slot(p[0], v);
            p += 2;
            break;
        }
        case 7: {
            void *k = kernels[p[0]];
            int64_t out = p[1], nargs = p[2];
            const int64_t *a = p + 3;
            const char *site = strtab + a[nargs + 1];
            double *v = slots[a[0]];
            if (HEAD(v)->refs == 1 && HEAD(v)->strides == NULL) {
                goat_retain(v);                 /* written in place */
            } else {
                double *c = goat_alloc(a[nargs], site, strtab + a[nargs + 2]);
                memcpy(c, v, (size_t)a[nargs] * sizeof(double));
                v = c;
            }
            ((kernel3)k)(v, slots[a[0]], slots[a[1]], slots[a[2]], site);
            set_slot(out, v);
            p = a + nargs + 3;
            break;
        }
        case 6: {
            /* out in cells site oom rank dims... new_rank new_dims... */
            double *v = slots[p[1]];
            const int64_t *od = p + 6, *nd = od + p[5] + 1;
            int64_t nnd = od[p[5]];
            if (v != NULL && HEAD(v)->strides != NULL) {
                double *c = goat_alloc(p[2], strtab + p[3], strtab + p[4]);
                memcpy(c, v, (size_t)p[2] * sizeof(double));
                goat_lay_reshape(c, v, p[5], od, nnd, nd);
                v = c;
            } else {
                goat_retain(v);
            }
            set_slot(p[0], v);
            p = nd + nnd;
            break;
        }
        case 3: {
            double *v = consts[p[1]];
            goat_retain(v);
            set_slot(p[0], v);
            p += 2;
            break;
        }
        case 4:
            set_slot(p[0], NULL);
            p += 1;
            break;
        case 5:
            goat_fail(strtab + p[0], "%s", strtab + p[1]);
        default:
            fputs("goat: internal error (bad step code in a compiled program); this is a bug "
                  "in goat, please report it\n", stderr);
            exit(2);
        }
    }
}

/* ------------------------------------------------------------------------------ argsort */

/* a before b in NumPy's ascending order: NaNs last */
static int sorts_before(double a, double b)
{
    return a < b || (b != b && a == a);
}

static void *sort_buffer(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fputs("goat: out of memory sorting\n", stderr);
        exit(1);
    }
    return p;
}

void goat_argsort_rows(double *out, const double *x, int64_t rows, int64_t cols)
{
    /* NumPy's argsort(x, axis=-1, kind="stable") of x viewed as rows x cols: a bottom-up
     * merge sort of each row's indices, which keeps equal values (and NaNs) in order */
    int64_t *a = sort_buffer((size_t)cols * sizeof(int64_t));
    int64_t *t = sort_buffer((size_t)cols * sizeof(int64_t));
    for (int64_t r = 0; r < rows; r++) {
        const double *row = x + r * cols;
        for (int64_t j = 0; j < cols; j++)
            a[j] = j;
        for (int64_t width = 1; width < cols; width *= 2) {
            for (int64_t lo = 0; lo < cols; lo += 2 * width) {
                int64_t mid = lo + width < cols ? lo + width : cols;
                int64_t hi = lo + 2 * width < cols ? lo + 2 * width : cols;
                int64_t i = lo, j = mid, k = lo;
                while (i < mid && j < hi)       /* the right one first only when smaller */
                    t[k++] = sorts_before(row[a[j]], row[a[i]]) ? a[j++] : a[i++];
                while (i < mid)
                    t[k++] = a[i++];
                while (j < hi)
                    t[k++] = a[j++];
            }
            int64_t *swap = a;
            a = t;
            t = swap;
        }
        for (int64_t j = 0; j < cols; j++)
            out[r * cols + j] = (double)a[j];
    }
    free(a);
    free(t);
}

/* ---------------------------------------------------------------- randperm */

void goat_randperm(double *out, int64_t n, uint64_t seed)
{
    if (n <= 0)
        return;
    double *keys = sort_buffer((size_t)n * sizeof(double));
    goat_rand(keys, n, seed);
    goat_argsort_rows(out, keys, 1, n);
    free(keys);
}

/* npy.c: .npy files for compiled programs -- goat/interp/npyio.py's read_npy and save_npy in
 * C, message for message (goat_load_npy and goat_save_npy, declared in npy.h).
 *
 * Reading follows read_npy step by step: the file must be a regular file (stat, then open
 * without blocking, then fstat); the magic string and version (1.0, 2.0, 3.0); the header
 * length and NumPy's limit of 10000 bytes; the header text (latin-1, or UTF-8 in 3.0) read
 * as ast.literal_eval reads it (a tokenizer and parser for the literals literal_eval accepts,
 * with Python's repr for the messages that quote a value); the header's entries; its descr
 * turned into a dtype as numpy.lib.format.descr_to_dtype and numpy.dtype do (type strings,
 * names, datetime units, comma strings, sub-array tuples, records, padding, titles); the
 * element type accepted or named as _dtype_problem names it; the declared shape; exactly the
 * promised bytes; the values converted to float64 (float16 as NumPy converts it, NaN payloads
 * kept; any nonzero bool byte is 1; an int64 or uint64 that float64 cannot hold exactly is
 * refused, the first in row-major order named).
 *
 * Writing follows save_npy: a symbolic link is followed (os.path.realpath), a directory or a
 * non-regular file refused, a read-only file kept, a temporary file made beside the target
 * (".NAME.XXXXXXXX.tmp", mode 0600) and given NumPy's header for a C-ordered '<f8' array and
 * the data, fsynced, given the target's mode (or 0666 less the umask), renamed onto the
 * target, and the folder fsynced; on any error the temporary file is removed and the target
 * is untouched.  A failed write of the data is an OS error like any other (ENOSPC: "the disk
 * is full").
 *
 * OS errors are worded as _os_message words them (errno -> words; other errors strerror's text
 * with its first letter lowered, as Python's OSError.strerror is).
 *
 * Not reproduced (rare; the message's first words are still read_npy's):
 * - a \N{NAME} escape in a header's string: a damaged header here (Python knows the names);
 * - a set quoted in a message lists its members in the header's order, not Python's hash order;
 * - a tuple descr (dtype, X) where X is a non-empty dict or a list NumPy takes as a dtype;
 *   the str() of a union dtype (dtype, [fields]);
 * - 'M8[s/0]' is "not a NumPy dtype" here (NumPy itself dies of a division by zero);
 * - where read_npy itself fails without an OpError (repr() of an int of more than 4300
 *   digits, an OverflowError in huge_int + 1j), a message here (the digits; a damaged header);
 * - one tokenizer corner: an indented last line holding a line continuation and a form feed;
 * - save_npy keeps a file truncated by a failed final flush (NumPy's tofile ignores fclose's
 *   result); here that is an error and the old file stays.
 * The type names NumPy looks up (numpy.sctypeDict) are those of 64-bit Linux.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "goat_rt.h"
#include "npy.h"

#define MAX_HEADER_SIZE 10000      /* NumPy's max_header_size */
#define PY_MAXLEVEL 200            /* Python's tokenizer: most nested brackets */
#define PY_MAX_STR_DIGITS 4300     /* Python's int_max_str_digits */
#define NPY_MAXDIMS_ 64

/* ------------------------------------------------------------------------------ memory */

/* Everything a load allocates is owned by one arena, freed at the end (a failure exits). */
typedef struct {
    void **ptrs;
    size_t n, cap;
} arena;

static void out_of_memory(void)
{
    fputs("goat: out of memory reading a .npy file\n", stderr);
    exit(1);
}

static void *a_own(arena *a, void *p)
{
    if (p == NULL)
        out_of_memory();
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        void **q = realloc(a->ptrs, cap * sizeof *q);
        if (q == NULL)
            out_of_memory();
        a->ptrs = q;
        a->cap = cap;
    }
    a->ptrs[a->n++] = p;
    return p;
}

static void *a_alloc(arena *a, size_t size)
{
    return a_own(a, calloc(1, size ? size : 1));
}

static void a_free(arena *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->ptrs[i]);
    free(a->ptrs);
    a->ptrs = NULL;
    a->n = a->cap = 0;
}

/* A growable array whose final block the arena takes. */
typedef struct {
    void *data;
    size_t n, cap, elem;
} vec;

static void vec_init(vec *v, size_t elem)
{
    v->data = NULL;
    v->n = v->cap = 0;
    v->elem = elem;
}

static void *vec_push(vec *v)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 8;
        void *d = realloc(v->data, cap * v->elem);
        if (d == NULL)
            out_of_memory();
        v->data = d;
        v->cap = cap;
    }
    void *slot = (char *)v->data + v->n * v->elem;
    memset(slot, 0, v->elem);
    v->n++;
    return slot;
}

static void *vec_keep(vec *v, arena *a)
{
    if (v->data == NULL)
        return a_alloc(a, v->elem);
    return a_own(a, v->data);
}

/* ------------------------------------------------------------------------------- text */

static void sb_n(goat_str *s, const char *t, size_t n) { goat_str_append(s, t, n); }
static void sb(goat_str *s, const char *t) { goat_str_append(s, t, strlen(t)); }
static void sb_c(goat_str *s, char c) { goat_str_append(s, &c, 1); }
static const char *sb_str(const goat_str *s) { return s->data ? s->data : ""; }
static void sb_free(goat_str *s) { free(s->data); s->data = NULL; s->len = s->cap = 0; }

__attribute__((format(printf, 2, 3)))
static void sb_f(goat_str *s, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        sb_n(s, small, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (big == NULL)
        out_of_memory();
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_n(s, big, (size_t)n);
    free(big);
}

/* a code point as UTF-8 (a lone surrogate as its 3 bytes; repr never writes one) */
static void sb_cp(goat_str *s, uint32_t c)
{
    char b[4];
    if (c < 0x80) {
        b[0] = (char)c;
        sb_n(s, b, 1);
    } else if (c < 0x800) {
        b[0] = (char)(0xC0 | (c >> 6));
        b[1] = (char)(0x80 | (c & 0x3F));
        sb_n(s, b, 2);
    } else if (c < 0x10000) {
        b[0] = (char)(0xE0 | (c >> 12));
        b[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (char)(0x80 | (c & 0x3F));
        sb_n(s, b, 3);
    } else {
        b[0] = (char)(0xF0 | (c >> 18));
        b[1] = (char)(0x80 | ((c >> 12) & 0x3F));
        b[2] = (char)(0x80 | ((c >> 6) & 0x3F));
        b[3] = (char)(0x80 | (c & 0x3F));
        sb_n(s, b, 4);
    }
}

/* Strict UTF-8 (as Python's decoder: no overlong forms, no surrogates, at most U+10FFFF).
 * Returns the number of code points, or -1.  With `escape`, a byte that does not start a
 * valid sequence becomes U+DC80..U+DCFF (surrogateescape, as os.fsdecode). */
static long utf8_decode(const unsigned char *p, size_t n, uint32_t *out, int escape)
{
    size_t i = 0;
    long k = 0;
    while (i < n) {
        unsigned c = p[i];
        uint32_t cp;
        size_t len;
        if (c < 0x80) {
            cp = c;
            len = 1;
        } else if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
            cp = c & 0x1F;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            cp = c & 0x0F;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            cp = c & 0x07;
        } else {
            goto bad;
        }
        if (len > 1) {
            if (i + len > n)
                goto bad;
            for (size_t j = 1; j < len; j++) {
                unsigned d = p[i + j];
                if ((d & 0xC0) != 0x80)
                    goto bad;
                cp = (cp << 6) | (d & 0x3F);
            }
            if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF)))
                    || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
                goto bad;
        }
        if (out)
            out[k] = cp;
        k++;
        i += len;
        continue;
    bad:
        if (!escape)
            return -1;
        if (out)
            out[k] = 0xDC00 + c;
        k++;
        i++;
    }
    return k;
}

/* Python 3.11's str.isprintable (Unicode 14.0): the code points that are not printable. */
static const uint32_t NONPRINTABLE[][2] = {
    {0x0, 0x1f}, {0x7f, 0xa0}, {0xad, 0xad}, {0x378, 0x379}, {0x380, 0x383}, {0x38b, 0x38b},
    {0x38d, 0x38d}, {0x3a2, 0x3a2}, {0x530, 0x530}, {0x557, 0x558}, {0x58b, 0x58c},
    {0x590, 0x590}, {0x5c8, 0x5cf}, {0x5eb, 0x5ee}, {0x5f5, 0x605}, {0x61c, 0x61c},
    {0x6dd, 0x6dd}, {0x70e, 0x70f}, {0x74b, 0x74c}, {0x7b2, 0x7bf}, {0x7fb, 0x7fc},
    {0x82e, 0x82f}, {0x83f, 0x83f}, {0x85c, 0x85d}, {0x85f, 0x85f}, {0x86b, 0x86f},
    {0x88f, 0x897}, {0x8e2, 0x8e2}, {0x984, 0x984}, {0x98d, 0x98e}, {0x991, 0x992},
    {0x9a9, 0x9a9}, {0x9b1, 0x9b1}, {0x9b3, 0x9b5}, {0x9ba, 0x9bb}, {0x9c5, 0x9c6},
    {0x9c9, 0x9ca}, {0x9cf, 0x9d6}, {0x9d8, 0x9db}, {0x9de, 0x9de}, {0x9e4, 0x9e5},
    {0x9ff, 0xa00}, {0xa04, 0xa04}, {0xa0b, 0xa0e}, {0xa11, 0xa12}, {0xa29, 0xa29},
    {0xa31, 0xa31}, {0xa34, 0xa34}, {0xa37, 0xa37}, {0xa3a, 0xa3b}, {0xa3d, 0xa3d},
    {0xa43, 0xa46}, {0xa49, 0xa4a}, {0xa4e, 0xa50}, {0xa52, 0xa58}, {0xa5d, 0xa5d},
    {0xa5f, 0xa65}, {0xa77, 0xa80}, {0xa84, 0xa84}, {0xa8e, 0xa8e}, {0xa92, 0xa92},
    {0xaa9, 0xaa9}, {0xab1, 0xab1}, {0xab4, 0xab4}, {0xaba, 0xabb}, {0xac6, 0xac6},
    {0xaca, 0xaca}, {0xace, 0xacf}, {0xad1, 0xadf}, {0xae4, 0xae5}, {0xaf2, 0xaf8},
    {0xb00, 0xb00}, {0xb04, 0xb04}, {0xb0d, 0xb0e}, {0xb11, 0xb12}, {0xb29, 0xb29},
    {0xb31, 0xb31}, {0xb34, 0xb34}, {0xb3a, 0xb3b}, {0xb45, 0xb46}, {0xb49, 0xb4a},
    {0xb4e, 0xb54}, {0xb58, 0xb5b}, {0xb5e, 0xb5e}, {0xb64, 0xb65}, {0xb78, 0xb81},
    {0xb84, 0xb84}, {0xb8b, 0xb8d}, {0xb91, 0xb91}, {0xb96, 0xb98}, {0xb9b, 0xb9b},
    {0xb9d, 0xb9d}, {0xba0, 0xba2}, {0xba5, 0xba7}, {0xbab, 0xbad}, {0xbba, 0xbbd},
    {0xbc3, 0xbc5}, {0xbc9, 0xbc9}, {0xbce, 0xbcf}, {0xbd1, 0xbd6}, {0xbd8, 0xbe5},
    {0xbfb, 0xbff}, {0xc0d, 0xc0d}, {0xc11, 0xc11}, {0xc29, 0xc29}, {0xc3a, 0xc3b},
    {0xc45, 0xc45}, {0xc49, 0xc49}, {0xc4e, 0xc54}, {0xc57, 0xc57}, {0xc5b, 0xc5c},
    {0xc5e, 0xc5f}, {0xc64, 0xc65}, {0xc70, 0xc76}, {0xc8d, 0xc8d}, {0xc91, 0xc91},
    {0xca9, 0xca9}, {0xcb4, 0xcb4}, {0xcba, 0xcbb}, {0xcc5, 0xcc5}, {0xcc9, 0xcc9},
    {0xcce, 0xcd4}, {0xcd7, 0xcdc}, {0xcdf, 0xcdf}, {0xce4, 0xce5}, {0xcf0, 0xcf0},
    {0xcf3, 0xcff}, {0xd0d, 0xd0d}, {0xd11, 0xd11}, {0xd45, 0xd45}, {0xd49, 0xd49},
    {0xd50, 0xd53}, {0xd64, 0xd65}, {0xd80, 0xd80}, {0xd84, 0xd84}, {0xd97, 0xd99},
    {0xdb2, 0xdb2}, {0xdbc, 0xdbc}, {0xdbe, 0xdbf}, {0xdc7, 0xdc9}, {0xdcb, 0xdce},
    {0xdd5, 0xdd5}, {0xdd7, 0xdd7}, {0xde0, 0xde5}, {0xdf0, 0xdf1}, {0xdf5, 0xe00},
    {0xe3b, 0xe3e}, {0xe5c, 0xe80}, {0xe83, 0xe83}, {0xe85, 0xe85}, {0xe8b, 0xe8b},
    {0xea4, 0xea4}, {0xea6, 0xea6}, {0xebe, 0xebf}, {0xec5, 0xec5}, {0xec7, 0xec7},
    {0xece, 0xecf}, {0xeda, 0xedb}, {0xee0, 0xeff}, {0xf48, 0xf48}, {0xf6d, 0xf70},
    {0xf98, 0xf98}, {0xfbd, 0xfbd}, {0xfcd, 0xfcd}, {0xfdb, 0xfff}, {0x10c6, 0x10c6},
    {0x10c8, 0x10cc}, {0x10ce, 0x10cf}, {0x1249, 0x1249}, {0x124e, 0x124f}, {0x1257, 0x1257},
    {0x1259, 0x1259}, {0x125e, 0x125f}, {0x1289, 0x1289}, {0x128e, 0x128f}, {0x12b1, 0x12b1},
    {0x12b6, 0x12b7}, {0x12bf, 0x12bf}, {0x12c1, 0x12c1}, {0x12c6, 0x12c7}, {0x12d7, 0x12d7},
    {0x1311, 0x1311}, {0x1316, 0x1317}, {0x135b, 0x135c}, {0x137d, 0x137f}, {0x139a, 0x139f},
    {0x13f6, 0x13f7}, {0x13fe, 0x13ff}, {0x1680, 0x1680}, {0x169d, 0x169f}, {0x16f9, 0x16ff},
    {0x1716, 0x171e}, {0x1737, 0x173f}, {0x1754, 0x175f}, {0x176d, 0x176d}, {0x1771, 0x1771},
    {0x1774, 0x177f}, {0x17de, 0x17df}, {0x17ea, 0x17ef}, {0x17fa, 0x17ff}, {0x180e, 0x180e},
    {0x181a, 0x181f}, {0x1879, 0x187f}, {0x18ab, 0x18af}, {0x18f6, 0x18ff}, {0x191f, 0x191f},
    {0x192c, 0x192f}, {0x193c, 0x193f}, {0x1941, 0x1943}, {0x196e, 0x196f}, {0x1975, 0x197f},
    {0x19ac, 0x19af}, {0x19ca, 0x19cf}, {0x19db, 0x19dd}, {0x1a1c, 0x1a1d}, {0x1a5f, 0x1a5f},
    {0x1a7d, 0x1a7e}, {0x1a8a, 0x1a8f}, {0x1a9a, 0x1a9f}, {0x1aae, 0x1aaf}, {0x1acf, 0x1aff},
    {0x1b4d, 0x1b4f}, {0x1b7f, 0x1b7f}, {0x1bf4, 0x1bfb}, {0x1c38, 0x1c3a}, {0x1c4a, 0x1c4c},
    {0x1c89, 0x1c8f}, {0x1cbb, 0x1cbc}, {0x1cc8, 0x1ccf}, {0x1cfb, 0x1cff}, {0x1f16, 0x1f17},
    {0x1f1e, 0x1f1f}, {0x1f46, 0x1f47}, {0x1f4e, 0x1f4f}, {0x1f58, 0x1f58}, {0x1f5a, 0x1f5a},
    {0x1f5c, 0x1f5c}, {0x1f5e, 0x1f5e}, {0x1f7e, 0x1f7f}, {0x1fb5, 0x1fb5}, {0x1fc5, 0x1fc5},
    {0x1fd4, 0x1fd5}, {0x1fdc, 0x1fdc}, {0x1ff0, 0x1ff1}, {0x1ff5, 0x1ff5}, {0x1fff, 0x200f},
    {0x2028, 0x202f}, {0x205f, 0x206f}, {0x2072, 0x2073}, {0x208f, 0x208f}, {0x209d, 0x209f},
    {0x20c1, 0x20cf}, {0x20f1, 0x20ff}, {0x218c, 0x218f}, {0x2427, 0x243f}, {0x244b, 0x245f},
    {0x2b74, 0x2b75}, {0x2b96, 0x2b96}, {0x2cf4, 0x2cf8}, {0x2d26, 0x2d26}, {0x2d28, 0x2d2c},
    {0x2d2e, 0x2d2f}, {0x2d68, 0x2d6e}, {0x2d71, 0x2d7e}, {0x2d97, 0x2d9f}, {0x2da7, 0x2da7},
    {0x2daf, 0x2daf}, {0x2db7, 0x2db7}, {0x2dbf, 0x2dbf}, {0x2dc7, 0x2dc7}, {0x2dcf, 0x2dcf},
    {0x2dd7, 0x2dd7}, {0x2ddf, 0x2ddf}, {0x2e5e, 0x2e7f}, {0x2e9a, 0x2e9a}, {0x2ef4, 0x2eff},
    {0x2fd6, 0x2fef}, {0x2ffc, 0x3000}, {0x3040, 0x3040}, {0x3097, 0x3098}, {0x3100, 0x3104},
    {0x3130, 0x3130}, {0x318f, 0x318f}, {0x31e4, 0x31ef}, {0x321f, 0x321f}, {0xa48d, 0xa48f},
    {0xa4c7, 0xa4cf}, {0xa62c, 0xa63f}, {0xa6f8, 0xa6ff}, {0xa7cb, 0xa7cf}, {0xa7d2, 0xa7d2},
    {0xa7d4, 0xa7d4}, {0xa7da, 0xa7f1}, {0xa82d, 0xa82f}, {0xa83a, 0xa83f}, {0xa878, 0xa87f},
    {0xa8c6, 0xa8cd}, {0xa8da, 0xa8df}, {0xa954, 0xa95e}, {0xa97d, 0xa97f}, {0xa9ce, 0xa9ce},
    {0xa9da, 0xa9dd}, {0xa9ff, 0xa9ff}, {0xaa37, 0xaa3f}, {0xaa4e, 0xaa4f}, {0xaa5a, 0xaa5b},
    {0xaac3, 0xaada}, {0xaaf7, 0xab00}, {0xab07, 0xab08}, {0xab0f, 0xab10}, {0xab17, 0xab1f},
    {0xab27, 0xab27}, {0xab2f, 0xab2f}, {0xab6c, 0xab6f}, {0xabee, 0xabef}, {0xabfa, 0xabff},
    {0xd7a4, 0xd7af}, {0xd7c7, 0xd7ca}, {0xd7fc, 0xf8ff}, {0xfa6e, 0xfa6f}, {0xfada, 0xfaff},
    {0xfb07, 0xfb12}, {0xfb18, 0xfb1c}, {0xfb37, 0xfb37}, {0xfb3d, 0xfb3d}, {0xfb3f, 0xfb3f},
    {0xfb42, 0xfb42}, {0xfb45, 0xfb45}, {0xfbc3, 0xfbd2}, {0xfd90, 0xfd91}, {0xfdc8, 0xfdce},
    {0xfdd0, 0xfdef}, {0xfe1a, 0xfe1f}, {0xfe53, 0xfe53}, {0xfe67, 0xfe67}, {0xfe6c, 0xfe6f},
    {0xfe75, 0xfe75}, {0xfefd, 0xff00}, {0xffbf, 0xffc1}, {0xffc8, 0xffc9}, {0xffd0, 0xffd1},
    {0xffd8, 0xffd9}, {0xffdd, 0xffdf}, {0xffe7, 0xffe7}, {0xffef, 0xfffb}, {0xfffe, 0xffff},
    {0x1000c, 0x1000c}, {0x10027, 0x10027}, {0x1003b, 0x1003b}, {0x1003e, 0x1003e},
    {0x1004e, 0x1004f}, {0x1005e, 0x1007f}, {0x100fb, 0x100ff}, {0x10103, 0x10106},
    {0x10134, 0x10136}, {0x1018f, 0x1018f}, {0x1019d, 0x1019f}, {0x101a1, 0x101cf},
    {0x101fe, 0x1027f}, {0x1029d, 0x1029f}, {0x102d1, 0x102df}, {0x102fc, 0x102ff},
    {0x10324, 0x1032c}, {0x1034b, 0x1034f}, {0x1037b, 0x1037f}, {0x1039e, 0x1039e},
    {0x103c4, 0x103c7}, {0x103d6, 0x103ff}, {0x1049e, 0x1049f}, {0x104aa, 0x104af},
    {0x104d4, 0x104d7}, {0x104fc, 0x104ff}, {0x10528, 0x1052f}, {0x10564, 0x1056e},
    {0x1057b, 0x1057b}, {0x1058b, 0x1058b}, {0x10593, 0x10593}, {0x10596, 0x10596},
    {0x105a2, 0x105a2}, {0x105b2, 0x105b2}, {0x105ba, 0x105ba}, {0x105bd, 0x105ff},
    {0x10737, 0x1073f}, {0x10756, 0x1075f}, {0x10768, 0x1077f}, {0x10786, 0x10786},
    {0x107b1, 0x107b1}, {0x107bb, 0x107ff}, {0x10806, 0x10807}, {0x10809, 0x10809},
    {0x10836, 0x10836}, {0x10839, 0x1083b}, {0x1083d, 0x1083e}, {0x10856, 0x10856},
    {0x1089f, 0x108a6}, {0x108b0, 0x108df}, {0x108f3, 0x108f3}, {0x108f6, 0x108fa},
    {0x1091c, 0x1091e}, {0x1093a, 0x1093e}, {0x10940, 0x1097f}, {0x109b8, 0x109bb},
    {0x109d0, 0x109d1}, {0x10a04, 0x10a04}, {0x10a07, 0x10a0b}, {0x10a14, 0x10a14},
    {0x10a18, 0x10a18}, {0x10a36, 0x10a37}, {0x10a3b, 0x10a3e}, {0x10a49, 0x10a4f},
    {0x10a59, 0x10a5f}, {0x10aa0, 0x10abf}, {0x10ae7, 0x10aea}, {0x10af7, 0x10aff},
    {0x10b36, 0x10b38}, {0x10b56, 0x10b57}, {0x10b73, 0x10b77}, {0x10b92, 0x10b98},
    {0x10b9d, 0x10ba8}, {0x10bb0, 0x10bff}, {0x10c49, 0x10c7f}, {0x10cb3, 0x10cbf},
    {0x10cf3, 0x10cf9}, {0x10d28, 0x10d2f}, {0x10d3a, 0x10e5f}, {0x10e7f, 0x10e7f},
    {0x10eaa, 0x10eaa}, {0x10eae, 0x10eaf}, {0x10eb2, 0x10eff}, {0x10f28, 0x10f2f},
    {0x10f5a, 0x10f6f}, {0x10f8a, 0x10faf}, {0x10fcc, 0x10fdf}, {0x10ff7, 0x10fff},
    {0x1104e, 0x11051}, {0x11076, 0x1107e}, {0x110bd, 0x110bd}, {0x110c3, 0x110cf},
    {0x110e9, 0x110ef}, {0x110fa, 0x110ff}, {0x11135, 0x11135}, {0x11148, 0x1114f},
    {0x11177, 0x1117f}, {0x111e0, 0x111e0}, {0x111f5, 0x111ff}, {0x11212, 0x11212},
    {0x1123f, 0x1127f}, {0x11287, 0x11287}, {0x11289, 0x11289}, {0x1128e, 0x1128e},
    {0x1129e, 0x1129e}, {0x112aa, 0x112af}, {0x112eb, 0x112ef}, {0x112fa, 0x112ff},
    {0x11304, 0x11304}, {0x1130d, 0x1130e}, {0x11311, 0x11312}, {0x11329, 0x11329},
    {0x11331, 0x11331}, {0x11334, 0x11334}, {0x1133a, 0x1133a}, {0x11345, 0x11346},
    {0x11349, 0x1134a}, {0x1134e, 0x1134f}, {0x11351, 0x11356}, {0x11358, 0x1135c},
    {0x11364, 0x11365}, {0x1136d, 0x1136f}, {0x11375, 0x113ff}, {0x1145c, 0x1145c},
    {0x11462, 0x1147f}, {0x114c8, 0x114cf}, {0x114da, 0x1157f}, {0x115b6, 0x115b7},
    {0x115de, 0x115ff}, {0x11645, 0x1164f}, {0x1165a, 0x1165f}, {0x1166d, 0x1167f},
    {0x116ba, 0x116bf}, {0x116ca, 0x116ff}, {0x1171b, 0x1171c}, {0x1172c, 0x1172f},
    {0x11747, 0x117ff}, {0x1183c, 0x1189f}, {0x118f3, 0x118fe}, {0x11907, 0x11908},
    {0x1190a, 0x1190b}, {0x11914, 0x11914}, {0x11917, 0x11917}, {0x11936, 0x11936},
    {0x11939, 0x1193a}, {0x11947, 0x1194f}, {0x1195a, 0x1199f}, {0x119a8, 0x119a9},
    {0x119d8, 0x119d9}, {0x119e5, 0x119ff}, {0x11a48, 0x11a4f}, {0x11aa3, 0x11aaf},
    {0x11af9, 0x11bff}, {0x11c09, 0x11c09}, {0x11c37, 0x11c37}, {0x11c46, 0x11c4f},
    {0x11c6d, 0x11c6f}, {0x11c90, 0x11c91}, {0x11ca8, 0x11ca8}, {0x11cb7, 0x11cff},
    {0x11d07, 0x11d07}, {0x11d0a, 0x11d0a}, {0x11d37, 0x11d39}, {0x11d3b, 0x11d3b},
    {0x11d3e, 0x11d3e}, {0x11d48, 0x11d4f}, {0x11d5a, 0x11d5f}, {0x11d66, 0x11d66},
    {0x11d69, 0x11d69}, {0x11d8f, 0x11d8f}, {0x11d92, 0x11d92}, {0x11d99, 0x11d9f},
    {0x11daa, 0x11edf}, {0x11ef9, 0x11faf}, {0x11fb1, 0x11fbf}, {0x11ff2, 0x11ffe},
    {0x1239a, 0x123ff}, {0x1246f, 0x1246f}, {0x12475, 0x1247f}, {0x12544, 0x12f8f},
    {0x12ff3, 0x12fff}, {0x1342f, 0x143ff}, {0x14647, 0x167ff}, {0x16a39, 0x16a3f},
    {0x16a5f, 0x16a5f}, {0x16a6a, 0x16a6d}, {0x16abf, 0x16abf}, {0x16aca, 0x16acf},
    {0x16aee, 0x16aef}, {0x16af6, 0x16aff}, {0x16b46, 0x16b4f}, {0x16b5a, 0x16b5a},
    {0x16b62, 0x16b62}, {0x16b78, 0x16b7c}, {0x16b90, 0x16e3f}, {0x16e9b, 0x16eff},
    {0x16f4b, 0x16f4e}, {0x16f88, 0x16f8e}, {0x16fa0, 0x16fdf}, {0x16fe5, 0x16fef},
    {0x16ff2, 0x16fff}, {0x187f8, 0x187ff}, {0x18cd6, 0x18cff}, {0x18d09, 0x1afef},
    {0x1aff4, 0x1aff4}, {0x1affc, 0x1affc}, {0x1afff, 0x1afff}, {0x1b123, 0x1b14f},
    {0x1b153, 0x1b163}, {0x1b168, 0x1b16f}, {0x1b2fc, 0x1bbff}, {0x1bc6b, 0x1bc6f},
    {0x1bc7d, 0x1bc7f}, {0x1bc89, 0x1bc8f}, {0x1bc9a, 0x1bc9b}, {0x1bca0, 0x1ceff},
    {0x1cf2e, 0x1cf2f}, {0x1cf47, 0x1cf4f}, {0x1cfc4, 0x1cfff}, {0x1d0f6, 0x1d0ff},
    {0x1d127, 0x1d128}, {0x1d173, 0x1d17a}, {0x1d1eb, 0x1d1ff}, {0x1d246, 0x1d2df},
    {0x1d2f4, 0x1d2ff}, {0x1d357, 0x1d35f}, {0x1d379, 0x1d3ff}, {0x1d455, 0x1d455},
    {0x1d49d, 0x1d49d}, {0x1d4a0, 0x1d4a1}, {0x1d4a3, 0x1d4a4}, {0x1d4a7, 0x1d4a8},
    {0x1d4ad, 0x1d4ad}, {0x1d4ba, 0x1d4ba}, {0x1d4bc, 0x1d4bc}, {0x1d4c4, 0x1d4c4},
    {0x1d506, 0x1d506}, {0x1d50b, 0x1d50c}, {0x1d515, 0x1d515}, {0x1d51d, 0x1d51d},
    {0x1d53a, 0x1d53a}, {0x1d53f, 0x1d53f}, {0x1d545, 0x1d545}, {0x1d547, 0x1d549},
    {0x1d551, 0x1d551}, {0x1d6a6, 0x1d6a7}, {0x1d7cc, 0x1d7cd}, {0x1da8c, 0x1da9a},
    {0x1daa0, 0x1daa0}, {0x1dab0, 0x1deff}, {0x1df1f, 0x1dfff}, {0x1e007, 0x1e007},
    {0x1e019, 0x1e01a}, {0x1e022, 0x1e022}, {0x1e025, 0x1e025}, {0x1e02b, 0x1e0ff},
    {0x1e12d, 0x1e12f}, {0x1e13e, 0x1e13f}, {0x1e14a, 0x1e14d}, {0x1e150, 0x1e28f},
    {0x1e2af, 0x1e2bf}, {0x1e2fa, 0x1e2fe}, {0x1e300, 0x1e7df}, {0x1e7e7, 0x1e7e7},
    {0x1e7ec, 0x1e7ec}, {0x1e7ef, 0x1e7ef}, {0x1e7ff, 0x1e7ff}, {0x1e8c5, 0x1e8c6},
    {0x1e8d7, 0x1e8ff}, {0x1e94c, 0x1e94f}, {0x1e95a, 0x1e95d}, {0x1e960, 0x1ec70},
    {0x1ecb5, 0x1ed00}, {0x1ed3e, 0x1edff}, {0x1ee04, 0x1ee04}, {0x1ee20, 0x1ee20},
    {0x1ee23, 0x1ee23}, {0x1ee25, 0x1ee26}, {0x1ee28, 0x1ee28}, {0x1ee33, 0x1ee33},
    {0x1ee38, 0x1ee38}, {0x1ee3a, 0x1ee3a}, {0x1ee3c, 0x1ee41}, {0x1ee43, 0x1ee46},
    {0x1ee48, 0x1ee48}, {0x1ee4a, 0x1ee4a}, {0x1ee4c, 0x1ee4c}, {0x1ee50, 0x1ee50},
    {0x1ee53, 0x1ee53}, {0x1ee55, 0x1ee56}, {0x1ee58, 0x1ee58}, {0x1ee5a, 0x1ee5a},
    {0x1ee5c, 0x1ee5c}, {0x1ee5e, 0x1ee5e}, {0x1ee60, 0x1ee60}, {0x1ee63, 0x1ee63},
    {0x1ee65, 0x1ee66}, {0x1ee6b, 0x1ee6b}, {0x1ee73, 0x1ee73}, {0x1ee78, 0x1ee78},
    {0x1ee7d, 0x1ee7d}, {0x1ee7f, 0x1ee7f}, {0x1ee8a, 0x1ee8a}, {0x1ee9c, 0x1eea0},
    {0x1eea4, 0x1eea4}, {0x1eeaa, 0x1eeaa}, {0x1eebc, 0x1eeef}, {0x1eef2, 0x1efff},
    {0x1f02c, 0x1f02f}, {0x1f094, 0x1f09f}, {0x1f0af, 0x1f0b0}, {0x1f0c0, 0x1f0c0},
    {0x1f0d0, 0x1f0d0}, {0x1f0f6, 0x1f0ff}, {0x1f1ae, 0x1f1e5}, {0x1f203, 0x1f20f},
    {0x1f23c, 0x1f23f}, {0x1f249, 0x1f24f}, {0x1f252, 0x1f25f}, {0x1f266, 0x1f2ff},
    {0x1f6d8, 0x1f6dc}, {0x1f6ed, 0x1f6ef}, {0x1f6fd, 0x1f6ff}, {0x1f774, 0x1f77f},
    {0x1f7d9, 0x1f7df}, {0x1f7ec, 0x1f7ef}, {0x1f7f1, 0x1f7ff}, {0x1f80c, 0x1f80f},
    {0x1f848, 0x1f84f}, {0x1f85a, 0x1f85f}, {0x1f888, 0x1f88f}, {0x1f8ae, 0x1f8af},
    {0x1f8b2, 0x1f8ff}, {0x1fa54, 0x1fa5f}, {0x1fa6e, 0x1fa6f}, {0x1fa75, 0x1fa77},
    {0x1fa7d, 0x1fa7f}, {0x1fa87, 0x1fa8f}, {0x1faad, 0x1faaf}, {0x1fabb, 0x1fabf},
    {0x1fac6, 0x1facf}, {0x1fada, 0x1fadf}, {0x1fae8, 0x1faef}, {0x1faf7, 0x1faff},
    {0x1fb93, 0x1fb93}, {0x1fbcb, 0x1fbef}, {0x1fbfa, 0x1ffff}, {0x2a6e0, 0x2a6ff},
    {0x2b739, 0x2b73f}, {0x2b81e, 0x2b81f}, {0x2cea2, 0x2ceaf}, {0x2ebe1, 0x2f7ff},
    {0x2fa1e, 0x2ffff}, {0x3134b, 0xe00ff}, {0xe01f0, 0x10ffff},
};

static int py_isprintable(uint32_t c)
{
    size_t lo = 0, hi = sizeof NONPRINTABLE / sizeof NONPRINTABLE[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (c < NONPRINTABLE[mid][0])
            hi = mid;
        else if (c > NONPRINTABLE[mid][1])
            lo = mid + 1;
        else
            return 0;
    }
    return 1;
}

/* Python's str.isspace (what str.strip() and re's \s take away) */
static int py_isspace(uint32_t c)
{
    return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0
           || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029
           || c == 0x202F || c == 0x205F || c == 0x3000;
}

/* repr() of a str */
static void repr_str(goat_str *s, const uint32_t *c, size_t n)
{
    int has_single = 0, has_double = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i] == '\'')
            has_single = 1;
        else if (c[i] == '"')
            has_double = 1;
    }
    char q = (has_single && !has_double) ? '"' : '\'';
    sb_c(s, q);
    for (size_t i = 0; i < n; i++) {
        uint32_t ch = c[i];
        if (ch == (uint32_t)q || ch == '\\') {
            sb_c(s, '\\');
            sb_c(s, (char)ch);
        } else if (ch == '\t') {
            sb(s, "\\t");
        } else if (ch == '\n') {
            sb(s, "\\n");
        } else if (ch == '\r') {
            sb(s, "\\r");
        } else if (ch < 0x20 || ch == 0x7F) {
            sb_f(s, "\\x%02x", ch);
        } else if (ch < 0x7F) {
            sb_c(s, (char)ch);
        } else if (py_isprintable(ch)) {
            sb_cp(s, ch);
        } else if (ch <= 0xFF) {
            sb_f(s, "\\x%02x", ch);
        } else if (ch <= 0xFFFF) {
            sb_f(s, "\\u%04x", ch);
        } else {
            sb_f(s, "\\U%08x", ch);
        }
    }
    sb_c(s, q);
}

/* repr() of a bytes */
static void repr_bytes(goat_str *s, const uint32_t *c, size_t n)
{
    int has_single = 0, has_double = 0;
    for (size_t i = 0; i < n; i++) {
        if (c[i] == '\'')
            has_single = 1;
        else if (c[i] == '"')
            has_double = 1;
    }
    char q = (has_single && !has_double) ? '"' : '\'';
    sb_c(s, 'b');
    sb_c(s, q);
    for (size_t i = 0; i < n; i++) {
        uint32_t ch = c[i];
        if (ch == (uint32_t)q || ch == '\\') {
            sb_c(s, '\\');
            sb_c(s, (char)ch);
        } else if (ch == '\t') {
            sb(s, "\\t");
        } else if (ch == '\n') {
            sb(s, "\\n");
        } else if (ch == '\r') {
            sb(s, "\\r");
        } else if (ch < 0x20 || ch >= 0x7F) {
            sb_f(s, "\\x%02x", ch);
        } else {
            sb_c(s, (char)ch);
        }
    }
    sb_c(s, q);
}

/* A C string as Python's repr() of the str os.fsdecode would make of it. */
static void repr_path(goat_str *s, const char *p)
{
    size_t n = strlen(p);
    uint32_t *cp = malloc((n + 1) * sizeof *cp);
    if (cp == NULL)
        out_of_memory();
    long k = utf8_decode((const unsigned char *)p, n, cp, 1);
    repr_str(s, cp, (size_t)k);
    free(cp);
}

/* Python's float repr ('r' format): the shortest digits that read back as x.
 * add_dot0: "1.0" rather than "1" (float's repr; complex's parts have none).
 * sign: a '+' before a positive value (the imaginary part of a complex). */
static void repr_float(goat_str *s, double x, int add_dot0, int sign)
{
    if (isnan(x)) {
        sb(s, sign ? "+nan" : "nan");
        return;
    }
    if (signbit(x))
        sb_c(s, '-');
    else if (sign)
        sb_c(s, '+');
    if (signbit(x))
        x = -x;
    if (isinf(x)) {
        sb(s, "inf");
        return;
    }
    if (x == 0.0) {
        sb(s, add_dot0 ? "0.0" : "0");
        return;
    }
    char buf[64];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec - 1, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    /* buf: d.ddde[+-]XX */
    char digits[32];
    int nd = 0;
    char *e = strchr(buf, 'e');
    for (char *p = buf; p < e; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = '\0';
    int exp10 = atoi(e + 1);
    int decpt = exp10 + 1;           /* x = 0.DIGITS * 10**decpt */
    if (decpt <= -4 || decpt > 16) {
        sb_c(s, digits[0]);
        if (nd > 1) {
            sb_c(s, '.');
            sb_n(s, digits + 1, (size_t)nd - 1);
        }
        sb_f(s, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10));
    } else if (decpt <= 0) {
        sb(s, "0.");
        for (int i = 0; i < -decpt; i++)
            sb_c(s, '0');
        sb_n(s, digits, (size_t)nd);
    } else if (decpt >= nd) {
        sb_n(s, digits, (size_t)nd);
        for (int i = nd; i < decpt; i++)
            sb_c(s, '0');
        if (add_dot0)
            sb(s, ".0");
    } else {
        sb_n(s, digits, (size_t)decpt);
        sb_c(s, '.');
        sb_n(s, digits + decpt, (size_t)(nd - decpt));
    }
}

static void repr_complex(goat_str *s, double re, double im)
{
    if (re == 0.0 && !signbit(re)) {
        repr_float(s, im, 0, 0);
        sb_c(s, 'j');
    } else {
        sb_c(s, '(');
        repr_float(s, re, 0, 0);
        repr_float(s, im, 0, 1);
        sb(s, "j)");
    }
}

/* ------------------------------------------------------------------- Python's values */

enum { PV_NONE, PV_ELLIPSIS, PV_BOOL, PV_INT, PV_FLOAT, PV_COMPLEX, PV_STR, PV_BYTES,
       PV_TUPLE, PV_LIST, PV_DICT, PV_SET };

typedef struct pyval pyval;
struct pyval {
    int t;
    int b;                  /* PV_BOOL */
    int neg;                /* PV_INT: sign and decimal magnitude, no leading zeros */
    char *digits;
    double re, im;          /* PV_FLOAT (re), PV_COMPLEX */
    uint32_t *s;            /* PV_STR code points, PV_BYTES byte values */
    size_t n;
    pyval **items;          /* PV_TUPLE, PV_LIST, PV_SET; PV_DICT: key, value, key, value... */
    size_t len;             /* items (PV_DICT: entries) */
};

static pyval *pv_new(arena *a, int t)
{
    pyval *v = a_alloc(a, sizeof *v);
    v->t = t;
    return v;
}

static pyval *pv_str(arena *a, const uint32_t *c, size_t n, int bytes)
{
    pyval *v = pv_new(a, bytes ? PV_BYTES : PV_STR);
    v->s = a_alloc(a, (n + 1) * sizeof *v->s);
    if (n)
        memcpy(v->s, c, n * sizeof *c);
    v->n = n;
    return v;
}

static pyval *pv_cstr(arena *a, const char *t)
{
    size_t n = strlen(t);
    pyval *v = pv_new(a, PV_STR);
    v->s = a_alloc(a, (n + 1) * sizeof *v->s);
    for (size_t i = 0; i < n; i++)
        v->s[i] = (unsigned char)t[i];
    v->n = n;
    return v;
}

static pyval *pv_int64(arena *a, int64_t x)
{
    pyval *v = pv_new(a, PV_INT);
    char buf[32];
    uint64_t m = x < 0 ? (uint64_t)0 - (uint64_t)x : (uint64_t)x;
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)m);
    v->neg = x < 0;
    v->digits = a_alloc(a, strlen(buf) + 1);
    strcpy(v->digits, buf);
    return v;
}

static int pv_is_str(const pyval *v, const char *t)
{
    if (v->t != PV_STR || v->n != strlen(t))
        return 0;
    for (size_t i = 0; i < v->n; i++)
        if (v->s[i] != (unsigned char)t[i])
            return 0;
    return 1;
}

/* The int's value, if it fits in int64 (and is not a bool). */
static int pv_as_i64(const pyval *v, int64_t *out)
{
    if (v->t != PV_INT)
        return 0;
    size_t nd = strlen(v->digits);
    if (nd > 19)
        return 0;
    uint64_t m = 0;
    for (size_t i = 0; i < nd; i++)
        m = m * 10 + (uint64_t)(v->digits[i] - '0');
    if (v->neg) {
        if (m > (uint64_t)INT64_MAX + 1)
            return 0;
        *out = m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m;
    } else {
        if (m > (uint64_t)INT64_MAX)
            return 0;
        *out = (int64_t)m;
    }
    return 1;
}

/* int -> float as Python converts it (correctly rounded); 0 if it overflows */
static int pv_int_to_double(const pyval *v, double *out)
{
    double d = strtod(v->digits, NULL);
    if (isinf(d))
        return 0;
    *out = v->neg ? -d : d;
    return 1;
}

static void pv_repr(goat_str *s, const pyval *v);

static void pv_repr_items(goat_str *s, pyval **items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i)
            sb(s, ", ");
        pv_repr(s, items[i]);
    }
}

static void pv_repr(goat_str *s, const pyval *v)
{
    switch (v->t) {
    case PV_NONE: sb(s, "None"); break;
    case PV_ELLIPSIS: sb(s, "Ellipsis"); break;
    case PV_BOOL: sb(s, v->b ? "True" : "False"); break;
    case PV_INT:
        if (v->neg)
            sb_c(s, '-');
        sb(s, v->digits);
        break;
    case PV_FLOAT: repr_float(s, v->re, 1, 0); break;
    case PV_COMPLEX: repr_complex(s, v->re, v->im); break;
    case PV_STR: repr_str(s, v->s, v->n); break;
    case PV_BYTES: repr_bytes(s, v->s, v->n); break;
    case PV_TUPLE:
        sb_c(s, '(');
        pv_repr_items(s, v->items, v->len);
        if (v->len == 1)
            sb_c(s, ',');
        sb_c(s, ')');
        break;
    case PV_LIST:
        sb_c(s, '[');
        pv_repr_items(s, v->items, v->len);
        sb_c(s, ']');
        break;
    case PV_SET:
        if (v->len == 0) {
            sb(s, "set()");
        } else {
            sb_c(s, '{');
            pv_repr_items(s, v->items, v->len);
            sb_c(s, '}');
        }
        break;
    case PV_DICT:
        sb_c(s, '{');
        for (size_t i = 0; i < v->len; i++) {
            if (i)
                sb(s, ", ");
            pv_repr(s, v->items[2 * i]);
            sb(s, ": ");
            pv_repr(s, v->items[2 * i + 1]);
        }
        sb_c(s, '}');
        break;
    }
}

/* _short(): the repr, cut to 57 characters and "..." when longer than 60 */
static void short_text(goat_str *s, const char *text)
{
    size_t chars = 0, cut = 0;
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        if ((*p & 0xC0) != 0x80) {
            if (chars == 57)
                cut = (size_t)(p - (const unsigned char *)text);
            chars++;
        }
    }
    if (chars <= 60) {
        sb(s, text);
    } else {
        sb_n(s, text, cut);
        sb(s, "...");
    }
}

static void pv_short(goat_str *s, const pyval *v)
{
    goat_str r = {0};
    pv_repr(&r, v);
    short_text(s, sb_str(&r));
    sb_free(&r);
}

/* Python's == between literal values (what makes two dict keys or set members one). */
static int num_kind(const pyval *v)
{
    return v->t == PV_BOOL || v->t == PV_INT || v->t == PV_FLOAT || v->t == PV_COMPLEX;
}

/* an int (or bool) equal to the float f? */
static int int_eq_float(const pyval *i, double f)
{
    int neg;
    const char *digits;
    char small[2];
    if (i->t == PV_BOOL) {
        small[0] = i->b ? '1' : '0';
        small[1] = '\0';
        digits = small;
        neg = 0;
    } else {
        digits = i->digits;
        neg = i->neg;
    }
    if (!isfinite(f))
        return 0;
    double mag = signbit(f) ? -f : f;
    if (mag < 4503599627370496.0 && mag != (double)(int64_t)mag)     /* 2**52: all whole */
        return 0;
    if ((f < 0) != neg && !(f == 0 && strcmp(digits, "0") == 0))
        return 0;
    char buf[400];
    snprintf(buf, sizeof buf, "%.0f", mag);
    return strcmp(buf, digits) == 0;
}

static int pv_eq(const pyval *a, const pyval *b)
{
    if (num_kind(a) && num_kind(b)) {
        if (a->t == PV_COMPLEX || b->t == PV_COMPLEX) {
            const pyval *c = a->t == PV_COMPLEX ? a : b, *o = a->t == PV_COMPLEX ? b : a;
            if (o->t == PV_COMPLEX)
                return c->re == o->re && c->im == o->im;
            if (c->im != 0.0)
                return 0;
            if (o->t == PV_FLOAT)
                return c->re == o->re;
            return int_eq_float(o, c->re);
        }
        if (a->t == PV_FLOAT || b->t == PV_FLOAT) {
            const pyval *f = a->t == PV_FLOAT ? a : b, *o = a->t == PV_FLOAT ? b : a;
            if (o->t == PV_FLOAT)
                return f->re == o->re;
            return int_eq_float(o, f->re);
        }
        /* ints and bools */
        int an = a->t == PV_BOOL ? 0 : a->neg, bn = b->t == PV_BOOL ? 0 : b->neg;
        const char *ad = a->t == PV_BOOL ? (a->b ? "1" : "0") : a->digits;
        const char *bd = b->t == PV_BOOL ? (b->b ? "1" : "0") : b->digits;
        return an == bn && strcmp(ad, bd) == 0;
    }
    if (a->t != b->t)
        return 0;
    switch (a->t) {
    case PV_NONE:
    case PV_ELLIPSIS:
        return 1;
    case PV_STR:
    case PV_BYTES:
        return a->n == b->n && (a->n == 0 || memcmp(a->s, b->s, a->n * sizeof *a->s) == 0);
    case PV_TUPLE:
        if (a->len != b->len)
            return 0;
        for (size_t i = 0; i < a->len; i++)
            if (!pv_eq(a->items[i], b->items[i]))
                return 0;
        return 1;
    default:
        return 0;     /* unhashable kinds never get here */
    }
}

static int pv_hashable(const pyval *v)
{
    if (v->t == PV_LIST || v->t == PV_DICT || v->t == PV_SET)
        return 0;
    if (v->t == PV_TUPLE)
        for (size_t i = 0; i < v->len; i++)
            if (!pv_hashable(v->items[i]))
                return 0;
    return 1;
}

/* ------------------------------------------------------------ ast.literal_eval, in C */

/* Decimal magnitudes for integer literals in other bases. */
static char *dec_from_base(arena *a, const char *digits, size_t nd, int base)
{
    /* digits: the literal's digits (no underscores); result: decimal, no leading zeros */
    size_t cap = nd * 2 + 2;
    unsigned char *d = calloc(cap, 1);         /* little-endian decimal digits */
    if (d == NULL)
        out_of_memory();
    size_t len = 1;
    for (size_t i = 0; i < nd; i++) {
        int x = digits[i] >= 'a' ? digits[i] - 'a' + 10
              : digits[i] >= 'A' ? digits[i] - 'A' + 10 : digits[i] - '0';
        int carry = x;
        for (size_t j = 0; j < len; j++) {
            int y = d[j] * base + carry;
            d[j] = (unsigned char)(y % 10);
            carry = y / 10;
        }
        while (carry) {
            d[len++] = (unsigned char)(carry % 10);
            carry /= 10;
        }
    }
    while (len > 1 && d[len - 1] == 0)
        len--;
    char *out = a_alloc(a, len + 1);
    for (size_t j = 0; j < len; j++)
        out[j] = (char)('0' + d[len - 1 - j]);
    free(d);
    return out;
}

enum { TK_NUM, TK_STR, TK_BYTES, TK_TRUE, TK_FALSE, TK_NONE, TK_SET, TK_OP, TK_NEWLINE,
       TK_END };

typedef struct {
    int kind;
    int op;          /* TK_OP: ( ) [ ] { } , : + - and 'E' for ... */
    pyval *v;        /* TK_NUM, TK_STR, TK_BYTES */
} token;

typedef struct {
    arena *a;
    const uint32_t *src;
    size_t n, pos;
    vec toks;
} lexer;

static int is_ident_start(uint32_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static int is_ident_char(uint32_t c)
{
    return is_ident_start(c) || (c >= '0' && c <= '9');
}

static int hexval(uint32_t c)
{
    if (c >= '0' && c <= '9')
        return (int)(c - '0');
    if (c >= 'a' && c <= 'f')
        return (int)(c - 'a' + 10);
    if (c >= 'A' && c <= 'F')
        return (int)(c - 'A' + 10);
    return -1;
}

static uint32_t lx_at(const lexer *L, size_t i)
{
    return i < L->n ? L->src[i] : 0xFFFFFFFFu;
}

/* decimal digits with single underscores between them, appended to buf; 0 if an underscore
 * is not followed by a digit or there is no digit */
static int lx_digits(lexer *L, goat_str *buf)
{
    int any = 0;
    for (;;) {
        uint32_t c = lx_at(L, L->pos);
        if (c == '_' && any) {
            uint32_t d = lx_at(L, L->pos + 1);
            if (!(d >= '0' && d <= '9'))
                return 0;
            L->pos++;
            continue;
        }
        if (!(c >= '0' && c <= '9'))
            break;
        sb_c(buf, (char)c);
        any = 1;
        L->pos++;
    }
    return any;
}

static int lx_number(lexer *L)
{
    arena *a = L->a;
    goat_str buf = {0};
    uint32_t c = lx_at(L, L->pos);
    pyval *v = NULL;
    uint32_t k = lx_at(L, L->pos + 1) | 0x20;
    if (c == '0' && (k == 'x' || k == 'o' || k == 'b')) {
        int base = k == 'x' ? 16 : k == 'o' ? 8 : 2;
        L->pos += 2;
        /* an underscore may follow the prefix */
        if (lx_at(L, L->pos) == '_') {
            int dv = hexval(lx_at(L, L->pos + 1));
            if (dv < 0 || dv >= base)
                goto fail;
            L->pos++;
        }
        int any = 0;
        for (;;) {
            uint32_t d = lx_at(L, L->pos);
            if (d == '_') {
                int dv = hexval(lx_at(L, L->pos + 1));
                if (dv < 0 || dv >= base)
                    goto fail;
                L->pos++;
                continue;
            }
            int dv = hexval(d);
            if (dv < 0)
                break;
            if (dv >= base)
                goto fail;                  /* 0o8, 0b2 */
            sb_c(&buf, (char)d);
            any = 1;
            L->pos++;
        }
        if (!any)
            goto fail;
        v = pv_new(a, PV_INT);
        v->digits = dec_from_base(a, sb_str(&buf), buf.len, base);
    } else {
        int is_float = 0, is_imag = 0;
        if (c != '.') {
            if (!lx_digits(L, &buf))
                goto fail;
        }
        size_t int_len = buf.len;
        if (lx_at(L, L->pos) == '.') {
            is_float = 1;
            sb_c(&buf, '.');
            L->pos++;
            uint32_t d = lx_at(L, L->pos);
            if (d >= '0' && d <= '9') {
                if (!lx_digits(L, &buf))
                    goto fail;
            } else if (int_len == 0) {
                goto fail;
            }
        }
        uint32_t e = lx_at(L, L->pos);
        if (e == 'e' || e == 'E') {
            size_t save = L->pos;
            L->pos++;
            uint32_t sgn = lx_at(L, L->pos);
            goat_str ex = {0};
            if (sgn == '+' || sgn == '-') {
                sb_c(&ex, (char)sgn);
                L->pos++;
            }
            uint32_t d = lx_at(L, L->pos);
            if (!(d >= '0' && d <= '9')) {
                sb_free(&ex);
                L->pos = save;
                goto fail;                  /* "1e", "1e+": a name follows a number */
            }
            if (!lx_digits(L, &ex)) {
                sb_free(&ex);
                goto fail;
            }
            sb_c(&buf, 'e');
            sb(&buf, sb_str(&ex));
            sb_free(&ex);
            is_float = 1;
        }
        uint32_t j = lx_at(L, L->pos);
        if (j == 'j' || j == 'J') {
            is_imag = 1;
            L->pos++;
        }
        if (!is_float && !is_imag) {
            /* an integer: no leading zeros except for zero itself */
            const char *d = sb_str(&buf);
            size_t nd = strlen(d);
            if (nd > 1 && d[0] == '0') {
                for (size_t i = 0; i < nd; i++)
                    if (d[i] != '0')
                        goto fail;
            }
            if (nd > PY_MAX_STR_DIGITS)
                goto fail;
            while (nd > 1 && *d == '0') {
                d++;
                nd--;
            }
            v = pv_new(a, PV_INT);
            v->digits = a_alloc(a, nd + 1);
            memcpy(v->digits, d, nd);
        } else {
            double x = strtod(sb_str(&buf), NULL);
            if (is_imag) {
                v = pv_new(a, PV_COMPLEX);
                v->re = 0.0;
                v->im = x;
            } else {
                v = pv_new(a, PV_FLOAT);
                v->re = x;
            }
        }
    }
    /* a number must not run into a name */
    if (L->pos < L->n && (is_ident_char(L->src[L->pos]) || L->src[L->pos] == '.'))
        goto fail;
    sb_free(&buf);
    token *t = vec_push(&L->toks);
    t->kind = TK_NUM;
    t->v = v;
    return 1;
fail:
    sb_free(&buf);
    return 0;
}

/* a string or bytes literal; L->pos at its quote, the prefix already read */
static int lx_string(lexer *L, int raw, int bytes)
{
    uint32_t q = L->src[L->pos];
    int triple = lx_at(L, L->pos + 1) == q && lx_at(L, L->pos + 2) == q;
    L->pos += triple ? 3 : 1;
    vec out;
    vec_init(&out, sizeof(uint32_t));
#define PUT(x) (*(uint32_t *)vec_push(&out) = (uint32_t)(x))
    for (;;) {
        if (L->pos >= L->n)
            goto fail;
        uint32_t c = L->src[L->pos];
        if (c == q) {
            if (!triple) {
                L->pos++;
                break;
            }
            if (lx_at(L, L->pos + 1) == q && lx_at(L, L->pos + 2) == q) {
                L->pos += 3;
                break;
            }
        }
        if (c == '\n' && !triple)
            goto fail;
        if (c != '\\') {
            if (bytes && c >= 0x80)
                goto fail;
            PUT(c);
            L->pos++;
            continue;
        }
        if (L->pos + 1 >= L->n)
            goto fail;
        uint32_t d = L->src[L->pos + 1];
        if (bytes && d >= 0x80)
            goto fail;
        if (raw) {
            PUT('\\');
            PUT(d);
            L->pos += 2;
            continue;
        }
        L->pos += 2;
        switch (d) {
        case '\n': break;
        case '\\': PUT('\\'); break;
        case '\'': PUT('\''); break;
        case '"': PUT('"'); break;
        case 'a': PUT(7); break;
        case 'b': PUT(8); break;
        case 'f': PUT(12); break;
        case 'n': PUT(10); break;
        case 'r': PUT(13); break;
        case 't': PUT(9); break;
        case 'v': PUT(11); break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            uint32_t x = d - '0';
            for (int k = 0; k < 2; k++) {
                uint32_t o = lx_at(L, L->pos);
                if (o >= '0' && o <= '7') {
                    x = x * 8 + (o - '0');
                    L->pos++;
                } else {
                    break;
                }
            }
            PUT(bytes ? (x & 0xFF) : x);
            break;
        }
        case 'x': case 'u': case 'U': {
            if (bytes && d != 'x') {
                PUT('\\');
                PUT(d);
                break;
            }
            int len = d == 'x' ? 2 : d == 'u' ? 4 : 8;
            uint32_t x = 0;
            for (int k = 0; k < len; k++) {
                int h = hexval(lx_at(L, L->pos));
                if (h < 0)
                    goto fail;
                x = x * 16 + (uint32_t)h;
                L->pos++;
            }
            if (x > 0x10FFFF)
                goto fail;
            PUT(x);
            break;
        }
        case 'N':
            if (!bytes)
                goto fail;          /* \N{name}: Unicode names are not known here */
            PUT('\\');
            PUT(d);
            break;
        default:
            PUT('\\');
            PUT(d);
            break;
        }
    }
#undef PUT
    token *t = vec_push(&L->toks);
    t->kind = bytes ? TK_BYTES : TK_STR;
    t->v = pv_new(L->a, t->kind == TK_BYTES ? PV_BYTES : PV_STR);
    t->v->s = vec_keep(&out, L->a);
    t->v->n = out.n;
    return 1;
fail:
    free(out.data);
    return 0;
}

/* Python's tokenizer, for the tokens a literal can hold; 0 on a syntax error. */
static int lex(lexer *L)
{
    uint32_t stack[PY_MAXLEVEL];
    int depth = 0;
    int at_line_start = 1, done = 0, line_tokens = 0;
    vec_init(&L->toks, sizeof(token));
    for (;;) {
        if (at_line_start && depth == 0) {
            int col = 0;
            for (;;) {
                uint32_t c = lx_at(L, L->pos);
                if (c == ' ') {
                    col++;
                } else if (c == '\t') {
                    col = (col / 8 + 1) * 8;
                } else if (c == '\f') {
                    col = 0;
                } else if (c == '\\' && lx_at(L, L->pos + 1) == '\n') {
                    L->pos++;
                    if (L->pos + 1 >= L->n)
                        return 0;
                } else {
                    break;
                }
                L->pos++;
            }
            if (L->pos >= L->n) {
                if (col > 0)
                    return 0;
                break;
            }
            if (L->src[L->pos] == '#') {
                while (L->pos < L->n && L->src[L->pos] != '\n')
                    L->pos++;
                if (L->pos >= L->n)
                    break;
            }
            if (L->src[L->pos] == '\n') {
                L->pos++;
                continue;
            }
            if (col > 0 || done)
                return 0;
            at_line_start = 0;
            line_tokens = 0;
        }
        if (L->pos >= L->n) {
            if (depth > 0)
                return 0;
            break;
        }
        uint32_t c = L->src[L->pos];
        if (c == ' ' || c == '\t' || c == '\f') {
            L->pos++;
            continue;
        }
        if (c == '#') {
            while (L->pos < L->n && L->src[L->pos] != '\n')
                L->pos++;
            continue;
        }
        if (c == '\\') {
            if (lx_at(L, L->pos + 1) != '\n')
                return 0;
            L->pos += 2;
            if (L->pos >= L->n)
                return 0;
            continue;
        }
        if (c == '\n') {
            L->pos++;
            if (depth > 0)
                continue;
            if (line_tokens) {
                token *t = vec_push(&L->toks);
                t->kind = TK_NEWLINE;
                done = 1;
            }
            at_line_start = 1;
            continue;
        }
        if (done)
            return 0;
        line_tokens = 1;
        if ((c >= '0' && c <= '9') || (c == '.' && lx_at(L, L->pos + 1) >= '0'
                                       && lx_at(L, L->pos + 1) <= '9')) {
            if (!lx_number(L))
                return 0;
            continue;
        }
        if (c == '.') {
            if (lx_at(L, L->pos + 1) == '.' && lx_at(L, L->pos + 2) == '.') {
                L->pos += 3;
                token *t = vec_push(&L->toks);
                t->kind = TK_OP;
                t->op = 'E';
                continue;
            }
            return 0;
        }
        if (c == '\'' || c == '"') {
            if (!lx_string(L, 0, 0))
                return 0;
            continue;
        }
        if (is_ident_start(c)) {
            size_t start = L->pos;
            while (L->pos < L->n && is_ident_char(L->src[L->pos]))
                L->pos++;
            size_t len = L->pos - start;
            char word[8];
            int ascii = len < sizeof word;
            for (size_t i = 0; ascii && i < len; i++) {
                if (L->src[start + i] >= 0x80)
                    ascii = 0;
                else
                    word[i] = (char)L->src[start + i];
            }
            if (!ascii)
                return 0;
            word[len] = '\0';
            uint32_t nx = lx_at(L, L->pos);
            if (nx == '\'' || nx == '"') {
                int raw = 0, bytes = 0, fstr = 0, uni = 0, ok = len <= 2;
                for (size_t i = 0; ok && i < len; i++) {
                    char w = (char)(word[i] | 0x20);
                    if (w == 'r' && !raw) raw = 1;
                    else if (w == 'b' && !bytes) bytes = 1;
                    else if (w == 'f' && !fstr) fstr = 1;
                    else if (w == 'u' && !uni) uni = 1;
                    else ok = 0;
                }
                if (uni && len != 1)
                    ok = 0;
                if (bytes && fstr)
                    ok = 0;
                if (!ok || fstr)
                    return 0;       /* f-strings are not literals; other names are errors */
                if (!lx_string(L, raw, bytes))
                    return 0;
                continue;
            }
            token *t = vec_push(&L->toks);
            if (strcmp(word, "True") == 0)
                t->kind = TK_TRUE;
            else if (strcmp(word, "False") == 0)
                t->kind = TK_FALSE;
            else if (strcmp(word, "None") == 0)
                t->kind = TK_NONE;
            else if (strcmp(word, "set") == 0)
                t->kind = TK_SET;
            else
                return 0;           /* any other name: not a literal */
            continue;
        }
        if (c == '(' || c == '[' || c == '{') {
            if (depth >= PY_MAXLEVEL)
                return 0;
            stack[depth++] = c;
        } else if (c == ')' || c == ']' || c == '}') {
            uint32_t open = c == ')' ? '(' : c == ']' ? '[' : '{';
            if (depth == 0 || stack[depth - 1] != open)
                return 0;
            depth--;
        } else if (!(c == ',' || c == ':' || c == '+' || c == '-')) {
            return 0;
        }
        token *t = vec_push(&L->toks);
        t->kind = TK_OP;
        t->op = (int)c;
        L->pos++;
    }
    token *t = vec_push(&L->toks);
    t->kind = TK_END;
    return 1;
}

/* The parse tree of the literal forms (other expressions fail as they are parsed). */
enum { N_CONST, N_TUPLE, N_LIST, N_SET, N_DICT, N_UNARY, N_BINOP, N_SETCALL };

typedef struct node node;
struct node {
    int t;
    int op;
    pyval *v;
    node **kids;
    size_t nk;
};

typedef struct {
    arena *a;
    token *toks;
    size_t i;
} parser;

static token *pk(parser *P) { return &P->toks[P->i]; }

static int pk_op(parser *P, int op)
{
    return pk(P)->kind == TK_OP && pk(P)->op == op;
}

static int starts_expr(parser *P)
{
    token *t = pk(P);
    switch (t->kind) {
    case TK_NUM: case TK_STR: case TK_BYTES: case TK_TRUE: case TK_FALSE: case TK_NONE:
    case TK_SET:
        return 1;
    case TK_OP:
        return t->op == '(' || t->op == '[' || t->op == '{' || t->op == '+' || t->op == '-'
               || t->op == 'E';
    default:
        return 0;
    }
}

static node *nd_new(parser *P, int t)
{
    node *n = a_alloc(P->a, sizeof *n);
    n->t = t;
    return n;
}

static node *p_test(parser *P);

static node *p_atom(parser *P)
{
    token *t = pk(P);
    node *n;
    switch (t->kind) {
    case TK_NUM:
        P->i++;
        n = nd_new(P, N_CONST);
        n->v = t->v;
        return n;
    case TK_STR:
    case TK_BYTES: {
        int kind = t->kind;
        vec s;
        vec_init(&s, sizeof(uint32_t));
        while (pk(P)->kind == TK_STR || pk(P)->kind == TK_BYTES) {
            if (pk(P)->kind != kind) {
                free(s.data);
                return NULL;
            }
            pyval *part = pk(P)->v;
            for (size_t k = 0; k < part->n; k++)
                *(uint32_t *)vec_push(&s) = part->s[k];
            P->i++;
        }
        n = nd_new(P, N_CONST);
        n->v = pv_new(P->a, kind == TK_BYTES ? PV_BYTES : PV_STR);
        n->v->s = vec_keep(&s, P->a);
        n->v->n = s.n;
        return n;
    }
    case TK_TRUE:
    case TK_FALSE:
        P->i++;
        n = nd_new(P, N_CONST);
        n->v = pv_new(P->a, PV_BOOL);
        n->v->b = t->kind == TK_TRUE;
        return n;
    case TK_NONE:
        P->i++;
        n = nd_new(P, N_CONST);
        n->v = pv_new(P->a, PV_NONE);
        return n;
    case TK_SET:
        P->i++;
        if (!pk_op(P, '('))
            return NULL;
        P->i++;
        if (!pk_op(P, ')'))
            return NULL;
        P->i++;
        return nd_new(P, N_SETCALL);
    case TK_OP:
        break;
    default:
        return NULL;
    }
    int op = t->op;
    if (op == 'E') {
        P->i++;
        n = nd_new(P, N_CONST);
        n->v = pv_new(P->a, PV_ELLIPSIS);
        return n;
    }
    if (op != '(' && op != '[' && op != '{')
        return NULL;
    int close = op == '(' ? ')' : op == '[' ? ']' : '}';
    P->i++;
    vec kids;
    vec_init(&kids, sizeof(node *));
    int kind = op == '(' ? N_TUPLE : op == '[' ? N_LIST : N_DICT;
    int comma = 0;
    while (!pk_op(P, close)) {
        node *e = p_test(P);
        if (e == NULL)
            goto fail;
        if (kind == N_DICT && kids.n == 0 && !pk_op(P, ':'))
            kind = N_SET;
        *(node **)vec_push(&kids) = e;
        if (kind == N_DICT) {
            if (!pk_op(P, ':'))
                goto fail;
            P->i++;
            node *v = p_test(P);
            if (v == NULL)
                goto fail;
            *(node **)vec_push(&kids) = v;
        }
        if (pk_op(P, ',')) {
            comma = 1;
            P->i++;
        } else if (!pk_op(P, close)) {
            goto fail;
        }
    }
    P->i++;
    if (op == '(' && kids.n == 1 && !comma) {       /* (x) is x */
        node *e = *(node **)kids.data;
        free(kids.data);
        return e;
    }
    n = nd_new(P, kind);
    n->kids = vec_keep(&kids, P->a);
    n->nk = kids.n;
    return n;
fail:
    free(kids.data);
    return NULL;
}

static node *p_primary(parser *P)
{
    node *n = p_atom(P);
    if (n == NULL)
        return NULL;
    if (pk_op(P, '(') || pk_op(P, '['))        /* a call or a subscript */
        return NULL;
    return n;
}

static node *p_factor(parser *P)
{
    if (pk_op(P, '+') || pk_op(P, '-')) {
        int op = pk(P)->op;
        P->i++;
        node *e = p_factor(P);
        if (e == NULL)
            return NULL;
        node *n = nd_new(P, N_UNARY);
        n->op = op;
        n->kids = a_alloc(P->a, sizeof(node *));
        n->kids[0] = e;
        n->nk = 1;
        return n;
    }
    return p_primary(P);
}

static node *p_test(parser *P)
{
    node *l = p_factor(P);
    while (l != NULL && (pk_op(P, '+') || pk_op(P, '-'))) {
        int op = pk(P)->op;
        P->i++;
        node *r = p_factor(P);
        if (r == NULL)
            return NULL;
        node *n = nd_new(P, N_BINOP);
        n->op = op;
        n->kids = a_alloc(P->a, 2 * sizeof(node *));
        n->kids[0] = l;
        n->kids[1] = r;
        n->nk = 2;
        l = n;
    }
    return l;
}

static node *p_top(parser *P)
{
    node *first = p_test(P);
    if (first == NULL)
        return NULL;
    node *result = first;
    if (pk_op(P, ',')) {
        vec kids;
        vec_init(&kids, sizeof(node *));
        *(node **)vec_push(&kids) = first;
        while (pk_op(P, ',')) {
            P->i++;
            if (!starts_expr(P))
                break;
            node *e = p_test(P);
            if (e == NULL) {
                free(kids.data);
                return NULL;
            }
            *(node **)vec_push(&kids) = e;
        }
        result = nd_new(P, N_TUPLE);
        result->kids = vec_keep(&kids, P->a);
        result->nk = kids.n;
    }
    if (pk(P)->kind == TK_NEWLINE)
        P->i++;
    if (pk(P)->kind != TK_END)
        return NULL;
    return result;
}

/* literal_eval's _convert */
static pyval *le_num(arena *a, node *n)
{
    (void)a;
    if (n->t != N_CONST)
        return NULL;
    int t = n->v->t;
    return (t == PV_INT || t == PV_FLOAT || t == PV_COMPLEX) ? n->v : NULL;
}

static pyval *le_signed_num(arena *a, node *n)
{
    if (n->t == N_UNARY) {
        pyval *x = le_num(a, n->kids[0]);
        if (x == NULL)
            return NULL;
        if (n->op == '+')
            return x;
        pyval *r = pv_new(a, x->t);
        *r = *x;
        if (x->t == PV_INT)
            r->neg = strcmp(x->digits, "0") != 0 && !x->neg;
        else if (x->t == PV_FLOAT)
            r->re = -x->re;
        else {
            r->re = -x->re;
            r->im = -x->im;
        }
        return r;
    }
    return le_num(a, n);
}

static int le_add(pyval *into, pyval *v, int dedupe_value, pyval *value)
{
    /* a set member or dict key: hashable, and equal ones are one */
    if (!pv_hashable(v))
        return 0;
    for (size_t i = 0; i < into->len; i++) {
        pyval *k = into->t == PV_DICT ? into->items[2 * i] : into->items[i];
        if (pv_eq(k, v)) {
            if (dedupe_value)
                into->items[2 * i + 1] = value;
            return 1;
        }
    }
    if (into->t == PV_DICT) {
        into->items[2 * into->len] = v;
        into->items[2 * into->len + 1] = value;
    } else {
        into->items[into->len] = v;
    }
    into->len++;
    return 1;
}

static pyval *le_convert(arena *a, node *n)
{
    switch (n->t) {
    case N_CONST:
        return n->v;
    case N_TUPLE:
    case N_LIST: {
        pyval *v = pv_new(a, n->t == N_TUPLE ? PV_TUPLE : PV_LIST);
        v->items = a_alloc(a, (n->nk + 1) * sizeof(pyval *));
        for (size_t i = 0; i < n->nk; i++) {
            v->items[i] = le_convert(a, n->kids[i]);
            if (v->items[i] == NULL)
                return NULL;
        }
        v->len = n->nk;
        return v;
    }
    case N_SET: {
        pyval *v = pv_new(a, PV_SET);
        v->items = a_alloc(a, (n->nk + 1) * sizeof(pyval *));
        for (size_t i = 0; i < n->nk; i++) {
            pyval *x = le_convert(a, n->kids[i]);
            if (x == NULL || !le_add(v, x, 0, NULL))
                return NULL;
        }
        return v;
    }
    case N_SETCALL:
        return pv_new(a, PV_SET);
    case N_DICT: {
        pyval *v = pv_new(a, PV_DICT);
        v->items = a_alloc(a, (n->nk + 2) * sizeof(pyval *));
        for (size_t i = 0; i + 1 < n->nk; i += 2) {
            pyval *k = le_convert(a, n->kids[i]);
            if (k == NULL)
                return NULL;
            pyval *x = le_convert(a, n->kids[i + 1]);
            if (x == NULL || !le_add(v, k, 1, x))
                return NULL;
        }
        return v;
    }
    case N_BINOP: {
        pyval *l = le_signed_num(a, n->kids[0]);
        pyval *r = l ? le_num(a, n->kids[1]) : NULL;
        if (l && r && (l->t == PV_INT || l->t == PV_FLOAT) && r->t == PV_COMPLEX) {
            double lf;
            if (l->t == PV_INT) {
                if (!pv_int_to_double(l, &lf))
                    return NULL;            /* Python: OverflowError */
            } else {
                lf = l->re;
            }
            pyval *v = pv_new(a, PV_COMPLEX);
            if (n->op == '+') {
                v->re = lf + r->re;
                v->im = 0.0 + r->im;
            } else {
                v->re = lf - r->re;
                v->im = 0.0 - r->im;
            }
            return v;
        }
        return NULL;
    }
    default:
        return le_signed_num(a, n);
    }
}

/* ast.literal_eval(text): NULL where it raises. */
static pyval *literal_eval(arena *a, const uint32_t *text, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (text[i] == 0)
            return NULL;                /* "source code string cannot contain null bytes" */
    size_t start = 0;
    while (start < n && (text[start] == ' ' || text[start] == '\t'))
        start++;                        /* .lstrip(" \t") */
    /* universal newlines, as the tokenizer reads a str */
    uint32_t *src = a_alloc(a, (n - start + 1) * sizeof *src);
    size_t m = 0;
    for (size_t i = start; i < n; i++) {
        if (text[i] == '\r') {
            src[m++] = '\n';
            if (i + 1 < n && text[i + 1] == '\n')
                i++;
        } else {
            src[m++] = text[i];
        }
    }
    lexer L = {a, src, m, 0, {0}};
    if (!lex(&L)) {
        free(L.toks.data);
        return NULL;
    }
    parser P = {a, vec_keep(&L.toks, a), 0};
    node *root = p_top(&P);
    if (root == NULL)
        return NULL;
    return le_convert(a, root);
}

/* ----------------------------------------------------- NumPy dtypes, as far as needed */

/* datetime units, numbered as NumPy numbers them (3 was business days) */
enum { FR_Y = 0, FR_M = 1, FR_W = 2, FR_D = 4, FR_h = 5, FR_m = 6, FR_s = 7, FR_ms = 8,
       FR_us = 9, FR_ns = 10, FR_ps = 11, FR_fs = 12, FR_as = 13, FR_GENERIC = 14 };
static const char *const FR_NAMES[] = {"Y", "M", "W", "B", "D", "h", "m", "s", "ms", "us",
                                       "ns", "ps", "fs", "as", "generic"};

typedef struct dtype dtype;
typedef struct {
    pyval *name;
    pyval *title;          /* NULL: none */
    dtype *dt;
    int64_t offset;
} dfield;

struct dtype {
    char kind;             /* b i u f c O S U V M m T */
    char bo;               /* '=' native, '|' none, or the other order's '<' / '>' */
    int64_t size;          /* itemsize in bytes */
    int dt_num, dt_unit;   /* datetime64 / timedelta64 metadata */
    int has_fields;        /* a structured dtype (names may be empty) */
    size_t nfields;
    dfield *fields;
    dtype *base;           /* a sub-array dtype: base and shape */
    int64_t *shape;
    size_t ndim;
    int hasobject;
};

static char native_order(void)
{
    const uint16_t one = 1;
    return *(const unsigned char *)&one ? '<' : '>';
}

static dtype *dt_make(arena *a, char kind, int64_t size)
{
    dtype *d = a_alloc(a, sizeof *d);
    d->kind = kind;
    d->size = size;
    d->bo = (kind == 'b' || kind == 'O' || kind == 'S' || kind == 'V' || kind == 'T'
             || ((kind == 'i' || kind == 'u') && size == 1)) ? '|' : '=';
    d->hasobject = kind == 'O' || kind == 'T';
    d->dt_num = 1;
    d->dt_unit = FR_GENERIC;
    return d;
}

static dtype *dt_copy(arena *a, const dtype *s)
{
    dtype *d = a_alloc(a, sizeof *d);
    *d = *s;
    return d;
}

/* PyDataType_ISUNSIZED */
static int dt_unsized(const dtype *d)
{
    return d->size == 0 && !d->has_fields;
}

/* PyArray_DescrFromType for a type character; NULL if none */
static dtype *dt_from_char(arena *a, int c)
{
    if (c >= 0 && c < 24)            /* a type number, as NumPy takes one too */
        c = "?bBhHiIlLqQfdgFDGOSUVMme"[c];
    switch (c) {
    case '?': return dt_make(a, 'b', 1);
    case 'b': return dt_make(a, 'i', 1);
    case 'B': return dt_make(a, 'u', 1);
    case 'h': return dt_make(a, 'i', 2);
    case 'H': return dt_make(a, 'u', 2);
    case 'i': return dt_make(a, 'i', 4);
    case 'I': return dt_make(a, 'u', 4);
    case 'l': return dt_make(a, 'i', (int64_t)sizeof(long));
    case 'L': return dt_make(a, 'u', (int64_t)sizeof(long));
    case 'q': case 'p': case 'n': return dt_make(a, 'i', 8);
    case 'Q': case 'P': case 'N': return dt_make(a, 'u', 8);
    case 'e': return dt_make(a, 'f', 2);
    case 'f': return dt_make(a, 'f', 4);
    case 'd': return dt_make(a, 'f', 8);
    case 'g': return dt_make(a, 'f', (int64_t)sizeof(long double));
    case 'F': return dt_make(a, 'c', 8);
    case 'D': return dt_make(a, 'c', 16);
    case 'G': return dt_make(a, 'c', 2 * (int64_t)sizeof(long double));
    case 'O': return dt_make(a, 'O', 8);
    case 'S': return dt_make(a, 'S', 0);
    case 'c': return dt_make(a, 'S', 1);
    case 'U': return dt_make(a, 'U', 0);
    case 'V': return dt_make(a, 'V', 0);
    case 'M': return dt_make(a, 'M', 8);
    case 'm': return dt_make(a, 'm', 8);
    case 'T': return dt_make(a, 'T', 16);
    default: return NULL;
    }
}

/* PyArray_TypestrConvert: a kind letter and an itemsize -> a type character (0: none) */
static int typestr_convert(int size, int kind)
{
    switch (kind) {
    case 'b': return size == 1 ? '?' : 0;
    case 'i': return size == 1 ? 'b' : size == 2 ? 'h' : size == 4 ? 'i' : size == 8 ? 'q' : 0;
    case 'u': return size == 1 ? 'B' : size == 2 ? 'H' : size == 4 ? 'I' : size == 8 ? 'Q' : 0;
    case 'f':
        return size == 2 ? 'e' : size == 4 ? 'f' : size == 8 ? 'd'
             : size == (int)sizeof(long double) ? 'g' : 0;
    case 'c':
        return size == 8 ? 'F' : size == 16 ? 'D' : size == 2 * (int)sizeof(long double) ? 'G' : 0;
    case 'O': return (size == 4 || size == 8) ? 'O' : 0;
    case 'M': return size == 8 ? 'M' : 0;
    case 'm': return size == 8 ? 'm' : 0;
    default: return 0;
    }
}

/* numpy.sctypeDict's names (the ones np.dtype looks a whole string up in) */
static const struct { const char *name; char code; } TYPE_NAMES[] = {
    {"a", 'S'}, {"bool", '?'}, {"bool_", '?'}, {"byte", 'b'}, {"bytes", 'S'}, {"bytes_", 'S'},
    {"cdouble", 'D'}, {"clongdouble", 'G'}, {"complex", 'D'}, {"complex128", 'D'},
    {"complex256", 'G'}, {"complex64", 'F'}, {"csingle", 'F'}, {"datetime64", 'M'},
    {"double", 'd'}, {"float", 'd'}, {"float128", 'g'}, {"float16", 'e'}, {"float32", 'f'},
    {"float64", 'd'}, {"half", 'e'}, {"int", 'l'}, {"int16", 'h'}, {"int32", 'i'},
    {"int64", 'q'}, {"int8", 'b'}, {"int_", 'l'}, {"intc", 'i'}, {"intp", 'p'}, {"long", 'l'},
    {"longdouble", 'g'}, {"longlong", 'q'}, {"object", 'O'}, {"object_", 'O'},
    {"short", 'h'}, {"single", 'f'}, {"str", 'U'}, {"str_", 'U'}, {"timedelta64", 'm'},
    {"ubyte", 'B'}, {"uint", 'L'}, {"uint16", 'H'}, {"uint32", 'I'}, {"uint64", 'Q'},
    {"uint8", 'B'}, {"uintc", 'I'}, {"uintp", 'P'}, {"ulong", 'L'}, {"ulonglong", 'Q'},
    {"unicode", 'U'}, {"ushort", 'H'}, {"void", 'V'},
};

static int is_datetime_typestr(const char *t, size_t len)
{
    if (len < 2)
        return 0;
    if (t[1] == '8' && (t[0] == 'M' || t[0] == 'm'))
        return 1;
    if (len >= 10 && strncmp(t, "datetime64", 10) == 0)
        return 1;
    if (len >= 11 && strncmp(t, "timedelta64", 11) == 0)
        return 1;
    return 0;
}

static int datetime_unit(const char *s, size_t len)
{
    if (len == 1) {
        switch (s[0]) {
        case 'Y': return FR_Y;
        case 'M': return FR_M;
        case 'W': return FR_W;
        case 'D': return FR_D;
        case 'h': return FR_h;
        case 'm': return FR_m;
        case 's': return FR_s;
        }
    } else if (len == 2 && s[1] == 's') {
        switch (s[0]) {
        case 'm': return FR_ms;
        case 'u': return FR_us;
        case 'n': return FR_ns;
        case 'p': return FR_ps;
        case 'f': return FR_fs;
        case 'a': return FR_as;
        }
    } else if (len == 3 && memcmp(s, "\xce\xbcs", 3) == 0) {
        return FR_us;
    } else if (len == 7 && memcmp(s, "generic", 7) == 0) {
        return FR_GENERIC;
    }
    return -1;
}

/* convert_datetime_divisor_to_multiple */
static int datetime_divisor(int *base, int *num, int den)
{
    static const int totry_tab[5][4] = {
        {12, 52, 365, 0}, {4, 30, 720, 0}, {7, 168, 10080, 0}, {24, 1440, 86400, 0},
        {60, 3600, 0, 0}};
    static const int base_tab[5][4] = {
        {FR_M, FR_W, FR_D, 0}, {FR_W, FR_D, FR_h, 0}, {FR_D, FR_h, FR_m, 0},
        {FR_h, FR_m, FR_s, 0}, {FR_m, FR_s, 0, 0}};
    int totry[4] = {0}, units[4] = {0};
    if (*base == FR_GENERIC || den == 0)
        return 0;
    int n = 3;
    if (*base == FR_W)
        n = 4;
    else if (*base > FR_D)
        n = 2;
    if (*base >= FR_s) {
        totry[0] = 1000;
        totry[1] = 1000000;
        units[0] = *base + 1;
        units[1] = *base + 2;
        if (*base == FR_as - 1)
            n = 1;
        if (*base == FR_as)
            n = 0;
    } else {
        int row = *base == FR_Y ? 0 : *base == FR_M ? 1 : *base == FR_W ? 2
                : *base == FR_D ? 3 : *base == FR_h ? 4 : -1;
        if (*base == FR_m) {
            totry[0] = 60;
            totry[1] = 60000;
            units[0] = FR_s;
            units[1] = FR_ms;
        } else if (row >= 0) {
            memcpy(totry, totry_tab[row], sizeof totry);
            memcpy(units, base_tab[row], sizeof units);
        }
    }
    int i, q = 0;
    for (i = 0; i < n; i++) {
        q = totry[i] / den;
        if (totry[i] % den == 0)
            break;
    }
    if (i == n)
        return 0;
    *base = units[i];
    *num = (int)((unsigned)*num * (unsigned)q);
    return 1;
}

/* parse_dtype_from_datetime_typestr; t NUL-terminated at t[len] */
static dtype *dt_datetime(arena *a, const char *t, size_t len)
{
    char kind;
    const char *meta;
    if (len >= 2 && t[0] == 'm' && t[1] == '8') {
        kind = 'm';
        meta = t + 2;
    } else if (len >= 2 && t[0] == 'M' && t[1] == '8') {
        kind = 'M';
        meta = t + 2;
    } else if (len >= 11 && strncmp(t, "timedelta64", 11) == 0) {
        kind = 'm';
        meta = t + 11;
    } else if (len >= 10 && strncmp(t, "datetime64", 10) == 0) {
        kind = 'M';
        meta = t + 10;
    } else {
        return NULL;
    }
    size_t mlen = len - (size_t)(meta - t);
    int base = FR_GENERIC, num = 1;
    if (mlen > 0) {
        if (mlen < 3 || meta[0] != '[')
            return NULL;
        const char *s = meta + 1;
        const char *close = s;
        while ((size_t)(close - meta) < mlen && *close != ']')
            close++;
        if ((size_t)(close - meta) == mlen || close == s)
            return NULL;
        size_t elen = (size_t)(close - s);
        /* the extended unit: [num] unit [/den] */
        char *end;
        long v = strtol(s, &end, 10);
        const char *p = s;
        if (end == s) {
            num = 1;
        } else {
            long long tv = strtoll(s, NULL, 10);
            if (tv > INT_MAX || tv < 0)
                return NULL;
            num = (int)v;
            p = end;
        }
        const char *u = p;
        while ((size_t)(u - s) < elen && *u != '/')
            u++;
        if (u == p)
            return NULL;
        base = datetime_unit(p, (size_t)(u - p));
        if (base < 0)
            return NULL;
        if ((size_t)(u - s) < elen && *u == '/') {
            const char *q = u + 1;
            long den = strtol(q, &end, 10);
            if (end == q || *end != ']')
                return NULL;
            if (den != 1 && !datetime_divisor(&base, &num, (int)den))
                return NULL;
        } else if ((size_t)(u - s) != elen) {
            return NULL;
        }
        if ((size_t)(close + 1 - meta) != mlen)
            return NULL;
    }
    dtype *d = dt_make(a, kind, 8);
    d->dt_num = num;
    d->dt_unit = base;
    return d;
}

static int pv_utf8(const pyval *v, goat_str *out)
{
    /* PyUnicode_AsUTF8AndSize: fails on a lone surrogate */
    for (size_t i = 0; i < v->n; i++) {
        if (v->t == PV_STR && v->s[i] >= 0xD800 && v->s[i] <= 0xDFFF)
            return 0;
        if (v->t == PV_BYTES) {
            char c = (char)v->s[i];
            sb_n(out, &c, 1);
        } else {
            sb_cp(out, v->s[i]);
        }
    }
    if (out->data == NULL)
        sb_n(out, "", 0);
    return 1;
}

static dtype *dt_from_any(arena *a, const pyval *v);
static dtype *dt_tuple(arena *a, dtype *type, const pyval *val);
static dtype *dt_from_str_bytes(arena *a, const char *t, size_t len);

/* numpy._core._internal._commastring and what np.dtype does with its result */
static dtype *dt_commastring(arena *a, const char *s, size_t len)
{
    /* the regular expressions work on characters; the string is ASCII where it matters */
    uint32_t *cp = a_alloc(a, (len + 1) * sizeof *cp);
    long nc = utf8_decode((const unsigned char *)s, len, cp, 1);
    vec items;                 /* pyval*: a str, or a tuple (str, repeats) */
    vec_init(&items, sizeof(pyval *));
    size_t pos = 0;
    int islist = 0;
    const char nbo = native_order();
    while (pos < (size_t)nc) {
        /* format_re */
        char order1 = 0, order2 = 0;
        if (cp[pos] == '<' || cp[pos] == '>' || cp[pos] == '|' || cp[pos] == '=')
            order1 = (char)cp[pos++];
        size_t rstart = pos;
        while (pos < (size_t)nc && cp[pos] == ' ')
            pos++;
        if (pos < (size_t)nc && cp[pos] == '(')
            pos++;
        while (pos < (size_t)nc && (cp[pos] == ' ' || cp[pos] == ','
                                    || (cp[pos] >= '0' && cp[pos] <= '9')))
            pos++;
        if (pos < (size_t)nc && cp[pos] == ')')
            pos++;
        while (pos < (size_t)nc && cp[pos] == ' ')
            pos++;
        size_t rend = pos;
        if (pos < (size_t)nc && (cp[pos] == '<' || cp[pos] == '>' || cp[pos] == '|'
                                 || cp[pos] == '='))
            order2 = (char)cp[pos++];
        size_t dstart = pos;
        while (pos < (size_t)nc && ((cp[pos] >= 'A' && cp[pos] <= 'Z')
                                    || (cp[pos] >= 'a' && cp[pos] <= 'z')
                                    || (cp[pos] >= '0' && cp[pos] <= '9')
                                    || cp[pos] == '.' || cp[pos] == '?'))
            pos++;
        if (pos < (size_t)nc && cp[pos] == '[') {
            size_t k = pos + 1;
            while (k < (size_t)nc && ((cp[k] >= 'A' && cp[k] <= 'Z')
                                      || (cp[k] >= 'a' && cp[k] <= 'z')
                                      || (cp[k] >= '0' && cp[k] <= '9')
                                      || cp[k] == ',' || cp[k] == '.'))
                k++;
            if (k > pos + 1 && k < (size_t)nc && cp[k] == ']')
                pos = k + 1;
        }
        size_t dend = pos;
        /* a separator or trailing white space */
        if (pos < (size_t)nc) {
            size_t k = pos;
            while (k < (size_t)nc && py_isspace(cp[k]))
                k++;
            if (k > pos && k == (size_t)nc) {
                pos = (size_t)nc;
            } else {
                k = pos;
                while (k < (size_t)nc && py_isspace(cp[k]))
                    k++;
                if (k >= (size_t)nc || cp[k] != ',')
                    goto fail;
                k++;
                while (k < (size_t)nc && py_isspace(cp[k]))
                    k++;
                pos = k;
                islist = 1;
            }
        }
        char order;
        if (order2 == 0) {
            order = order1;
        } else if (order1 == 0) {
            order = order2;
        } else {
            char o1 = order1 == '=' ? nbo : order1, o2 = order2 == '=' ? nbo : order2;
            if (o1 != o2)
                goto fail;
            order = o1;
        }
        if (order == '|' || order == '=' || order == nbo)
            order = 0;
        goat_str name = {0};
        if (order)
            sb_c(&name, order);
        for (size_t k = dstart; k < dend; k++)
            sb_cp(&name, cp[k]);
        pyval *dstr = pv_new(a, PV_STR);
        {
            size_t n = dend - dstart + (order ? 1 : 0);
            dstr->s = a_alloc(a, (n + 1) * sizeof(uint32_t));
            size_t j = 0;
            if (order)
                dstr->s[j++] = (uint32_t)order;
            for (size_t k = dstart; k < dend; k++)
                dstr->s[j++] = cp[k];
            dstr->n = n;
        }
        sb_free(&name);
        pyval *item = dstr;
        if (rend > rstart) {
            pyval *rep = literal_eval(a, cp + rstart, rend - rstart);
            if (rep == NULL)
                goto fail;
            item = pv_new(a, PV_TUPLE);
            item->items = a_alloc(a, 2 * sizeof(pyval *));
            item->items[0] = dstr;
            item->items[1] = rep;
            item->len = 2;
        }
        *(pyval **)vec_push(&items) = item;
    }
    pyval **list = vec_keep(&items, a);
    size_t n = items.n;
    if (n == 0)
        return NULL;
    if (!islist) {
        /* a single str is not what np.dtype expects back (a RuntimeError) */
        if (list[0]->t != PV_TUPLE)
            return NULL;
        return dt_from_any(a, list[0]);
    }
    /* _convert_from_list: fields f0, f1, ... packed */
    if (list[n - 1]->t == PV_STR && list[n - 1]->n == 0)
        n--;
    if (n == 0)
        return NULL;
    dtype *d = dt_make(a, 'V', 0);
    d->has_fields = 1;
    d->fields = a_alloc(a, n * sizeof(dfield));
    d->nfields = n;
    int64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        dtype *f = dt_from_any(a, list[i]);
        if (f == NULL)
            return NULL;
        char fname[32];
        snprintf(fname, sizeof fname, "f%zu", i);
        d->fields[i].name = pv_cstr(a, fname);
        d->fields[i].dt = f;
        d->fields[i].offset = total;
        total += f->size;
        if (f->hasobject)
            d->hasobject = 1;
    }
    d->size = total;
    return d;
fail:
    free(items.data);
    return NULL;
}

/* _convert_from_str, on the str's UTF-8 bytes (t[len] is NUL; t may hold NULs) */
static dtype *dt_from_str_bytes(arena *a, const char *t0, size_t len0)
{
    const char *t = t0;
    size_t len = len0;
    if (len == 0)
        return NULL;
    /* _check_for_commastring */
    {
        int chk = (t[0] == '>' || t[0] == '<' || t[0] == '|' || t[0] == '=');
        int comma = (t[0] >= '0' && t[0] <= '9') || (len > 1 && chk && t[1] >= '0' && t[1] <= '9');
        if (!comma && ((len > 1 && t[0] == '(' && t[1] == ')')
                       || (len > 3 && chk && t[1] == '(' && t[2] == ')')))
            comma = 1;
        if (!comma) {
            int sq = 0;
            for (size_t i = 0; i < len && !comma; i++) {
                if (t[i] == ',' && sq == 0)
                    comma = 1;
                else if (t[i] == '[')
                    sq++;
                else if (t[i] == ']')
                    sq--;
            }
        }
        if (comma)
            return dt_commastring(a, t, len);
    }
    char endian = '=';
    if (t[0] == '>' || t[0] == '<' || t[0] == '=') {
        endian = t[0];
        t++;
        len--;
    } else if (t[0] == '|') {
        t++;
        len--;
    }
    if (len == 0)
        return NULL;
    const char nbo = native_order();
    if (is_datetime_typestr(t, len)) {
        dtype *d = dt_datetime(a, t, len);
        if (d == NULL)
            return NULL;
        if (endian != '=' && endian != nbo)
            d->bo = endian;
        return d;
    }
    int code = -1;            /* a type character, or -1: look the name up */
    int64_t elsize = 0;
    if (len == 1) {
        code = (unsigned char)t[0];
    } else {
        char *end;
        errno = 0;
        long r = strtol(t + 1, &end, 10);
        int ok = errno == 0 && *end == '\0';
        if (r > INT_MAX || r < 0)
            return NULL;
        elsize = r;
        if (ok && (size_t)(end - t) == len) {
            switch (t[0]) {
            case 'S': code = 'S'; break;
            case 'U':
                if (elsize > INT_MAX / 4)
                    return NULL;
                code = 'U';
                elsize *= 4;
                break;
            case 'V': code = 'V'; break;
            case 'a': code = 'S'; break;
            default:
                code = elsize == 0 ? 0 : typestr_convert((int)elsize, (unsigned char)t[0]);
                if (code == 0)
                    code = -1;
                elsize = 0;
            }
        } else if (ok) {
            return NULL;
        }
    }
    dtype *d = code >= 0 ? dt_from_char(a, code) : NULL;
    if (d == NULL) {
        /* the whole string (its byte order too) as a name in numpy.sctypeDict */
        if (strlen(t0) != len0)
            return NULL;
        for (size_t i = 0; i < sizeof TYPE_NAMES / sizeof TYPE_NAMES[0]; i++)
            if (strcmp(t0, TYPE_NAMES[i].name) == 0)
                return dt_from_char(a, TYPE_NAMES[i].code);
        return NULL;
    }
    if (dt_unsized(d) && d->size != elsize && (d->kind == 'S' || d->kind == 'U' || d->kind == 'V'))
        d->size = elsize;
    if (endian != '=' && endian != nbo && d->bo != '|' && d->bo != endian)
        d->bo = endian;
    return d;
}

static dtype *dt_from_str(arena *a, const pyval *v)
{
    goat_str u = {0};
    if (!pv_utf8(v, &u)) {
        sb_free(&u);
        return NULL;
    }
    char *t = a_own(a, u.data);
    return dt_from_str_bytes(a, t, u.len);
}

/* PyArray_PyIntAsInt-like: a Python int (not a bool) that fits in a C int */
static int pv_as_cint(const pyval *v, int64_t *out)
{
    int64_t x;
    if (v->t != PV_INT || !pv_as_i64(v, &x) || x > INT_MAX || x < INT_MIN)
        return 0;
    *out = x;
    return 1;
}

/* a sized object's items as the values iterating it gives (NULL if it has no len()) */
static pyval **pv_iter(arena *a, const pyval *v, size_t *n)
{
    switch (v->t) {
    case PV_TUPLE:
    case PV_LIST:
    case PV_SET:
        *n = v->len;
        return v->items;
    case PV_DICT: {
        pyval **keys = a_alloc(a, (v->len + 1) * sizeof(pyval *));
        for (size_t i = 0; i < v->len; i++)
            keys[i] = v->items[2 * i];
        *n = v->len;
        return keys;
    }
    case PV_STR: {
        pyval **chars = a_alloc(a, (v->n + 1) * sizeof(pyval *));
        for (size_t i = 0; i < v->n; i++)
            chars[i] = pv_str(a, &v->s[i], 1, 0);
        *n = v->n;
        return chars;
    }
    case PV_BYTES: {
        pyval **ints = a_alloc(a, (v->n + 1) * sizeof(pyval *));
        for (size_t i = 0; i < v->n; i++)
            ints[i] = pv_int64(a, v->s[i]);
        *n = v->n;
        return ints;
    }
    default:
        return NULL;
    }
}

/* np.dtype({'names':..., 'formats':..., 'titles':..., 'offsets':..., 'itemsize':...}) */
static dtype *dt_struct(arena *a, dfield *fields, size_t n, int64_t itemsize)
{
    dtype *d = dt_make(a, 'V', itemsize);
    d->has_fields = 1;
    for (size_t i = 0; i < n; i++) {
        if (fields[i].name->t != PV_STR)
            return NULL;                /* field names must be strings */
        for (size_t j = 0; j < i; j++) {
            if (pv_eq(fields[j].name, fields[i].name))
                return NULL;            /* name already used */
            if (fields[j].title && fields[j].title->t == PV_STR
                    && pv_eq(fields[j].title, fields[i].name))
                return NULL;
        }
        if (fields[i].title && fields[i].title->t == PV_STR) {
            for (size_t j = 0; j <= i; j++) {
                if (pv_eq(fields[j].name, fields[i].title))
                    return NULL;        /* title already used */
                if (j < i && fields[j].title && fields[j].title->t == PV_STR
                        && pv_eq(fields[j].title, fields[i].title))
                    return NULL;
            }
        }
        if (fields[i].dt->hasobject)
            d->hasobject = 1;
    }
    d->fields = fields;
    d->nfields = n;
    return d;
}

/* _convert_from_array_descr (np.dtype of a list), as far as descr_to_dtype's list goes */
static dtype *dt_from_list(arena *a, const pyval *v, int via_descr);

/* numpy.lib.format.descr_to_dtype */
static dtype *descr_to_dtype(arena *a, const pyval *descr)
{
    if (descr->t == PV_STR)
        return dt_from_str(a, descr);
    if (descr->t == PV_TUPLE) {
        if (descr->len < 2)
            return NULL;                /* IndexError */
        dtype *dt = descr_to_dtype(a, descr->items[0]);
        if (dt == NULL)
            return NULL;
        return dt_tuple(a, dt, descr->items[1]);
    }
    return dt_from_list(a, descr, 1);
}

static dtype *dt_from_list(arena *a, const pyval *v, int via_descr)
{
    size_t n;
    pyval **items = pv_iter(a, v, &n);
    if (items == NULL || v->t == PV_STR)
        return NULL;
    if (!via_descr && v->t != PV_LIST)
        return NULL;
    dfield *fields = a_alloc(a, (n + 1) * sizeof(dfield));
    size_t nf = 0;
    int64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        size_t flen;
        pyval **f = pv_iter(a, items[i], &flen);
        if (f == NULL)
            return NULL;                /* len() of a number */
        pyval *name;
        dtype *dt;
        if (flen == 2) {
            name = f[0];
            dt = via_descr ? descr_to_dtype(a, f[1]) : dt_from_any(a, f[1]);
        } else if (flen == 3) {
            name = f[0];
            dt = via_descr ? descr_to_dtype(a, f[1]) : dt_from_any(a, f[1]);
            if (dt != NULL)
                dt = dt_tuple(a, dt, f[2]);
        } else {
            return NULL;
        }
        if (dt == NULL)
            return NULL;
        int is_pad = pv_is_str(name, "") && dt->kind == 'V' && !dt->has_fields;
        if (!is_pad) {
            pyval *title = NULL;
            if (name->t == PV_TUPLE) {
                if (name->len != 2)
                    return NULL;
                title = name->items[0]->t == PV_NONE ? NULL : name->items[0];
                name = name->items[1];
            }
            fields[nf].name = name;
            fields[nf].title = title;
            fields[nf].dt = dt;
            fields[nf].offset = offset;
            nf++;
        }
        offset += dt->size;
    }
    return dt_struct(a, fields, nf, offset);
}

/* _convert_from_any, for the objects a header can hold */
static dtype *dt_from_any(arena *a, const pyval *v)
{
    switch (v->t) {
    case PV_NONE:
        return dt_make(a, 'f', 8);
    case PV_STR:
    case PV_BYTES:
        if (v->t == PV_BYTES) {
            /* decoded as UTF-8 */
            goat_str u = {0};
            pv_utf8(v, &u);
            long k = utf8_decode((const unsigned char *)sb_str(&u), u.len, NULL, 0);
            if (k < 0) {
                sb_free(&u);
                return NULL;
            }
            char *t = a_own(a, u.data);
            return dt_from_str_bytes(a, t, u.len);
        }
        return dt_from_str(a, v);
    case PV_TUPLE: {
        if (v->len != 2)
            return NULL;
        dtype *t = dt_from_any(a, v->items[0]);
        return t ? dt_tuple(a, t, v->items[1]) : NULL;
    }
    case PV_LIST:
        if (v->len == 0)
            return dt_struct(a, NULL, 0, 0);
        return dt_from_list(a, v, 0);
    case PV_DICT:
        if (v->len == 0)
            return dt_struct(a, NULL, 0, 0);
        return NULL;
    default:
        return NULL;
    }
}

/* _convert_from_tuple, once its first item is a dtype: (type, val) */
static dtype *dt_tuple(arena *a, dtype *type, const pyval *val)
{
    /* (base, new): a view of `type` as another dtype of the same size */
    int ints = val->t == PV_TUPLE;
    for (size_t i = 0; ints && i < val->len; i++)
        if (val->items[i]->t != PV_INT && val->items[i]->t != PV_BOOL)
            ints = 0;
    if (!ints) {
        dtype *conv = dt_from_any(a, val);
        if (conv != NULL && type->kind != 'T' && conv->kind != 'T') {
            dtype *nw = dt_copy(a, type);
            if (dt_unsized(nw)) {
                nw->size = conv->size;
            } else if (nw->size != conv->size) {
                return NULL;            /* mismatch in size */
            } else if (nw->hasobject || conv->hasobject) {
                /* _validate_union_object_dtype */
                if (nw->has_fields || nw->kind != 'O' || !conv->has_fields
                        || conv->nfields != 1 || conv->fields[0].dt->kind != 'O')
                    return NULL;
            }
            if (conv->has_fields) {
                nw->has_fields = 1;
                nw->fields = conv->fields;
                nw->nfields = conv->nfields;
            }
            if (nw->kind == 'V')
                nw->hasobject = conv->hasobject;
            return nw;
        }
    }
    if (dt_unsized(type)) {
        int64_t itemsize;
        if (!pv_as_cint(val, &itemsize))
            return NULL;
        if (type->kind == 'U')
            itemsize = itemsize > INT_MAX / 4 ? -1 : itemsize * 4;
        if (itemsize < 0)
            return NULL;
        dtype *nw = dt_copy(a, type);
        nw->size = itemsize;
        return nw;
    }
    /* a sub-array: val is a shape */
    int64_t dims[NPY_MAXDIMS_ + 1];
    size_t nd = 0;
    if (val->t == PV_INT) {
        if (!pv_as_i64(val, &dims[0]))
            return NULL;
        nd = 1;
    } else if (val->t == PV_TUPLE || val->t == PV_LIST) {
        if (val->len > NPY_MAXDIMS_)
            return NULL;
        for (size_t i = 0; i < val->len; i++)
            if (!pv_as_i64(val->items[i], &dims[nd++]))
                return NULL;
        if (nd == 0 && val->t == PV_TUPLE)
            return type;
    } else if (val->t == PV_STR && val->n == 0) {
        nd = 0;                         /* an empty sequence: shape () */
    } else {
        return NULL;
    }
    int64_t items = 1;
    for (size_t i = 0; i < nd; i++) {
        if (dims[i] < 0 || dims[i] > INT_MAX)
            return NULL;
    }
    for (size_t i = 0; i < nd; i++) {
        if (dims[i] != 0 && items > INT64_MAX / dims[i])
            return NULL;
        items *= dims[i];
    }
    if (items > INT_MAX)
        return NULL;
    if (type->size != 0 && items > INT_MAX / type->size)
        return NULL;
    dtype *nw = dt_make(a, 'V', items * type->size);
    nw->base = type;
    nw->shape = a_alloc(a, (nd + 1) * sizeof(int64_t));
    memcpy(nw->shape, dims, nd * sizeof(int64_t));
    nw->ndim = nd;
    nw->hasobject = type->hasobject;
    return nw;
}

/* ---- str(dtype), as numpy._core._dtype writes it */

static char order_str(const dtype *d)     /* _byte_order_str: '<', '>' or none */
{
    if (d->bo == '=')
        return native_order();
    return d->bo == '|' ? 0 : d->bo;
}

static void datetime_meta(goat_str *s, const dtype *d)
{
    if (d->dt_unit == FR_GENERIC)
        return;
    if (d->dt_num == 1)
        sb_f(s, "[%s]", FR_NAMES[d->dt_unit]);
    else
        sb_f(s, "[%d%s]", d->dt_num, FR_NAMES[d->dt_unit]);
}

static void dt_str(goat_str *s, const dtype *d);

static void shape_tuple(goat_str *s, const dtype *d)
{
    sb_c(s, '(');
    for (size_t i = 0; i < d->ndim; i++) {
        if (i)
            sb(s, ", ");
        sb_f(s, "%lld", (long long)d->shape[i]);
    }
    if (d->ndim == 1)
        sb_c(s, ',');
    sb_c(s, ')');
}

static void construction_repr(goat_str *s, const dtype *d);

static int dt_is_packed(const dtype *d)
{
    int64_t total = 0;
    for (size_t i = 0; i < d->nfields; i++) {
        if (d->fields[i].offset != total)
            return 0;
        total += d->fields[i].dt->size;
    }
    return total == d->size;
}

static void struct_str(goat_str *s, const dtype *d)
{
    goat_str sub = {0};
    if (dt_is_packed(d)) {
        sb_c(&sub, '[');
        for (size_t i = 0; i < d->nfields; i++) {
            const dfield *f = &d->fields[i];
            if (i)
                sb(&sub, ", ");
            sb_c(&sub, '(');
            if (f->title) {
                sb_c(&sub, '(');
                pv_repr(&sub, f->title);
                sb(&sub, ", ");
                pv_repr(&sub, f->name);
                sb(&sub, "), ");
            } else {
                pv_repr(&sub, f->name);
                sb(&sub, ", ");
            }
            if (f->dt->base) {
                construction_repr(&sub, f->dt->base);
                sb(&sub, ", ");
                shape_tuple(&sub, f->dt);
            } else {
                construction_repr(&sub, f->dt);
            }
            sb_c(&sub, ')');
        }
        sb_c(&sub, ']');
    } else {
        sb(&sub, "{'names': [");
        for (size_t i = 0; i < d->nfields; i++) {
            if (i)
                sb(&sub, ", ");
            pv_repr(&sub, d->fields[i].name);
        }
        sb(&sub, "], 'formats': [");
        for (size_t i = 0; i < d->nfields; i++) {
            if (i)
                sb(&sub, ", ");
            construction_repr(&sub, d->fields[i].dt);
        }
        sb(&sub, "], 'offsets': [");
        for (size_t i = 0; i < d->nfields; i++) {
            if (i)
                sb(&sub, ", ");
            sb_f(&sub, "%lld", (long long)d->fields[i].offset);
        }
        int titles = 0;
        for (size_t i = 0; i < d->nfields; i++)
            if (d->fields[i].title)
                titles = 1;
        if (titles) {
            sb(&sub, "], 'titles': [");
            for (size_t i = 0; i < d->nfields; i++) {
                if (i)
                    sb(&sub, ", ");
                if (d->fields[i].title)
                    pv_repr(&sub, d->fields[i].title);
                else
                    sb(&sub, "None");
            }
        }
        sb_f(&sub, "], 'itemsize': %lld}", (long long)d->size);
    }
    if (d->kind != 'V') {
        /* a union: (numpy.TYPE, fields) */
        static const char *const INT_NAMES[] = {"int8", "int16", 0, "int32", 0, 0, 0, "int64"};
        const char *tn = "void";
        char buf[32];
        switch (d->kind) {
        case 'b': tn = "bool"; break;
        case 'i': case 'u':
            snprintf(buf, sizeof buf, "%s%s", d->kind == 'u' ? "u" : "",
                     d->size >= 1 && d->size <= 8 && INT_NAMES[d->size - 1]
                         ? INT_NAMES[d->size - 1] : "int");
            tn = buf;
            break;
        case 'f':
            snprintf(buf, sizeof buf, d->size == 16 ? "longdouble" : "float%d", (int)d->size * 8);
            tn = buf;
            break;
        case 'c':
            snprintf(buf, sizeof buf, d->size == 32 ? "clongdouble" : "complex%d",
                     (int)d->size * 8);
            tn = buf;
            break;
        case 'O': tn = "object_"; break;
        case 'S': tn = "bytes_"; break;
        case 'U': tn = "str_"; break;
        case 'M': tn = "datetime64"; break;
        case 'm': tn = "timedelta64"; break;
        }
        sb_f(s, "(numpy.%s, %s)", tn, sb_str(&sub));
    } else {
        sb(s, sb_str(&sub));
    }
    sb_free(&sub);
}

/* _construction_repr(dtype, short=True) */
static void construction_repr(goat_str *s, const dtype *d)
{
    if (d->has_fields) {
        struct_str(s, d);
        return;
    }
    if (d->base) {
        sb_c(s, '(');
        construction_repr(s, d->base);
        sb(s, ", ");
        shape_tuple(s, d);
        sb_c(s, ')');
        return;
    }
    char o = order_str(d);
    char os[2] = {o, 0};
    switch (d->kind) {
    case 'b': sb(s, "'?'"); break;
    case 'O': sb(s, "'O'"); break;
    case 'T': sb(s, "'T'"); break;
    case 'S':
        if (d->size == 0) sb(s, "'S'");
        else sb_f(s, "'S%lld'", (long long)d->size);
        break;
    case 'U':
        if (d->size == 0) sb_f(s, "'%sU'", os);
        else sb_f(s, "'%sU%lld'", os, (long long)(d->size / 4));
        break;
    case 'V':
        if (d->size == 0) sb(s, "'V'");
        else sb_f(s, "'V%lld'", (long long)d->size);
        break;
    case 'M':
    case 'm':
        sb_f(s, "'%s%c8", os, d->kind);
        datetime_meta(s, d);
        sb_c(s, '\'');
        break;
    default:
        sb_f(s, "'%s%c%lld'", os, d->kind, (long long)d->size);
    }
}

/* dtype.str */
static void dt_typestr(goat_str *s, const dtype *d)
{
    char o = d->bo == '=' ? native_order() : d->bo;
    int64_t size = d->kind == 'U' ? d->size / 4 : d->size;
    if (d->kind == 'O')
        sb_f(s, "%cO", o);
    else
        sb_f(s, "%c%c%lld", o, d->kind, (long long)size);
    if (d->kind == 'M' || d->kind == 'm')
        datetime_meta(s, d);
}

/* str(dtype) */
static void dt_str(goat_str *s, const dtype *d)
{
    if (d->has_fields) {
        struct_str(s, d);
        return;
    }
    if (d->base) {
        sb_c(s, '(');
        construction_repr(s, d->base);
        sb(s, ", ");
        shape_tuple(s, d);
        sb_c(s, ')');
        return;
    }
    int native = d->bo == '=' || d->bo == '|' || d->bo == native_order();
    if (d->kind == 'S' || d->kind == 'U' || d->kind == 'V' || !native) {
        dt_typestr(s, d);
        return;
    }
    switch (d->kind) {
    case 'b': sb(s, "bool"); break;
    case 'i': sb_f(s, "int%lld", (long long)d->size * 8); break;
    case 'u': sb_f(s, "uint%lld", (long long)d->size * 8); break;
    case 'f': sb_f(s, "float%lld", (long long)d->size * 8); break;
    case 'c': sb_f(s, "complex%lld", (long long)d->size * 8); break;
    case 'O': sb(s, "object"); break;
    case 'T': sb(s, "StringDType()"); break;
    case 'M': sb(s, "datetime64"); datetime_meta(s, d); break;
    case 'm': sb(s, "timedelta64"); datetime_meta(s, d); break;
    }
}

/* ---------------------------------------------------------------- paths, as posixpath */

static char *xstrdup(const char *s)
{
    char *d = strdup(s);
    if (d == NULL)
        out_of_memory();
    return d;
}

static char *xstrndup(const char *s, size_t n)
{
    char *d = strndup(s, n);
    if (d == NULL)
        out_of_memory();
    return d;
}

/* os.path.dirname (a new string) */
static char *py_dirname(const char *p)
{
    const char *slash = strrchr(p, '/');
    size_t i = slash ? (size_t)(slash - p) + 1 : 0;
    size_t all_slashes = 1;
    for (size_t k = 0; k < i; k++)
        if (p[k] != '/')
            all_slashes = 0;
    if (i > 0 && !all_slashes)
        while (i > 0 && p[i - 1] == '/')
            i--;
    return xstrndup(p, i);
}

/* os.path.basename (a pointer into p) */
static const char *py_basename(const char *p)
{
    const char *slash = strrchr(p, '/');
    return slash ? slash + 1 : p;
}

/* os.path.join(a, b) */
static char *py_join(const char *a, const char *b)
{
    goat_str s = {0};
    if (b[0] == '/') {
        sb(&s, b);
    } else {
        sb(&s, a);
        if (a[0] != '\0' && a[strlen(a) - 1] != '/')
            sb_c(&s, '/');
        sb(&s, b);
    }
    if (s.data == NULL)
        sb_n(&s, "", 0);
    return s.data;
}

static int py_isdir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static int py_exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static int py_islink(const char *p)
{
    struct stat st;
    return lstat(p, &st) == 0 && S_ISLNK(st.st_mode);
}

/* os.path.normpath */
static char *py_normpath(const char *p)
{
    if (p[0] == '\0')
        return xstrdup(".");
    int initial = 0;
    if (p[0] == '/') {
        initial = 1;
        if (p[1] == '/' && p[2] != '/')
            initial = 2;
    }
    size_t n = strlen(p);
    const char **comps = malloc((n + 1) * sizeof *comps);
    size_t *lens = malloc((n + 1) * sizeof *lens);
    if (comps == NULL || lens == NULL)
        out_of_memory();
    size_t nc = 0;
    const char *s = p;
    while (*s) {
        while (*s == '/')
            s++;
        if (!*s)
            break;
        const char *e = s;
        while (*e && *e != '/')
            e++;
        size_t len = (size_t)(e - s);
        if (len == 1 && s[0] == '.') {
            /* skip */
        } else if (len == 2 && s[0] == '.' && s[1] == '.') {
            if ((!initial && nc == 0) || (nc > 0 && lens[nc - 1] == 2
                                          && comps[nc - 1][0] == '.' && comps[nc - 1][1] == '.')) {
                comps[nc] = s;
                lens[nc++] = len;
            } else if (nc > 0) {
                nc--;
            }
        } else {
            comps[nc] = s;
            lens[nc++] = len;
        }
        s = e;
    }
    goat_str out = {0};
    for (int i = 0; i < initial; i++)
        sb_c(&out, '/');
    for (size_t i = 0; i < nc; i++) {
        if (i)
            sb_c(&out, '/');
        sb_n(&out, comps[i], lens[i]);
    }
    free(comps);
    free(lens);
    if (out.len == 0)
        sb(&out, ".");
    return out.data;
}

/* os.path.abspath */
static char *py_abspath(const char *p)
{
    if (p[0] == '/')
        return py_normpath(p);
    char *cwd = getcwd(NULL, 0);
    if (cwd == NULL)
        return NULL;
    char *j = py_join(cwd, p);
    free(cwd);
    char *r = py_normpath(j);
    free(j);
    return r;
}

typedef struct {
    char **keys, **vals;          /* vals[i] NULL: being resolved */
    size_t n, cap;
} seen_map;

static long seen_find(seen_map *m, const char *k)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->keys[i], k) == 0)
            return (long)i;
    return -1;
}

static void seen_set(seen_map *m, const char *k, const char *v)
{
    long i = seen_find(m, k);
    if (i < 0) {
        if (m->n == m->cap) {
            m->cap = m->cap ? m->cap * 2 : 8;
            m->keys = realloc(m->keys, m->cap * sizeof *m->keys);
            m->vals = realloc(m->vals, m->cap * sizeof *m->vals);
            if (!m->keys || !m->vals)
                out_of_memory();
        }
        i = (long)m->n++;
        m->keys[i] = xstrdup(k);
        m->vals[i] = NULL;
    }
    free(m->vals[i]);
    m->vals[i] = v ? xstrdup(v) : NULL;
}

/* posixpath._joinrealpath (strict=False); *path is replaced; returns ok, or -1 with errno
 * set when os.readlink fails */
static int joinrealpath(char **path, const char *rest0, seen_map *seen)
{
    char *restbuf = xstrdup(rest0);
    char *rest = restbuf;
    if (rest[0] == '/') {
        rest++;
        free(*path);
        *path = xstrdup("/");
    }
    while (*rest) {
        char *slash = strchr(rest, '/');
        char *name = rest;
        if (slash) {
            *slash = '\0';
            rest = slash + 1;
        } else {
            rest += strlen(rest);
        }
        if (name[0] == '\0' || strcmp(name, ".") == 0)
            continue;
        if (strcmp(name, "..") == 0) {
            if ((*path)[0]) {
                char *head = py_dirname(*path);
                const char *tail = py_basename(*path);
                int tail_is_pardir = strcmp(tail, "..") == 0;
                free(*path);
                *path = head;
                if (tail_is_pardir) {
                    char *j1 = py_join(*path, "..");
                    char *j2 = py_join(j1, "..");
                    free(j1);
                    free(*path);
                    *path = j2;
                }
            } else {
                free(*path);
                *path = xstrdup("..");
            }
            continue;
        }
        char *newpath = py_join(*path, name);
        struct stat st;
        int is_link = lstat(newpath, &st) == 0 && S_ISLNK(st.st_mode);
        if (!is_link) {
            free(*path);
            *path = newpath;
            continue;
        }
        long k = seen_find(seen, newpath);
        if (k >= 0) {
            if (seen->vals[k] != NULL) {
                free(*path);
                *path = xstrdup(seen->vals[k]);
                free(newpath);
                continue;
            }
            char *j = py_join(newpath, rest);
            free(*path);
            *path = j;
            free(newpath);
            free(restbuf);
            return 0;
        }
        seen_set(seen, newpath, NULL);
        char target[PATH_MAX + 1];
        ssize_t len = readlink(newpath, target, PATH_MAX);
        if (len < 0) {
            int e = errno;
            free(newpath);
            free(restbuf);
            errno = e;
            return -1;
        }
        target[len] = '\0';
        int ok = joinrealpath(path, target, seen);
        if (ok < 0) {
            free(newpath);
            free(restbuf);
            return -1;
        }
        if (!ok) {
            char *j = py_join(*path, rest);
            free(*path);
            *path = j;
            free(newpath);
            free(restbuf);
            return 0;
        }
        seen_set(seen, newpath, *path);
        free(newpath);
    }
    free(restbuf);
    return 1;
}

/* os.path.realpath(p) (NULL with errno set where Python raises OSError) */
static char *py_realpath(const char *p)
{
    seen_map seen = {0};
    char *path = xstrdup("");
    int ok = joinrealpath(&path, p, &seen);
    int e = errno;
    for (size_t i = 0; i < seen.n; i++) {
        free(seen.keys[i]);
        free(seen.vals[i]);
    }
    free(seen.keys);
    free(seen.vals);
    if (ok < 0) {
        free(path);
        errno = e;
        return NULL;
    }
    char *r = py_abspath(path);
    e = errno;
    free(path);
    errno = e;
    return r;
}

/* ------------------------------------------------------------------------- messages */

/* _first_non_directory */
static char *first_non_directory(const char *real_dir, const char *shown_dir)
{
    char *probe = xstrdup(real_dir), *shown = xstrdup(shown_dir);
    char *found = xstrdup(shown[0] ? shown : real_dir);
    for (;;) {
        if (!probe[0])
            break;
        char *up = py_dirname(probe);
        int same = strcmp(up, probe) == 0;
        if (same) {
            free(up);
            break;
        }
        if (py_exists(probe) && !py_isdir(probe)) {
            free(found);
            found = xstrdup(shown[0] ? shown : probe);
        }
        char *sup = py_dirname(shown);
        free(probe);
        free(shown);
        probe = up;
        shown = sup;
    }
    free(probe);
    free(shown);
    return found;
}

/* _one_edit: b is a with one byte inserted, deleted or replaced, or two neighbours swapped,
 * where what changed is not digits alone */
static int one_edit(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b), i = 0;
    if (strcmp(a, b) == 0 || (la > lb ? la - lb : lb - la) > 1)
        return 0;
    while (i < la && i < lb && a[i] == b[i])
        i++;
    char changed[3] = {0};
    if (la == lb) {
        if (strcmp(a + i + 1, b + i + 1) == 0) {
            changed[0] = a[i];
            changed[1] = b[i];
        } else if (i + 1 < la && a[i] == b[i + 1] && a[i + 1] == b[i]
                   && strcmp(a + i + 2, b + i + 2) == 0) {
            changed[0] = a[i];
            changed[1] = a[i + 1];
        } else {
            return 0;
        }
    } else if (la + 1 == lb) {
        if (strcmp(a + i, b + i + 1) != 0)
            return 0;
        changed[0] = b[i];
    } else {
        if (strcmp(a + i + 1, b + i) != 0)
            return 0;
        changed[0] = a[i];
    }
    for (const char *c = changed; *c; c++)
        if (*c < '0' || *c > '9')
            return 1;
    return 0;
}

static int ascii_same_case(const char *a, const char *b)
{
    for (; *a && *b; a++, b++) {
        char x = (*a >= 'A' && *a <= 'Z') ? (char)(*a - 'A' + 'a') : *a;
        char y = (*b >= 'A' && *b <= 'Z') ? (char)(*b - 'A' + 'a') : *b;
        if (x != y)
            return 0;
    }
    return *a == *b;
}

static int by_bytes(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

#define NEARBY_FILES 10000

/* _nearby: for a file `path` (written `name`) that does not exist, "; did you mean NAME?"
 * with the file of its folder it is likeliest a slip for (the rules of npyio._nearby) */
static int valid_utf8(const char *s)
{
    return utf8_decode((const unsigned char *)s, strlen(s), NULL, 0) >= 0;
}

static void nearby(goat_str *m, const char *path, const char *name, const char *verb)
{
    const char *base = py_basename(path);
    if (!base[0])
        return;
    char *folder = py_dirname(path);
    DIR *d = opendir(folder[0] ? folder : ".");
    if (d == NULL) {
        free(folder);
        return;
    }
    char **entries = NULL;
    size_t n = 0, cap = 0, files = 0;
    int too_many = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        char *full = py_join(folder, de->d_name);
        struct stat st;
        int regular = stat(full, &st) == 0 && S_ISREG(st.st_mode);
        free(full);
        if (!regular)
            continue;
        if (files++ >= NEARBY_FILES) {
            too_many = 1;
            break;
        }
        if (!valid_utf8(de->d_name))        /* passed over, as npyio._nearby does */
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **grown = realloc(entries, cap * sizeof *entries);
            if (grown == NULL) {
                too_many = 1;
                break;
            }
            entries = grown;
        }
        entries[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    free(folder);
    const char *found = NULL;
    if (!too_many) {
        qsort(entries, n, sizeof *entries, by_bytes);
        size_t lb = strlen(base);
        const char *ext = strcmp(verb, "read") == 0 ? ".mg" : ".npy";
        size_t stem = strcspn(base, ".");      /* e.npy is no slip for W.npy */
        for (int rule = 0; rule < 4 && found == NULL; rule++)
            for (size_t k = 0; k < n && found == NULL; k++) {
                const char *e = entries[k];
                if (rule == 0 ? strcmp(e, base) != 0 && ascii_same_case(e, base)
                    : rule == 1 ? strncmp(e, base, lb) == 0 && strcmp(e + lb, ext) == 0
                    : rule == 2 ? strncmp(e, base, lb) == 0 && e[lb] == '.'
                    : stem >= 3 && one_edit(base, e))
                    found = e;
            }
    }
    if (found != NULL) {
        char *shown_dir = py_dirname(name);
        char *shown = py_join(shown_dir, found);
        sb(m, "; did you mean ");
        sb(m, shown);
        sb(m, "?");
        free(shown);
        free(shown_dir);
    }
    for (size_t k = 0; k < n; k++)
        free(entries[k]);
    free(entries);
}

/* _os_message: "cannot load x.npy: no such file" and the like, from an errno.
 * `strerror_text`: the OSError's strerror where it is not strerror(code). */
static void os_message(goat_str *m, const char *verb, const char *path, const char *name,
                       int code, const char *strerror_text)
{
    char *shown_dir = py_dirname(name);
    if (!shown_dir[0]) {
        free(shown_dir);
        shown_dir = py_dirname(path);
    }
    char *real_dir = py_dirname(path);
    sb_f(m, "cannot %s %s: ", verb, name);
    if (code == ENOENT) {
        if (real_dir[0] && !py_isdir(real_dir) && !py_exists(real_dir)) {
            sb(m, "no such directory ");
            repr_path(m, shown_dir);
        } else if (strcmp(verb, "save") == 0) {
            sb(m, "no such directory ");
            repr_path(m, shown_dir[0] ? shown_dir : ".");
        } else {
            sb(m, "no such file");
            nearby(m, path, name, verb);
        }
    } else if (code == ENOTDIR) {
        char *f = first_non_directory(real_dir, shown_dir);
        repr_path(m, f);
        sb(m, " is not a directory");
        free(f);
    } else if (code == EACCES || code == EPERM) {
        sb(m, "permission denied");
    } else if (code == EISDIR) {
        sb(m, "it is a directory");
    } else if (code == ENOSPC) {
        sb(m, "the disk is full");
#ifdef EDQUOT
    } else if (code == EDQUOT) {
        sb(m, "the disk quota is used up");
#endif
    } else if (code == EROFS) {
        sb(m, "the file system is read-only");
    } else if (code == ELOOP) {
        sb(m, "too many levels of symbolic links");
    } else if (code == ENAMETOOLONG) {
        sb(m, "the name is too long");
    } else if (code == EIO) {
        sb(m, "an input/output error (the disk may be failing)");
    } else {
        /* strerror's text (or an OSError's own text, code 0), first letter lowered */
        const char *text = strerror_text ? strerror_text : strerror(code);
        if (text[0] >= 'A' && text[0] <= 'Z') {
            sb_c(m, (char)(text[0] - 'A' + 'a'));
            sb(m, text + 1);
        } else {
            sb(m, text);
        }
    }
    free(shown_dir);
    free(real_dir);
}

/* _require_regular: 1 and the message if st is not a regular file */
static int not_regular(goat_str *m, const struct stat *st, const char *name, const char *verb)
{
    if (S_ISDIR(st->st_mode)) {
        sb_f(m, "cannot %s %s: it is a directory", verb, name);
        return 1;
    }
    if (!S_ISREG(st->st_mode)) {
        const char *kind = S_ISFIFO(st->st_mode) ? "a named pipe"
                         : S_ISCHR(st->st_mode) ? "a character device"
                         : S_ISBLK(st->st_mode) ? "a block device"
                         : S_ISSOCK(st->st_mode) ? "a socket" : "not a plain file";
        sb_f(m, "cannot %s %s: it is %s, not a regular file", verb, name, kind);
        return 1;
    }
    return 0;
}

/* --------------------------------------------------------------------------- loading */

typedef struct {
    arena a;
    const char *site;
    const char *path;
    const char *name;
    int fd;
} loader;

__attribute__((noreturn))
static void ld_fail(loader *L, goat_str *m)
{
    goat_fail(L->site, "%s", sb_str(m));
}

__attribute__((noreturn))
static void ld_os_fail(loader *L, int code)
{
    goat_str m = {0};
    os_message(&m, "load", L->path, L->name, code, NULL);
    ld_fail(L, &m);
}

/* _read_exact: up to n bytes (fewer only at the end of the file) */
static size_t ld_read(loader *L, void *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(L->fd, (char *)buf + got, n - got);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            ld_os_fail(L, errno);
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return got;
}

static void shape_text(goat_str *s, int64_t rank, const int64_t *dims)
{
    for (int64_t i = 0; i < rank; i++) {
        if (i)
            sb_c(s, 'x');
        sb_f(s, "%lld", (long long)dims[i]);
    }
}

/* a shape as format_type writes it: "scalar" or "tensor[2x3]" */
static void type_text(goat_str *s, int64_t rank, const int64_t *dims)
{
    if (rank == 0) {
        sb(s, "scalar");
        return;
    }
    sb(s, "tensor[");
    shape_text(s, rank, dims);
    sb(s, "]");
}

/* float16 bits -> float64 bits, as NumPy converts them (a NaN keeps its payload) */
static uint64_t half_to_double_bits(uint16_t h)
{
    uint16_t h_exp = h & 0x7c00u, h_sig;
    uint64_t d_sgn = ((uint64_t)h & 0x8000u) << 48;
    switch (h_exp) {
    case 0x0000u:
        h_sig = h & 0x03ffu;
        if (h_sig == 0)
            return d_sgn;
        h_sig <<= 1;
        while ((h_sig & 0x0400u) == 0) {
            h_sig <<= 1;
            h_exp++;
        }
        return d_sgn + (((uint64_t)(1023 - 15 - h_exp)) << 52)
               + (((uint64_t)(h_sig & 0x03ffu)) << 42);
    case 0x7c00u:
        return d_sgn + 0x7ff0000000000000ULL + (((uint64_t)(h & 0x03ffu)) << 42);
    default:
        return d_sgn + (((uint64_t)(h & 0x7fffu) + 0xfc000u) << 42);
    }
}

static uint64_t load_uint(const unsigned char *p, int size, int little)
{
    uint64_t x = 0;
    for (int i = 0; i < size; i++)
        x |= (uint64_t)p[little ? i : size - 1 - i] << (8 * i);
    return x;
}

/* The header: (shape, fortran_order, dtype), or a message. */
static void read_header(loader *L, int major, off_t file_size, pyval **shape_out,
                        int *fortran_out, dtype **dtype_out)
{
    goat_str m = {0};
    int size = major == 1 ? 2 : 4;
    unsigned char raw[4];
    if (ld_read(L, raw, (size_t)size) < (size_t)size)
        goto truncated;
    uint64_t length = load_uint(raw, size, 1);
    off_t here = 8 + size;
    if ((int64_t)length > (int64_t)file_size - (int64_t)here)
        goto truncated;
    if (length > MAX_HEADER_SIZE) {
        sb_f(&m, "%s has a header of %llu bytes, more than the %d goat reads (a numeric "
             "array's header takes a few hundred)", L->name, (unsigned long long)length,
             MAX_HEADER_SIZE);
        ld_fail(L, &m);
    }
    unsigned char *text = a_alloc(&L->a, (size_t)length + 1);
    if (ld_read(L, text, (size_t)length) < (size_t)length)
        goto truncated;
    /* decode: latin-1 (1.0, 2.0) or UTF-8 (3.0) */
    uint32_t *cp = a_alloc(&L->a, ((size_t)length + 1) * sizeof *cp);
    long nc;
    goat_str damaged = {0};
    sb_f(&damaged, "%s has a damaged header: ", L->name);
    if (major == 3) {
        nc = utf8_decode(text, (size_t)length, cp, 0);
        if (nc < 0) {
            sb(&damaged, "it is not UTF-8 text");
            ld_fail(L, &damaged);
        }
    } else {
        for (size_t i = 0; i < length; i++)
            cp[i] = text[i];
        nc = (long)length;
    }
    pyval *header = literal_eval(&L->a, cp, (size_t)nc);
    if (header == NULL) {
        size_t b = 0, e = (size_t)nc;
        while (b < e && py_isspace(cp[b]))
            b++;
        while (e > b && py_isspace(cp[e - 1]))
            e--;
        goat_str r = {0};
        repr_str(&r, cp + b, e - b);
        short_text(&damaged, sb_str(&r));
        sb_free(&r);
        sb(&damaged, " is not a Python dict literal");
        ld_fail(L, &damaged);
    }
    if (header->t != PV_DICT) {
        pv_short(&damaged, header);
        sb(&damaged, " is not a Python dict literal");
        ld_fail(L, &damaged);
    }
    static const char *const KEYS[] = {"descr", "fortran_order", "shape"};
    pyval *found[3] = {NULL, NULL, NULL};
    for (size_t i = 0; i < header->len; i++)
        for (int k = 0; k < 3; k++)
            if (pv_is_str(header->items[2 * i], KEYS[k]))
                found[k] = header->items[2 * i + 1];
    for (int k = 0; k < 3; k++) {
        if (found[k] == NULL) {
            sb_f(&damaged, "it has no '%s' entry", KEYS[k]);
            ld_fail(L, &damaged);
        }
    }
    for (size_t i = 0; i < header->len; i++) {
        pyval *key = header->items[2 * i];
        if (!pv_is_str(key, "descr") && !pv_is_str(key, "fortran_order")
                && !pv_is_str(key, "shape")) {
            sb(&damaged, "it has an unexpected entry ");
            pv_short(&damaged, key);
            ld_fail(L, &damaged);
        }
    }
    pyval *shape = found[2];
    int good = shape->t == PV_TUPLE;
    for (size_t i = 0; good && i < shape->len; i++)
        if (shape->items[i]->t != PV_INT || shape->items[i]->neg)
            good = 0;
    if (!good) {
        sb(&damaged, "its shape ");
        pv_short(&damaged, shape);
        sb(&damaged, " is not a tuple of sizes");
        ld_fail(L, &damaged);
    }
    /* cells * 8 > 2**63 - 1, counting an empty dimension as 1 */
    const uint64_t LIMIT = (uint64_t)1 << 60;
    uint64_t cells = 1;
    for (size_t i = 0; i < shape->len; i++) {
        int64_t d;
        if (!pv_as_i64(shape->items[i], &d) || (uint64_t)d >= LIMIT) {
            cells = LIMIT;
            break;
        }
        if (d < 1)
            d = 1;
        if (cells > (LIMIT - 1) / (uint64_t)d + 1 || cells * (uint64_t)d >= LIMIT) {
            cells = LIMIT;
            break;
        }
        cells *= (uint64_t)d;
    }
    if (cells >= LIMIT) {
        sb(&damaged, "its shape ");
        pv_short(&damaged, shape);
        sb(&damaged, " is too large for any machine to address");
        ld_fail(L, &damaged);
    }
    pyval *fortran = found[1];
    if (fortran->t != PV_BOOL) {
        sb(&damaged, "its fortran_order ");
        pv_short(&damaged, fortran);
        sb(&damaged, " is not True or False");
        ld_fail(L, &damaged);
    }
    dtype *dt = descr_to_dtype(&L->a, found[0]);
    if (dt == NULL) {
        sb(&damaged, "its descr ");
        pv_short(&damaged, found[0]);
        sb(&damaged, " is not a NumPy dtype");
        ld_fail(L, &damaged);
    }
    sb_free(&damaged);
    *shape_out = shape;
    *fortran_out = fortran->b;
    *dtype_out = dt;
    return;
truncated:
    sb_f(&m, "%s is truncated: it ends inside its header", L->name);
    ld_fail(L, &m);
}

/* _dtype_problem: 1 and the message for a refused element type */
static int dtype_problem(goat_str *m, const dtype *d, const char *name)
{
    if (d->hasobject) {
        sb_f(m, "%s holds Python objects (a pickle); goat reads only numeric arrays, never "
             "pickles", name);
        return 1;
    }
    char k = d->kind;
    if (k == 'b' || k == 'i' || k == 'u' || (k == 'f' && d->size <= 8))
        return 0;
    goat_str what = {0};
    dt_str(&what, d);
    sb_f(m, "%s holds ", name);
    if (k == 'f')
        sb_f(m, "floats of %lld bits (%s), wider than float64", (long long)d->size * 8,
             sb_str(&what));
    else if (k == 'c')
        sb_f(m, "complex numbers (%s)", sb_str(&what));
    else if (k == 'U')
        sb_f(m, "Unicode strings (%s)", sb_str(&what));
    else if (k == 'S')
        sb_f(m, "byte strings (%s)", sb_str(&what));
    else if (k == 'M')
        sb_f(m, "dates and times (%s)", sb_str(&what));
    else if (k == 'm')
        sb_f(m, "time spans (%s)", sb_str(&what));
    else if (d->has_fields) {
        sb(m, "records with fields ");
        for (size_t i = 0; i < d->nfields; i++) {
            if (i)
                sb(m, ", ");
            const pyval *nm = d->fields[i].name;
            for (size_t j = 0; j < nm->n; j++)
                sb_cp(m, nm->s[j]);
        }
        sb_f(m, " (structured dtype %s)", sb_str(&what));
    } else if (d->base)
        sb_f(m, "sub-arrays (dtype %s)", sb_str(&what));
    else if (k == 'V')
        sb_f(m, "raw bytes (void dtype %s)", sb_str(&what));
    else
        sb_f(m, "elements of type %s", sb_str(&what));
    sb(m, "; goat reads float16, float32 or float64, signed or unsigned integers, or bool");
    sb_free(&what);
    return 1;
}

/* The data: exactly nbytes, converted into out (row-major), checked as _check_exact. */
static void read_data(loader *L, double *out, const dtype *dt, int fortran, size_t rank,
                      const int64_t *shape, int64_t count, int64_t nbytes)
{
    const int size = (int)dt->size;
    const char k = dt->kind;
    const int little = (dt->bo == '=' || dt->bo == '|') ? native_order() == '<' : dt->bo == '<';
    /* Fortran order: the file's i-th element is at row-major position pos, kept with an odometer */
    int64_t *idx = a_alloc(&L->a, (rank + 1) * sizeof(int64_t));
    int64_t *stride = a_alloc(&L->a, (rank + 1) * sizeof(int64_t));
    int64_t st = 1;
    for (size_t i = rank; i-- > 0;) {
        stride[i] = st;
        st *= shape[i];
    }
    if (k == 'f' && size == 8 && !fortran && little == (native_order() == '<')) {
        /* float64 in this machine's order, row-major: the bytes are the values */
        int64_t got = (int64_t)ld_read(L, out, (size_t)nbytes);
        if (got < nbytes) {                /* the file shrank while it was read */
            goat_str m = {0};
            sb_f(&m, "%s is truncated: its header promises %lld bytes of data, the file "
                 "holds %lld", L->name, (long long)nbytes, (long long)got);
            ld_fail(L, &m);
        }
        return;
    }
    int64_t pos = 0;
    int64_t bad_pos = -1;            /* the first inexact integer, in row-major order */
    uint64_t bad_bits = 0;
    const size_t CHUNK = 1 << 20;
    unsigned char *buf = a_alloc(&L->a, CHUNK + 8);
    int64_t done = 0;                /* elements converted */
    int64_t got = 0;                 /* bytes read */
    size_t carry = 0;                /* bytes of a partial element kept from the last chunk */
    while (got < nbytes) {
        size_t want = CHUNK;
        if ((int64_t)want > nbytes - got)
            want = (size_t)(nbytes - got);
        size_t r = ld_read(L, buf + carry, want);
        if (r == 0)
            break;
        got += (int64_t)r;
        size_t avail = carry + r;
        size_t n = avail / (size_t)size;
        for (size_t e = 0; e < n; e++) {
            const unsigned char *p = buf + e * (size_t)size;
            uint64_t bits = load_uint(p, size, little);
            double v;
            int64_t at = fortran ? pos : done;
            switch (k) {
            case 'b':
                v = bits != 0 ? 1.0 : 0.0;
                break;
            case 'f':
                if (size == 2) {
                    uint64_t db = half_to_double_bits((uint16_t)bits);
                    memcpy(&v, &db, 8);
                } else if (size == 4) {
                    uint32_t fb = (uint32_t)bits;
                    float f;
                    memcpy(&f, &fb, 4);
                    v = (double)f;
                } else {
                    memcpy(&v, &bits, 8);
                }
                break;
            case 'i': {
                int64_t x;
                if (size == 8) {
                    x = (int64_t)bits;
                } else {
                    int shift = 64 - 8 * size;
                    x = (int64_t)(bits << shift) >> shift;
                }
                v = (double)x;
                if (size == 8 && (x > ((int64_t)1 << 53) || x < -((int64_t)1 << 53))) {
                    if (v >= 9223372036854775808.0 || (int64_t)v != x) {
                        if (bad_pos < 0 || at < bad_pos) {
                            bad_pos = at;
                            bad_bits = bits;
                        }
                    }
                }
                break;
            }
            default: /* 'u' */
                v = (double)bits;
                if (size == 8 && bits > ((uint64_t)1 << 53)) {
                    if (v >= 18446744073709551616.0 || (uint64_t)v != bits) {
                        if (bad_pos < 0 || at < bad_pos) {
                            bad_pos = at;
                            bad_bits = bits;
                        }
                    }
                }
                break;
            }
            out[at] = v;
            done++;
            if (fortran) {
                /* the next element in column-major order */
                for (size_t d = 0; d < rank; d++) {
                    idx[d]++;
                    pos += stride[d];
                    if (idx[d] < shape[d])
                        break;
                    pos -= stride[d] * shape[d];
                    idx[d] = 0;
                }
            }
        }
        carry = avail - n * (size_t)size;
        if (carry)
            memmove(buf, buf + n * (size_t)size, carry);
    }
    if (got < nbytes) {                    /* the file shrank while it was read */
        goat_str m = {0};
        sb_f(&m, "%s is truncated: its header promises %lld bytes of data, the file holds %lld",
             L->name, (long long)nbytes, (long long)got);
        ld_fail(L, &m);
    }
    (void)count;
    if (bad_pos >= 0) {
        goat_str m = {0};
        char vtext[32], rtext[32];
        if (k == 'i') {
            int64_t x = (int64_t)bad_bits;
            double v = (double)x;
            snprintf(vtext, sizeof vtext, "%lld", (long long)x);
            if (v >= 9223372036854775808.0)
                snprintf(rtext, sizeof rtext, "9223372036854775808");
            else
                snprintf(rtext, sizeof rtext, "%lld", (long long)(int64_t)v);
        } else {
            double v = (double)bad_bits;
            snprintf(vtext, sizeof vtext, "%llu", (unsigned long long)bad_bits);
            if (v >= 18446744073709551616.0)
                snprintf(rtext, sizeof rtext, "18446744073709551616");
            else
                snprintf(rtext, sizeof rtext, "%llu", (unsigned long long)(uint64_t)v);
        }
        sb_f(&m, "%s holds the integer %s, which float64 cannot hold exactly (it would round "
             "to %s); goat's values are float64", L->name, vtext, rtext);
        ld_fail(L, &m);
    }
}

static void what_it_is(goat_str *m, const unsigned char *start, size_t n)
{
    if (n == 0)
        sb(m, ": it is empty");
    else if (n >= 4 && (memcmp(start, "PK\x03\x04", 4) == 0 || memcmp(start, "PK\x05\x06", 4) == 0))
        sb(m, " (it is a zip archive, perhaps an .npz file: save each array on its own with "
              "numpy.save)");
    else if (start[0] == 0x80)
        sb(m, " (it looks like a Python pickle, which goat never reads)");
    else
        sb(m, " (it does not start with the .npy magic string \\x93NUMPY)");
}

void goat_load_npy(double *out, const char *path, const char *shown, int64_t rank,
                   const int64_t *dims, const char *site)
{
    loader L = {{0}, site, path, shown ? shown : path, -1};
    goat_str m = {0};
    struct stat st;
    if (stat(path, &st) != 0)
        ld_os_fail(&L, errno);
    if (not_regular(&m, &st, L.name, "load"))
        ld_fail(&L, &m);
    int fd;
    do {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        ld_os_fail(&L, errno);
    L.fd = fd;
    if (fstat(fd, &st) != 0)
        ld_os_fail(&L, errno);
    if (not_regular(&m, &st, L.name, "load"))
        ld_fail(&L, &m);
    off_t file_size = st.st_size;

    /* the magic string and the version */
    static const unsigned char PREFIX[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
    unsigned char start[8];
    size_t n = ld_read(&L, start, 8);
    size_t cmp = n < 6 ? n : 6;
    if (memcmp(start, PREFIX, cmp) != 0 || n < 6) {
        if (n > 0 && n < 6 && memcmp(start, PREFIX, n) == 0) {
            sb_f(&m, "%s is truncated: it ends inside the .npy magic string", L.name);
            ld_fail(&L, &m);
        }
        sb_f(&m, "%s is not a NumPy .npy file", L.name);
        what_it_is(&m, start, n);
        ld_fail(&L, &m);
    }
    if (n < 8) {
        sb_f(&m, "%s is truncated: it ends inside the .npy magic string", L.name);
        ld_fail(&L, &m);
    }
    int major = start[6], minor = start[7];
    if (!((major == 1 || major == 2 || major == 3) && minor == 0)) {
        sb_f(&m, "%s is a .npy file of format version %d.%d, which goat cannot read (it reads "
             "versions 1.0, 2.0 and 3.0)", L.name, major, minor);
        ld_fail(&L, &m);
    }

    pyval *shape;
    int fortran;
    dtype *dt;
    read_header(&L, major, file_size, &shape, &fortran, &dt);

    if (dtype_problem(&m, dt, L.name))
        ld_fail(&L, &m);

    /* the declared shape */
    size_t frank = shape->len;
    int64_t *fdims = a_alloc(&L.a, (frank + 1) * sizeof(int64_t));
    for (size_t i = 0; i < frank; i++)
        pv_as_i64(shape->items[i], &fdims[i]);      /* all fit: checked above */
    int fits = (int64_t)frank == rank;
    for (size_t i = 0; fits && i < frank; i++)
        if (fdims[i] != dims[i])
            fits = 0;
    if (!fits) {
        sb_f(&m, "%s holds ", L.name);
        if (frank == 0) {
            sb(&m, "a scalar");
        } else {
            sb(&m, "an array of shape ");
            shape_text(&m, (int64_t)frank, fdims);
        }
        sb(&m, ", but ");
        if (rank == 0) {
            sb(&m, "a scalar");
        } else {
            sb(&m, "tensor[");
            shape_text(&m, rank, dims);
            sb(&m, "]");
        }
        sb(&m, " was declared");
        int64_t held_n = 1, want_n = 1;
        for (size_t i = 0; i < frank; i++)
            held_n *= fdims[i];
        for (int64_t i = 0; i < rank; i++)
            want_n *= dims[i];
        if (frank == 2 && rank == 2 && fdims[0] == dims[1] && fdims[1] == dims[0]) {
            /* npyio.py's hint: the transposed shape */
            sb(&m, "; it holds the transposed shape: load it as ");
            type_text(&m, (int64_t)frank, fdims);
            sb(&m, " and transpose it (transpose(VALUE))");
        } else if (held_n == want_n) {  /* npyio.py's hint: the same numbers, another shape */
            sb(&m, "; it holds as many numbers: load it as ");
            type_text(&m, (int64_t)frank, fdims);
            sb(&m, " and reshape it (reshape(VALUE, ");
            type_text(&m, rank, dims);
            sb(&m, "))");
        }
        ld_fail(&L, &m);
    }

    /* exactly the bytes the header promises */
    int64_t count = 1;
    for (size_t i = 0; i < frank; i++)
        count *= fdims[i];
    int64_t nbytes = count * dt->size;
    off_t data_start = lseek(fd, 0, SEEK_CUR);
    int64_t held = (int64_t)file_size - (int64_t)data_start;
    if (held < nbytes) {
        sb_f(&m, "%s is truncated: its header promises %lld bytes of data, the file holds %lld",
             L.name, (long long)nbytes, (long long)held);
        ld_fail(&L, &m);
    }
    if (held > nbytes) {
        sb_f(&m, "%s has %lld bytes after its data: its header promises %lld bytes of data, "
             "the file holds %lld (a .npy file holds one array, with nothing after it)",
             L.name, (long long)(held - nbytes), (long long)nbytes, (long long)held);
        ld_fail(&L, &m);
    }
    read_data(&L, out, dt, fortran && frank > 1, frank, fdims, count, nbytes);
    close(fd);
    sb_free(&m);
    a_free(&L.a);
}

/* ---------------------------------------------------------------------------- saving */

/* The process's umask, read without changing it where the system allows (as _umask). */
static mode_t current_umask(void)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (f != NULL) {
        char line[256];
        while (fgets(line, sizeof line, f)) {
            if (strncmp(line, "Umask:", 6) == 0) {
                char *end;
                unsigned long v = strtoul(line + 6, &end, 8);
                if (end != line + 6) {
                    fclose(f);
                    return (mode_t)v;
                }
            }
        }
        fclose(f);
    }
    mode_t m = umask(022);
    umask(m);
    return m;
}

/* NumPy's header for a C-ordered '<f8' array of this shape (what write_array writes). */
static void npy_header(goat_str *h, int64_t rank, const int64_t *dims)
{
    goat_str d = {0};
    sb(&d, "{'descr': '<f8', 'fortran_order': False, 'shape': (");
    for (int64_t i = 0; i < rank; i++) {
        if (i)
            sb(&d, ", ");
        sb_f(&d, "%lld", (long long)dims[i]);
    }
    if (rank == 1)
        sb_c(&d, ',');
    sb(&d, "), }");
    if (rank > 0) {
        char first[32];
        int len = snprintf(first, sizeof first, "%lld", (long long)dims[0]);
        for (int i = len; i < 21; i++)          /* GROWTH_AXIS_MAX_DIGITS */
            sb_c(&d, ' ');
    }
    size_t hlen = d.len + 1;
    int version = 1;
    size_t pre = 10;                            /* magic, version, 2-byte length */
    if (hlen + (64 - ((10 + hlen) % 64)) > 65535) {
        version = 2;                            /* a 4-byte length */
        pre = 12;
    }
    size_t padlen = 64 - ((pre + hlen) % 64);
    size_t total = hlen + padlen;
    unsigned char magic[12] = {0x93, 'N', 'U', 'M', 'P', 'Y', (unsigned char)version, 0};
    if (version == 1) {
        magic[8] = (unsigned char)(total & 0xFF);
        magic[9] = (unsigned char)(total >> 8);
    } else {
        for (int i = 0; i < 4; i++)
            magic[8 + i] = (unsigned char)(total >> (8 * i));
    }
    sb_n(h, (const char *)magic, pre);
    sb_n(h, sb_str(&d), d.len);
    for (size_t i = 0; i < padlen; i++)
        sb_c(h, ' ');
    sb_c(h, '\n');
    sb_free(&d);
}

/* write(2) until done: the bytes written, and errno in *err where it stopped short */
static size_t write_all(int fd, const void *buf, size_t n, int *err)
{
    const char *p = buf;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(fd, p + done, n - done);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            *err = errno ? errno : EIO;
            break;
        }
        done += (size_t)w;
    }
    return done;
}

static uint64_t random_bits(void)
{
    static uint64_t state;
    if (state == 0) {
        int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (read(fd, &state, sizeof state) != (ssize_t)sizeof state)
                state = 0;
            close(fd);
        }
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        state ^= (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)ts.tv_sec
                 ^ ((uint64_t)getpid() << 32);
        if (state == 0)
            state = 0x853C49E6748FEA9BULL;
    }
    /* xorshift64* */
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1DULL;
}

typedef struct {
    const char *site;
    const char *path;
    const char *name;
} saver;

__attribute__((noreturn))
static void sv_os_fail(const saver *S, int code, const char *text)
{
    goat_str m = {0};
    os_message(&m, "save", S->path, S->name, code, text);
    goat_fail(S->site, "%s", sb_str(&m));
}

void goat_save_npy(const char *path, const char *shown, const double *data, int64_t rank,
                   const int64_t *dims, const char *site)
{
    saver S = {site, path, shown ? shown : path};
    goat_str m = {0};
    char *target;
    if (py_islink(path)) {
        target = py_realpath(path);
        if (target == NULL)
            sv_os_fail(&S, errno, NULL);
    } else {
        target = xstrdup(path);
    }
    if (py_isdir(target)) {
        sb_f(&m, "cannot save %s: it is a directory", S.name);
        goat_fail(site, "%s", sb_str(&m));
    }
    char *directory = py_dirname(target);
    if (!directory[0]) {
        free(directory);
        directory = xstrdup(".");
    }
    if (!py_isdir(directory) && strcmp(target, path) != 0 && !py_exists(directory)) {
        /* a link to a file in a folder that is not there: name the folder it needs */
        char link[PATH_MAX + 1];
        ssize_t len = readlink(path, link, PATH_MAX);
        link[len < 0 ? 0 : len] = '\0';
        goat_str r = {0}, l = {0};
        repr_path(&r, directory);
        repr_path(&l, link);
        sb_f(&m, "cannot save %s: it links to %s, in a directory that does not exist (%s)",
             S.name, sb_str(&l), sb_str(&r));
        goat_fail(site, "%s", sb_str(&m));
    }
    if (!py_isdir(directory))
        sv_os_fail(&S, py_exists(directory) ? ENOTDIR : ENOENT, NULL);
    mode_t mode;
    struct stat st;
    if (stat(target, &st) == 0) {
        if (not_regular(&m, &st, S.name, "save"))
            goat_fail(site, "%s", sb_str(&m));
        mode = st.st_mode & 07777;
        if (access(target, W_OK) != 0)          /* a read-only file stays protected */
            sv_os_fail(&S, EACCES, NULL);
    } else if (errno == ENOENT) {
        mode = 0666 & ~current_umask();
    } else {
        sv_os_fail(&S, errno, NULL);
    }

    /* tempfile.mkstemp(dir=directory, prefix="." + short + ".", suffix=".tmp"), short the
     * basename's first 200 bytes less a cut UTF-8 sequence (so the name fits in 255 bytes) */
    const char *leafname = py_basename(target);
    size_t cut = strlen(leafname);
    if (cut > 200) {
        cut = 200;
        while (cut > 0 && ((unsigned char)leafname[cut] & 0xC0) == 0x80)
            cut--;              /* back to the start of the sequence cut */
    }
    static const char CHARS[] = "abcdefghijklmnopqrstuvwxyz0123456789_";
    char *absdir = py_abspath(directory);
    if (absdir == NULL)
        sv_os_fail(&S, errno, NULL);
    goat_str tmp = {0};
    int fd = -1;
    for (long tries = 0; tries < 238328; tries++) {      /* os.TMP_MAX */
        tmp.len = 0;
        char base[9];
        for (int i = 0; i < 8; i++)
            base[i] = CHARS[random_bits() % (sizeof CHARS - 1)];
        base[8] = '\0';
        goat_str leaf = {0};
        sb_f(&leaf, ".%.*s.%s.tmp", (int)cut, leafname, base);
        char *full = py_join(absdir, sb_str(&leaf));
        sb_free(&leaf);
        sb(&tmp, full);
        free(full);
        fd = open(sb_str(&tmp), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd >= 0)
            goat_pending_file(sb_str(&tmp));
        if (fd >= 0 || errno != EEXIST)
            break;
    }
    if (fd < 0) {
        if (errno == EEXIST)
            sv_os_fail(&S, EEXIST, "No usable temporary file name found");
        if (errno == ENOENT && py_isdir(directory)) {   /* a folder of /proc, say */
            goat_str r = {0};
            repr_path(&r, directory);
            sb_f(&m, "cannot save %s: no new file can be made in the directory %s", S.name,
                 sb_str(&r));
            goat_fail(site, "%s", sb_str(&m));
        }
        sv_os_fail(&S, errno, NULL);
    }
    int err = 0;

    /* the header (save_npy's buffered writer: an OSError with the errno) */
    goat_str h = {0};
    npy_header(&h, rank, dims);
    write_all(fd, h.data, h.len, &err);
    sb_free(&h);
    /* the data, little-endian, by the file's own writes (as save_npy writes it: a failure is
     * an OSError with its errno, ENOSPC "the disk is full"); a large array's space is
     * reserved first */
    int64_t count = 1;
    for (int64_t i = 0; i < rank; i++)
        count *= dims[i];
#if defined(__linux__)
    if (!err && count * 8 >= 16 * 1024 * 1024) {
        off_t at = lseek(fd, 0, SEEK_CUR);
        if (fallocate(fd, 1 /* FALLOC_FL_KEEP_SIZE */, at, (off_t)(count * 8)) != 0
                && errno == ENOSPC)
            err = ENOSPC;
    }
#endif
    if (!err) {
        unsigned char buf[1 << 16];
        size_t per = sizeof buf / 8;
        for (int64_t i = 0; i < count && !err;) {
            size_t n = (size_t)(count - i) < per ? (size_t)(count - i) : per;
            for (size_t k = 0; k < n; k++) {
                uint64_t bits;
                memcpy(&bits, &data[i + (int64_t)k], 8);
                for (int b = 0; b < 8; b++)
                    buf[8 * k + (size_t)b] = (unsigned char)(bits >> (8 * b));
            }
            write_all(fd, buf, 8 * n, &err);
            i += (int64_t)n;
        }
    }
    if (!err && fsync(fd) != 0)
        err = errno;
    if (close(fd) != 0 && !err && errno != EINTR)
        err = errno;
    if (!err && chmod(sb_str(&tmp), mode) != 0)
        err = errno;
    if (!err && rename(sb_str(&tmp), target) != 0)
        err = errno;
    if (err)
        unlink(sb_str(&tmp));
    goat_pending_file(NULL);
    if (err)
        sv_os_fail(&S, err, NULL);
    /* make the rename durable (best effort) */
    int dfd = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    sb_free(&tmp);
    sb_free(&m);
    free(absdir);
    free(directory);
    free(target);
}

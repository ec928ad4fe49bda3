/* Numbers in format strings: goat.interp.fmt.format_value in C (see fmt.h).
 *
 * format_value is Python's format(x, spec) on a float (or, for the integer types, on int(x)),
 * so this file follows CPython's own code (Python/formatter_unicode.c and Python/pystrtod.c):
 *
 *   parse_spec          parse_internal_render_format_spec
 *   float_body          format_float_internal + PyOS_double_to_string / format_float_short
 *   int_body            format_long_internal (the digits of int(x) in base 2, 8, 10 or 16)
 *   layout / group      calc_number_widths + fill_number / _PyUnicode_InsertThousandsGrouping
 *
 * The digits themselves come from glibc's printf, which rounds exactly (round-half-even on the
 * exact binary value), as Python's dtoa does: "%.*e" gives the significant digits of the
 * modes 'e' and 'g', "%.*f" is Python's 'f' outright, and "%.0f" is int(x) in decimal.
 */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"

#define MAX_DIGITS 1000   /* goat.interp.fmt.MAX_DIGITS: the largest width or precision */

typedef struct {
    const char *fill;     /* the fill character, UTF-8 */
    size_t fill_len;
    int fill_zero;        /* the fill is '0' */
    char align;           /* '<' '>' '=' '^' */
    char sign;            /* 0 (as '-'), '+', '-', ' ' */
    int no_neg_0;         /* z */
    int alt;              /* # */
    long width;           /* -1: none */
    char grouping;        /* 0, ',' or '_' */
    long precision;       /* -1: none */
    char type;            /* 0: none */
} spec_t;

/* ------------------------------------------------------------------------------- utilities */

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        fputs("goat: out of memory formatting text\n", stderr);
        exit(1);
    }
    return p;
}

/* snprintf into a fresh buffer of the right size (free it). */
__attribute__((format(printf, 1, 2)))
static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    char *buf = xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(buf, (size_t)n + 1, fmt, ap);
    va_end(ap);
    buf[n] = '\0';
    return buf;
}

static void append(goat_str *s, const char *text)
{
    goat_str_append(s, text, strlen(text));
}

static void append_fill(goat_str *s, const spec_t *sp, long n)
{
    for (long i = 0; i < n; i++)
        goat_str_append(s, sp->fill, sp->fill_len);
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int is_align(char c)
{
    return c == '<' || c == '>' || c == '=' || c == '^';
}

/* The length in bytes of the UTF-8 character that starts at p (1 for a stray byte). */
static size_t utf8_len(const char *p)
{
    unsigned char c = (unsigned char)p[0];
    size_t n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
             : (c & 0xF8) == 0xF0 ? 4 : 1;
    for (size_t i = 1; i < n; i++)
        if (((unsigned char)p[i] & 0xC0) != 0x80)
            return 1;
    return n;
}

/* ----------------------------------------------------------------------------- the spec */

/* Read a run of digits at *pos: 1 and the value (capped), or 0 when there is none. */
static int read_int(const char **pos, long *out)
{
    const char *p = *pos;
    long v = 0;
    if (!is_digit(*p))
        return 0;
    while (is_digit(*p)) {
        if (v <= 100000000L)
            v = v * 10 + (*p - '0');
        p++;
    }
    *pos = p;
    *out = v;
    return 1;
}

/* Parse as CPython does; 0 for a spec goat's check_spec refuses. */
static int parse_spec(const char *spec, spec_t *sp)
{
    const char *p = spec;
    int fill_specified = 0, align_specified = 0;
    sp->fill = " ";
    sp->fill_len = 1;
    sp->fill_zero = 0;
    sp->align = '>';
    sp->sign = 0;
    sp->no_neg_0 = 0;
    sp->alt = 0;
    sp->width = -1;
    sp->grouping = 0;
    sp->precision = -1;
    sp->type = 0;

    size_t n = utf8_len(p);
    if (*p && is_align(p[n])) {
        sp->fill = p;
        sp->fill_len = n;
        sp->fill_zero = (n == 1 && *p == '0');
        sp->align = p[n];
        fill_specified = align_specified = 1;
        p += n + 1;
    } else if (is_align(*p)) {
        sp->align = *p++;
        align_specified = 1;
    }
    if (*p == '+' || *p == '-' || *p == ' ')
        sp->sign = *p++;
    if (*p == 'z') {
        sp->no_neg_0 = 1;
        p++;
    }
    if (*p == '#') {
        sp->alt = 1;
        p++;
    }
    if (!fill_specified && *p == '0') {
        sp->fill = "0";
        sp->fill_zero = 1;
        if (!align_specified)
            sp->align = '=';
        p++;
    }
    read_int(&p, &sp->width);
    if (*p == ',' || *p == '_')
        sp->grouping = *p++;
    if (*p == ',' || *p == '_')
        return 0;                           /* both , and _ */
    if (*p == '.') {
        p++;
        if (!read_int(&p, &sp->precision))
            return 0;                       /* a '.' without digits */
    }
    if (*p) {
        sp->type = *p++;
        if (*p)
            return 0;                       /* more than one character left */
    }
    if (sp->width > MAX_DIGITS || sp->precision > MAX_DIGITS)
        return 0;
    switch (sp->type) {
    case 0: case 'e': case 'E': case 'f': case 'F': case 'g': case 'G': case '%':
        return 1;
    case 'n':
        return sp->grouping == 0;
    case 'd':
        return sp->precision < 0 && !sp->no_neg_0;
    case 'b': case 'o': case 'x': case 'X':
        return sp->precision < 0 && !sp->no_neg_0 && sp->grouping != ',';
    default:
        return 0;
    }
}

/* --------------------------------------------------------------------------- the layout */

/* The digits d[0..n) grouped as _PyUnicode_InsertThousandsGrouping groups them: `group`
 * digits between separators (0: no grouping), widened with zeros to at least min_width
 * characters.  Returns a fresh string. */
static char *group_digits(const char *d, long n, long min_width, int group, char sep)
{
    if (min_width < 0)
        min_width = 0;
    long cap = (n > min_width ? n : min_width) * 2 + 8;
    char *buf = xmalloc((size_t)cap + 1);
    long at = cap;                       /* written backwards: buf[at..cap) */
    long remaining = n, dpos = n;
    int use_sep = 0;
    for (;;) {
        long len;
        if (group > 0) {
            long most = remaining > min_width ? remaining : min_width;
            if (most < 1)
                most = 1;
            len = group < most ? group : most;
        } else {
            len = remaining > min_width ? remaining : min_width;
            if (len < 1)
                len = 1;
        }
        long zeros = len - remaining > 0 ? len - remaining : 0;
        long chars = remaining < len ? remaining : len;
        if (chars < 0)
            chars = 0;
        if (use_sep)
            buf[--at] = sep;
        at -= chars;
        dpos -= chars;
        memcpy(buf + at, d + dpos, (size_t)chars);
        at -= zeros;
        memset(buf + at, '0', (size_t)zeros);
        if (group <= 0)
            break;
        use_sep = 1;
        remaining -= chars;
        min_width -= len;
        if (remaining <= 0 && min_width <= 0)
            break;
        min_width -= 1;                  /* the separator */
    }
    long len = cap - at;
    memmove(buf, buf + at, (size_t)len);
    buf[len] = '\0';
    return buf;
}

/* Lay out a number as calc_number_widths and fill_number do: `negative`, the alternate form's
 * prefix (ints: "0x", ...) and `num`, the text after the sign: for an int, its digits; for a
 * float, leading digits, then an optional '.', then the remainder (fraction digits, exponent,
 * '%', or all of "inf"). */
static void layout(goat_str *s, const spec_t *sp, int negative, const char *prefix,
                   const char *num, int is_int, int group)
{
    long n_prefix = (long)strlen(prefix);
    long n_digits = 0;
    if (is_int)                          /* all of it, hexadecimal letters included */
        n_digits = (long)strlen(num);
    else
        while (is_digit(num[n_digits]))
            n_digits++;
    int has_decimal = num[n_digits] == '.';
    const char *rest = num + n_digits + (has_decimal ? 1 : 0);
    long n_rest = (long)strlen(rest);

    char sign = 0;
    if (sp->sign == '+')
        sign = negative ? '-' : '+';
    else if (sp->sign == ' ')
        sign = negative ? '-' : ' ';
    else if (negative)
        sign = '-';
    long n_other = (sign ? 1 : 0) + n_prefix + (has_decimal ? 1 : 0) + n_rest;
    long min_width = sp->fill_zero && sp->align == '=' ? sp->width - n_other : 0;

    char *grouped;
    if (n_digits == 0) {
        grouped = xmalloc(1);
        grouped[0] = '\0';
    } else {
        grouped = group_digits(num, n_digits, min_width, sp->grouping ? group : 0,
                               sp->grouping);
    }
    long n_grouped = (long)strlen(grouped);
    long padding = sp->width - (n_other + n_grouped);
    long lpad = 0, spad = 0, rpad = 0;
    if (padding > 0) {
        switch (sp->align) {
        case '<': rpad = padding; break;
        case '^': lpad = padding / 2; rpad = padding - lpad; break;
        case '=': spad = padding; break;
        default:  lpad = padding; break;
        }
    }
    append_fill(s, sp, lpad);
    if (sign)
        goat_str_append(s, &sign, 1);
    append(s, prefix);
    append_fill(s, sp, spad);
    append(s, grouped);
    if (has_decimal)
        append(s, ".");
    append(s, rest);
    append_fill(s, sp, rpad);
    free(grouped);
}

/* --------------------------------------------------------------------------------- floats */

/* The significant digits of |x| rounded to `ndigits` (>= 1) as dtoa's mode 2 returns them:
 * trailing zeros stripped ("0" for zero), and the decimal point's position. */
static char *sig_digits(double x, int ndigits, long *decpt)
{
    char *e = xprintf("%.*e", ndigits - 1, fabs(x));
    char *d = xmalloc(strlen(e) + 1);
    long n = 0;
    const char *p = e;
    for (; *p && *p != 'e'; p++)
        if (is_digit(*p))
            d[n++] = *p;
    *decpt = strtol(p + 1, NULL, 10) + 1;
    while (n > 1 && d[n - 1] == '0')
        n--;
    d[n] = '\0';
    free(e);
    return d;
}

/* format_float_short, without the sign: the digits d (decpt places before the point) in the
 * layout of `code` ('e', 'g' or 'r'), as a fresh string. */
static char *float_short(const char *digits, long decpt, char code, int precision,
                         int add_dot_0, int alt, char e_char)
{
    long digits_len = (long)strlen(digits);
    long vdigits_end = digits_len, vdigits_start;
    int use_exp = 0;
    long exp = 0;
    switch (code) {
    case 'e':
        use_exp = 1;
        vdigits_end = precision;
        break;
    case 'g':
        if (decpt <= -4 || decpt > (add_dot_0 ? precision - 1 : precision))
            use_exp = 1;
        if (alt)
            vdigits_end = precision;
        break;
    default:                             /* 'r' */
        if (decpt <= -4 || decpt > 16)
            use_exp = 1;
        break;
    }
    if (use_exp) {
        exp = decpt - 1;
        decpt = 1;
    }
    vdigits_start = decpt <= 0 ? decpt - 1 : 0;
    if (!use_exp && add_dot_0)
        vdigits_end = vdigits_end > decpt ? vdigits_end : decpt + 1;
    else
        vdigits_end = vdigits_end > decpt ? vdigits_end : decpt;

    char *buf = xmalloc((size_t)(vdigits_end - vdigits_start) + 16);
    char *p = buf;
    if (decpt <= 0) {
        memset(p, '0', (size_t)(decpt - vdigits_start));
        p += decpt - vdigits_start;
        *p++ = '.';
        memset(p, '0', (size_t)(0 - decpt));
        p += 0 - decpt;
    } else {
        memset(p, '0', (size_t)(0 - vdigits_start));
        p += 0 - vdigits_start;
    }
    if (0 < decpt && decpt <= digits_len) {
        memcpy(p, digits, (size_t)decpt);
        p += decpt;
        *p++ = '.';
        memcpy(p, digits + decpt, (size_t)(digits_len - decpt));
        p += digits_len - decpt;
    } else {
        memcpy(p, digits, (size_t)digits_len);
        p += digits_len;
    }
    if (digits_len < decpt) {
        memset(p, '0', (size_t)(decpt - digits_len));
        p += decpt - digits_len;
        *p++ = '.';
        memset(p, '0', (size_t)(vdigits_end - decpt));
        p += vdigits_end - decpt;
    } else {
        memset(p, '0', (size_t)(vdigits_end - digits_len));
        p += vdigits_end - digits_len;
    }
    if (p[-1] == '.' && !alt)
        p--;
    if (use_exp)
        p += sprintf(p, "%c%+.02ld", e_char, exp);
    *p = '\0';
    return buf;
}

/* The shortest digits that read back as |x| (finite, nonzero), the closest such, as dtoa's
 * mode 0 returns them. */
static char *shortest_digits(double x, long *decpt)
{
    x = fabs(x);
    for (int p = 1; p < 17; p++) {
        char *d = sig_digits(x, p, decpt);
        char *text = xprintf("%se%ld", d, *decpt - (long)strlen(d));
        double back = strtod(text, NULL);
        free(text);
        if (back == x)
            return d;
        /* the closest p-digit decimal is out of x's rounding interval; at a power of two
         * (the interval is lopsided) its neighbour on x's other side may be in it */
        char *full = xmalloc((size_t)p + 2);
        long n = (long)strlen(d), dp = *decpt;
        memcpy(full, d, (size_t)n);
        memset(full + n, '0', (size_t)(p - n));
        full[p] = '\0';
        int i = p - 1;
        if (back < x) {
            while (i >= 0 && full[i] == '9')
                full[i--] = '0';
            if (i < 0) {                 /* 99..9 + 1 = 100..0 */
                full[0] = '1';
                dp++;
            } else {
                full[i]++;
            }
        } else {
            while (i >= 0 && full[i] == '0')
                full[i--] = '9';
            full[i]--;                   /* the first digit of a nonzero x is not 0 */
            if (full[0] == '0') {        /* 100..0 - 1 = 99..9, one place lower */
                memset(full, '9', (size_t)p);
                dp--;
            }
        }
        text = xprintf("%se%ld", full, dp - p);
        back = strtod(text, NULL);
        free(text);
        if (back == x) {
            free(d);
            long m = p;
            while (m > 1 && full[m - 1] == '0')
                m--;
            full[m] = '\0';
            *decpt = dp;
            return full;
        }
        free(full);
        free(d);
    }
    return sig_digits(x, 17, decpt);
}

void goat_format_repr(goat_str *s, double x)
{
    if (isnan(x)) {
        append(s, "nan");
        return;
    }
    if (signbit(x))
        append(s, "-");
    if (isinf(x)) {
        append(s, "inf");
        return;
    }
    long decpt = 1;
    char *d = x == 0 ? xprintf("0") : shortest_digits(x, &decpt);
    char *t = float_short(d, decpt, 'r', 0, 1, 0, 'e');
    append(s, t);
    free(t);
    free(d);
}

/* Is every digit of the number in `text` (before any exponent) a zero? */
static int all_zero(const char *text)
{
    for (const char *p = text; *p && *p != 'e' && *p != 'E'; p++)
        if (is_digit(*p) && *p != '0')
            return 0;
    return 1;
}

/* format(x, spec) for a float type or none (format_float_internal), nan's sign as goat
 * writes it. */
static void format_float(goat_str *s, double x, const spec_t *sp)
{
    char type = sp->type;
    int precision = (int)sp->precision;
    int add_dot_0 = 0, pct = 0;
    if (type == 0) {
        type = 'g';                     /* goat: no type and no precision is the spec + "g" */
        add_dot_0 = precision >= 0;     /* Python: no type with a precision */
    }
    if (type == 'n')
        type = 'g';
    if (type == '%') {
        type = 'f';
        x *= 100;
        pct = 1;
    }
    if (precision < 0)
        precision = 6;
    int upper = type == 'E' || type == 'F' || type == 'G';
    char code = upper ? (char)(type - 'A' + 'a') : type;

    int negative = signbit(x) != 0;
    char *body;
    if (isnan(x)) {
        body = xprintf("%s", upper ? "NAN" : "nan");
    } else if (isinf(x)) {
        body = xprintf("%s", upper ? "INF" : "inf");
    } else if (code == 'f') {
        body = sp->alt ? xprintf("%#.*f", precision, fabs(x))
                       : xprintf("%.*f", precision, fabs(x));
        if (sp->no_neg_0 && all_zero(body))
            negative = 0;
    } else {
        if (code == 'g' && precision == 0)
            precision = 1;
        long decpt;
        char *d = sig_digits(x, code == 'e' ? precision + 1 : precision, &decpt);
        body = float_short(d, decpt, code, code == 'e' ? precision + 1 : precision,
                           add_dot_0, sp->alt, upper ? 'E' : 'e');
        free(d);
        if (sp->no_neg_0 && x == 0)
            negative = 0;
    }
    if (pct) {
        char *t = xprintf("%s%%", body);
        free(body);
        body = t;
    }
    layout(s, sp, negative, "", body, 0, 3);
    free(body);
}

/* -------------------------------------------------------------------------------- integers */

/* The digits of int(|x|) (x whole and finite) in base 2, 8, 10 or 16, lower case. */
static char *int_digits(double x, int base)
{
    x = fabs(x);
    if (base == 10)
        return xprintf("%.0f", x);
    if (x == 0)
        return xprintf("0");
    int e2;
    double m = frexp(x, &e2);            /* x = m * 2^e2, 0.5 <= m < 1 */
    uint64_t bits = (uint64_t)ldexp(m, 53);
    int shift = e2 - 53;                 /* x = bits * 2^shift */
    while (shift < 0) {                  /* whole, so the dropped bits are zeros */
        bits >>= 1;
        shift++;
    }
    /* the binary digits: bits, then shift zeros */
    size_t nbits = 0;
    char bin[64];
    for (uint64_t b = bits; b; b >>= 1)
        bin[63 - nbits++] = (char)('0' + (b & 1));
    size_t total = nbits + (size_t)shift;
    int per = base == 2 ? 1 : base == 8 ? 3 : 4;
    size_t ndig = (total + (size_t)per - 1) / (size_t)per;
    char *out = xmalloc(ndig + 1);
    size_t lead = ndig * (size_t)per - total;   /* zeros before the first 1 */
    for (size_t k = 0; k < ndig; k++) {
        int v = 0;
        for (int j = 0; j < per; j++) {
            size_t i = k * (size_t)per + (size_t)j;   /* in the padded bit string */
            int bit = 0;
            if (i >= lead && i - lead < nbits)
                bit = bin[64 - nbits + (i - lead)] - '0';
            v = v * 2 + bit;
        }
        out[k] = "0123456789abcdef"[v];
    }
    out[ndig] = '\0';
    return out;
}

static void format_int(goat_str *s, double x, const spec_t *sp)
{
    int base = 10, group = 3;
    const char *prefix = "";
    switch (sp->type) {
    case 'b': base = 2; prefix = "0b"; group = 4; break;
    case 'o': base = 8; prefix = "0o"; group = 4; break;
    case 'x': base = 16; prefix = "0x"; group = 4; break;
    case 'X': base = 16; prefix = "0X"; group = 4; break;
    default: break;
    }
    if (!sp->alt || base == 10)
        prefix = "";
    char *d = int_digits(x, base);
    if (sp->type == 'X')
        for (char *p = d; *p; p++)
            if (*p >= 'a' && *p <= 'f')
                *p = (char)(*p - 'a' + 'A');
    if (sp->grouping == ',')
        group = 3;                       /* (only 'd' takes ',') */
    layout(s, sp, x < 0, prefix, d, 1, group);
    free(d);
}

/* ------------------------------------------------------------------------------------ API */

void goat_format_name_value(goat_str *s, double x)
{
    char buf[64];
    int n;
    if (isfinite(x) && x == floor(x) && fabs(x) < 9007199254740992.0)
        n = snprintf(buf, sizeof buf, "%lld", (long long)x);
    else
        n = snprintf(buf, sizeof buf, "%g", x);
    goat_str_append(s, buf, (size_t)n);
}

void goat_format_value(goat_str *s, double x, const char *spec, const char *site)
{
    if (spec == NULL || spec[0] == '\0') {
        char buf[64];
        int n = snprintf(buf, sizeof buf, "%g", x);
        goat_str_append(s, buf, (size_t)n);
        return;
    }
    spec_t sp;
    if (!parse_spec(spec, &sp))
        goat_fail(site, "invalid format spec ':%s'", spec);
    switch (sp.type) {
    case 'd': case 'b': case 'o': case 'x': case 'X':
        if (!isfinite(x) || x != floor(x)) {
            goat_str shown = {NULL, 0, 0};
            if (isfinite(x)) {
                goat_format_repr(&shown, x);
            } else {
                char buf[16];
                int n = snprintf(buf, sizeof buf, "%g", x);
                goat_str_append(&shown, buf, (size_t)n);
            }
            char *msg = xprintf("cannot format %s with :%s: it is not a whole number",
                                shown.data, spec);
            free(shown.data);
            goat_fail(site, "%s", msg);
        }
        format_int(s, x, &sp);
        return;
    default:
        if (sp.type == 0 && sp.grouping && sp.precision < 0 && isfinite(x) && x == floor(x)) {
            format_int(s, x, &sp);      /* {n:,}: a whole number's digits, grouped */
            return;
        }
        format_float(s, x, &sp);
        return;
    }
}

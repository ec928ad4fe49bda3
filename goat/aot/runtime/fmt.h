/* goat's AOT runtime: numbers in format strings (`print "step {i}: loss {l:.6f}"`).
 *
 * The text is exactly what goat.interp.fmt.format_value writes: Python's format mini-language
 * [[fill]align][sign][z][#][0][width][grouping][.precision][type] applied to a float64, with
 * goat's rules (no spec: C's %g; a spec with neither type nor precision: the spec + "g"; n = g;
 * a NaN with its sign bit set is -nan; the integer types d b o x X need a whole number).
 */
#ifndef GOAT_FMT_H
#define GOAT_FMT_H

#include "goat_rt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Append to `s` the text of x formatted by `spec` (the spec as fmt.py's format_value receives
 * it, already checked by check_spec when the program was compiled; "" or NULL for none),
 * exactly as goat.interp.fmt.format_value(x, spec) returns it.  A fill character may be any
 * one character, written in UTF-8; widths count characters.  A run-time error (an integer
 * type given 2.5, nan or inf) is goat_fail(site, "%s", the message format_value's OpError
 * has).  A spec check_spec would refuse fails with "invalid format spec ':SPEC'". */
void goat_format_value(goat_str *s, double x, const char *spec, const char *site);

/* Append x as a {} field without a spec in a save's or a load's file name: a whole number
 * below 2**53 in magnitude with all its digits ("1000001", "0" for -0), any other number as
 * "%g"; goat.interp.fmt.format_name_number's text. */
void goat_format_name_value(goat_str *s, double x);

/* Append Python's repr(x) of a float64 (the shortest text that reads back as x:
 * "0.1", "1e-05", "2.5", "1e+16", "inf", "nan"). */
void goat_format_repr(goat_str *s, double x);

#ifdef __cplusplus
}
#endif
#endif

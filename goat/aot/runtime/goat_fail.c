/* goat_fail and goat_str_append: the two runtime functions every other part uses; and the
 * removal of a save's temporary file when a signal ends the program. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "goat_rt.h"

/* The message, one line as goat run's (GoatError.headline): a control character (from a file
 * name as written) shows as Python's repr shows it, \n, \t, \r or \xNN, also a C1 control
 * (U+0080..U+009F, two bytes in UTF-8). */
static void put_one_line(const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
        unsigned c = *p;
        if (c == '\n')
            fputs("\\n", stderr);
        else if (c == '\t')
            fputs("\\t", stderr);
        else if (c == '\r')
            fputs("\\r", stderr);
        else if (c < 0x20 || c == 0x7f)
            fprintf(stderr, "\\x%02x", c);
        else if (c == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
            fprintf(stderr, "\\x%02x", (unsigned)*++p);
        else
            fputc((int)c, stderr);
    }
}

static void report(const char *site, const char *fmt, va_list ap);

void goat_fail(const char *site, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(site, fmt, ap);
    va_end(ap);
    exit(1);
}

static void report_at(const char *site, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    report(site, fmt, ap);
    va_end(ap);
}

int64_t goat_check_folder(const char *folder, const char *shown, const char *site)
{
    struct stat st;
    if (stat(folder, &st) == 0 && S_ISDIR(st.st_mode))
        return 0;
    /* evaluator.save_folder_message's text */
    report_at(site, "cannot save into '%s': %s (goat makes no folders: make it first; found "
              "before anything ran)", shown,
              stat(folder, &st) == 0 ? "it is not a directory" : "no such directory");
    return 1;
}

void goat_folders_checked(int64_t failed)
{
    if (failed > 1)
        fprintf(stderr, "goat: %lld errors\n", (long long)failed);
    if (failed > 0) {
        fflush(stderr);
        exit(1);
    }
}

/* goat_fail's report, without the exit */
static void report(const char *site, const char *fmt, va_list ap0)
{
    const char *sep = strchr(site, '\x01');
    if (fflush(stdout) != 0) {
        /* the output held back could not be written: goat run, which writes each print as
         * it comes, met that first (a reader gone: quietly, as goat run ends then) */
        int e = errno;
        if (e == EPIPE)
            _exit(0);
        fprintf(stderr, "goat: error: cannot write output: %s\n", strerror(e));
        fflush(stderr);
        _exit(1);
    }
    if (sep == NULL) {
        fputs(site, stderr);
    } else {
        fwrite(site, 1, (size_t)(sep - site), stderr);
    }
    char small[512];
    va_list ap;
    va_copy(ap, ap0);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small) {
        char *big = malloc((size_t)n + 1);
        if (big != NULL) {
            va_copy(ap, ap0);
            vsnprintf(big, (size_t)n + 1, fmt, ap);
            va_end(ap);
            put_one_line(big);
            free(big);
        } else {
            put_one_line(small);
        }
    } else if (n >= 0) {
        put_one_line(small);
    }
    if (sep != NULL)
        fputs(sep + 1, stderr);
    fputc('\n', stderr);
    fflush(stderr);
}

void goat_str_append(goat_str *s, const char *text, size_t n)
{
    if (s->len + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap : 64;
        while (cap < s->len + n + 1)
            cap *= 2;
        char *p = realloc(s->data, cap);
        if (p == NULL) {
            fputs("goat: out of memory formatting text\n", stderr);
            exit(1);
        }
        s->data = p;
        s->cap = cap;
    }
    memcpy(s->data + s->len, text, n);
    s->len += n;
    s->data[s->len] = '\0';
}

/* The temporary file a save is writing (npy.c), removed if a signal ends the program there:
 * Ctrl-C, kill, timeout or goat run --aot passing its own interruption on. */
static char pending_file[4096];
static volatile sig_atomic_t pending = 0;

void goat_pending_file(const char *path)
{
    pending = 0;
    if (path != NULL && strlen(path) < sizeof pending_file) {
        strcpy(pending_file, path);
        pending = 1;
    }
}

static void on_stop(int sig)
{
    if (pending)
        unlink(pending_file);           /* async-signal-safe */
    signal(sig, SIG_DFL);
    raise(sig);
}

void goat_stop_handlers(void)
{
    /* a signal ignored when the program started stays ignored: nohup ./prog keeps running
     * when its terminal closes, and a background job of a shell without job control is not
     * stopped by Ctrl-C (goat run takes the same care) */
    const int stops[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t k = 0; k < sizeof stops / sizeof stops[0]; k++)
        if (signal(stops[k], on_stop) == SIG_IGN)
            signal(stops[k], SIG_IGN);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pwrhog: a stand-in for a Spark executor that decommissions on SIGPWR, for the rolling
 * tests (tests/vm/cases/55-rolling.sh in the guest, tests/host/test-rolling.sh).
 *
 *   pwrhog [--record FILE] [--mib N] [--step MIB] [--churn] [--pwr catch|ignore|default]
 *          [--term exit|ignore] [--linger MS] [--timeout S] [ANY OTHER ARGUMENT...]
 *
 * It touches memory steadily, --step MiB (default 8) every 100 ms, up to --mib N (default
 * 0: none), then holds it: under a tight memory.max that is memory.high throttling,
 * memory pressure, then the OOM killer. With --churn it does not hold still at N MiB but
 * frees its oldest step and touches a new one every 100 ms: a working set that sits above
 * memory.high and below memory.max is throttled and stalls for as long as it runs, without
 * ever reaching the OOM killer, which a climb past memory.max races. Arguments it does not
 * know are ignored, so that a test can run it through a file named `java` with a Spark
 * executor backend's class name as an argument, as rolling looks for.
 *
 * --pwr catch (default): on SIGPWR stop allocating, unmap everything, wait --linger ms
 * (default 500) and exit 0, as Spark's decommission ends with exitExecutor(0). --pwr
 * ignore: record each SIGPWR and carry on. --pwr default: SIGPWR keeps its default
 * action (it kills): an executor without Spark's handler. --term exit (default): record
 * TERM and exit 143, as a JVM; --term ignore: record it and carry on. After --timeout S
 * (default 600) it exits 4, so that no test leaves it behind.
 *
 * Every event is one line on stderr and, with --record, appended to FILE, with the time
 * since pwrhog started: "pwrhog: ready pid 123", "pwrhog: SIGPWR at 6.250 s, 232 MiB
 * touched", "pwrhog: TERM at 9.001 s", "pwrhog: exit 0 at 6.800 s". The handlers write
 * their own line (write(2) only), so the time is the signal's arrival.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MIB (1024L * 1024L)

enum pwr_mode { PWR_CATCH, PWR_IGNORE, PWR_DEFAULT };

static int record_fd = -1;
static uint64_t start_ns;
static volatile sig_atomic_t pwr_count;
static volatile sig_atomic_t touched_mib;
static bool term_exits = true;

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Async-signal-safe: decimal digits of v at p, returns the end. */
static char *put_uint(char *p, uint64_t v)
{
        char tmp[24];
        int n = 0;

        do {
                tmp[n++] = (char)('0' + v % 10);
                v /= 10;
        } while (v);
        while (n)
                *p++ = tmp[--n];
        return p;
}

static char *put_str(char *p, const char *s)
{
        while (*s)
                *p++ = *s++;
        return p;
}

/* "pwrhog: WHAT at S.mmm s[, N MiB touched]\n", to stderr and the record (signal-safe). */
static void event(const char *what, bool with_mib)
{
        char line[160], *p = line;
        uint64_t ms = (now_ns() - start_ns) / 1000000u;
        ssize_t n;

        p = put_str(p, "pwrhog: ");
        p = put_str(p, what);
        p = put_str(p, " at ");
        p = put_uint(p, ms / 1000);
        *p++ = '.';
        *p++ = (char)('0' + ms / 100 % 10);
        *p++ = (char)('0' + ms / 10 % 10);
        *p++ = (char)('0' + ms % 10);
        p = put_str(p, " s");
        if (with_mib) {
                p = put_str(p, ", ");
                p = put_uint(p, (uint64_t)touched_mib);
                p = put_str(p, " MiB touched");
        }
        *p++ = '\n';
        n = write(STDERR_FILENO, line, (size_t)(p - line));
        if (record_fd >= 0)
                n = write(record_fd, line, (size_t)(p - line));
        (void)n;
}

static void on_pwr(int sig)
{
        int saved = errno;

        (void)sig;
        pwr_count++;
        event("SIGPWR", true);
        errno = saved;
}

static void on_term(int sig)
{
        int saved = errno;

        (void)sig;
        event("TERM", true);
        if (term_exits)
                _exit(128 + SIGTERM);
        errno = saved;
}

static void sleep_ms(long ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = ms % 1000 * 1000000L};

        /* a signal cuts it short, which the loops below are fine with */
        nanosleep(&ts, NULL);
}

static void usage(void)
{
        fprintf(stderr, "usage: pwrhog [--record FILE] [--mib N] [--step MIB] "
                        "[--churn] [--pwr catch|ignore|default] [--term exit|ignore] [--linger MS] "
                        "[--timeout S] [ARGS...]\n");
        exit(2);
}

static long number(const char *s)
{
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < 0)
                usage();
        return v;
}

/* the chunks touched; file-scope, so that what is left at exit is reachable (no leak to report) */
static char **chunks;

int main(int argc, char **argv)
{
        long mib = 0, step = 8, linger_ms = 500, timeout_s = 600;
        enum pwr_mode pwr = PWR_CATCH;
        bool churn = false, held = false;
        struct sigaction sa;
        long nchunks = 0, chunk_max;
        char ready[64];
        int n;

        start_ns = now_ns();
        for (int i = 1; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (strcmp(a, "--record") == 0 && v) {
                        record_fd = open(v, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                        if (record_fd < 0) {
                                perror(v);
                                return 2;
                        }
                } else if (strcmp(a, "--mib") == 0 && v) {
                        mib = number(v);
                } else if (strcmp(a, "--step") == 0 && v) {
                        step = number(v);
                } else if (strcmp(a, "--linger") == 0 && v) {
                        linger_ms = number(v);
                } else if (strcmp(a, "--timeout") == 0 && v) {
                        timeout_s = number(v);
                } else if (strcmp(a, "--churn") == 0) {
                        churn = true;
                        continue;
                } else if (strcmp(a, "--pwr") == 0 && v) {
                        if (strcmp(v, "catch") == 0)
                                pwr = PWR_CATCH;
                        else if (strcmp(v, "ignore") == 0)
                                pwr = PWR_IGNORE;
                        else if (strcmp(v, "default") == 0)
                                pwr = PWR_DEFAULT;
                        else
                                usage();
                } else if (strcmp(a, "--term") == 0 && v) {
                        if (strcmp(v, "exit") == 0)
                                term_exits = true;
                        else if (strcmp(v, "ignore") == 0)
                                term_exits = false;
                        else
                                usage();
                } else {
                        continue; /* not ours: the executor's command line */
                }
                i++;
        }
        if (step < 1)
                usage();

        memset(&sa, 0, sizeof(sa));
        sigemptyset(&sa.sa_mask);
        sa.sa_handler = on_term;
        sigaction(SIGTERM, &sa, NULL);
        if (pwr == PWR_DEFAULT) {
                sa.sa_handler = SIG_DFL;
        } else {
                sa.sa_handler = on_pwr;
                /* one SIGPWR at a time, as the JVM's handler thread takes them */
                sigaddset(&sa.sa_mask, SIGTERM);
        }
        sigaction(SIGPWR, &sa, NULL);

        n = snprintf(ready, sizeof(ready), "pwrhog: ready pid %ld\n", (long)getpid());
        if (write(STDERR_FILENO, ready, (size_t)n) < 0 ||
            (record_fd >= 0 && write(record_fd, ready, (size_t)n) != n))
                return 2;

        chunk_max = mib / step + 1;
        chunks = calloc((size_t)chunk_max, sizeof(*chunks));
        if (!chunks)
                return 3;
        while (now_ns() - start_ns < (uint64_t)timeout_s * 1000000000u) {
                if (pwr_count && pwr == PWR_CATCH) {
                        event("decommissioning", true);
                        for (long c = 0; c < nchunks; c++)
                                munmap(chunks[c], (size_t)step * MIB);
                        touched_mib = 0;
                        sleep_ms(linger_ms);
                        event("exit 0", false);
                        return 0;
                }
                if (churn && held && nchunks) {
                        /* the oldest step goes, the branch below touches a new one */
                        munmap(chunks[0], (size_t)step * MIB);
                        memmove(chunks, chunks + 1, (size_t)(nchunks - 1) * sizeof(*chunks));
                        nchunks--;
                        touched_mib -= step;
                }
                if ((long)touched_mib + step <= mib) {
                        char *p = mmap(NULL, (size_t)step * MIB, PROT_READ | PROT_WRITE,
                                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

                        if (p == MAP_FAILED) {
                                event("mmap failed", true);
                                return 3;
                        }
                        chunks[nchunks++] = p;
                        /*
                         * page by page: each fault is a charge, and may be throttled; a
                         * decommission stops at the next page, not at the chunk's end
                         */
                        for (long off = 0; off < step * MIB; off += 4096) {
                                if (pwr_count && pwr == PWR_CATCH)
                                        break;
                                p[off] = (char)(off >> 12 | 1);
                        }
                        if (pwr_count && pwr == PWR_CATCH)
                                continue;
                        touched_mib += step;
                        if (touched_mib % 64 < step)
                                event("allocating", true);
                        if ((long)touched_mib + step > mib && !held) {
                                event(churn ? "churning" : "holding", true);
                                held = true;
                        }
                }
                sleep_ms(100);
        }
        event("timeout", true);
        return 4;
}

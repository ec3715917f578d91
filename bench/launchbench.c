/* SPDX-License-Identifier: Apache-2.0 */
/*
 * launchbench: time command lines side by side. Every round runs each variant once, in
 * the order given (A, B, C, A, B, C ...), so that drift and noise of a shared machine hit
 * all variants alike; the first variant is the baseline the others are compared to.
 *
 *   launchbench [-n ROUNDS] [-w WARMUP] ::NAME [VAR=VALUE...] CMD [ARGS...] [:: CMD...]... ::NAME
 * ...
 *
 * "::NAME" starts a variant; a lone "::" adds another step to it: the steps run one after
 * the other as separate processes (fork + execvp, as a shell script would, without the
 * shell) and the variant's time is their sum. Leading VAR=VALUE words of a step go into
 * that step's environment, as in sh, without an env(1) process. Each step must exit 0, or
 * the benchmark stops. The result is a Markdown table of medians, p90 and min in microseconds, and
 * the ratio and difference of each median to the baseline's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define STEPS_MAX 8

struct variant {
        const char *name;
        char **steps[STEPS_MAX]; /* NULL-terminated argv of each step, VAR=VALUE words first */
        size_t n_env[STEPS_MAX]; /* how many VAR=VALUE words lead each step */
        size_t n_steps;
        double *total_us;           /* per measured round */
        double *step_us[STEPS_MAX]; /* per measured round and step */
};

static void usage(FILE *f)
{
        fputs("Usage: launchbench [-n ROUNDS] [-w WARMUP] ::NAME [VAR=VALUE...] CMD [ARGS...] [:: "
              "CMD...]...\n"
              "                   [::NAME ...]\n"
              "\n"
              "Run each variant once per round, interleaved in the given order, for WARMUP\n"
              "unmeasured and ROUNDS measured rounds (defaults 5 and 200), and print a Markdown\n"
              "table: median, p90, min (microseconds, CLOCK_MONOTONIC around fork..waitpid)\n"
              "and the ratio and difference to the first variant (the baseline).\n"
              "'::NAME' starts a variant; a lone '::' adds a step (a separate process run after\n"
              "the previous one; the variant's time is the sum). Every step must exit 0.\n"
              "Leading VAR=VALUE words of a step are set in its environment (no env process).\n"
              "Children get stdin and stdout from/to /dev/null; stderr is inherited.\n",
              f);
}

static double now_us(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int compare_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

/* Sorts v in place. */
static double median(double *v, size_t n)
{
        qsort(v, n, sizeof(*v), compare_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Nearest-rank percentile of a sorted array. */
static double percentile_sorted(const double *v, size_t n, double p)
{
        size_t rank = (size_t)(p / 100.0 * (double)n + 0.999999);

        if (rank < 1)
                rank = 1;
        if (rank > n)
                rank = n;
        return v[rank - 1];
}

/* Run one step; returns its wall time in microseconds, or exits on any failure. */
static double run_step(const struct variant *v, size_t step, unsigned round, int devnull)
{
        char *const *argv = v->steps[step] + v->n_env[step];
        double t0, t1;
        int status;
        pid_t pid;

        t0 = now_us();
        pid = fork();
        if (pid < 0) {
                fprintf(stderr, "launchbench: fork: %s\n", strerror(errno));
                exit(2);
        }
        if (pid == 0) {
                dup2(devnull, STDIN_FILENO);
                dup2(devnull, STDOUT_FILENO);
                for (size_t e = 0; e < v->n_env[step]; e++)
                        putenv(v->steps[step][e]);
                execvp(argv[0], argv);
                fprintf(stderr, "launchbench: cannot execute %s: %s\n", argv[0], strerror(errno));
                _exit(127);
        }
        while (waitpid(pid, &status, 0) < 0) {
                if (errno != EINTR) {
                        fprintf(stderr, "launchbench: waitpid: %s\n", strerror(errno));
                        exit(2);
                }
        }
        t1 = now_us();
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "launchbench: variant %s, step %zu (%s), round %u: %s %d\n",
                        v->name, step + 1, argv[0], round,
                        WIFEXITED(status) ? "exit status" : "killed by signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
                exit(1);
        }
        return t1 - t0;
}

static bool parse_count(const char *s, unsigned max, unsigned *ret)
{
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || end == s || *end || s[0] == '-' || v > max)
                return false;
        *ret = (unsigned)v;
        return true;
}

int main(int argc, char **argv)
{
        unsigned rounds = 200, warmup = 5;
        struct variant *variants;
        size_t n_variants = 0;
        double *scratch, *paired, base_median = 0;
        int devnull, opt;

        while ((opt = getopt(argc, argv, "+n:w:h")) != -1) {
                switch (opt) {
                case 'n':
                        if (!parse_count(optarg, 1000000, &rounds) || rounds == 0) {
                                fprintf(stderr,
                                        "launchbench: -n: '%s' is not a round count; allowed: 1 to "
                                        "1000000\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'w':
                        if (!parse_count(optarg, 1000000, &warmup)) {
                                fprintf(stderr,
                                        "launchbench: -w: '%s' is not a round count; allowed: 0 to "
                                        "1000000\n",
                                        optarg);
                                return 2;
                        }
                        break;
                case 'h':
                        usage(stdout);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }

        /* ::NAME starts a variant, :: a step; the words in between are the argv */
        variants = calloc((size_t)argc, sizeof(*variants));
        if (!variants) {
                fputs("launchbench: out of memory\n", stderr);
                return 2;
        }
        for (int i = optind; i < argc; i++) {
                struct variant *v = n_variants ? &variants[n_variants - 1] : NULL;
                bool new_variant = strncmp(argv[i], "::", 2) == 0 && argv[i][2];
                bool new_step = strcmp(argv[i], "::") == 0;

                if (!new_variant && !new_step)
                        continue;
                if (new_step && !v) {
                        fputs("launchbench: '::' before the first '::NAME'\n", stderr);
                        return 2;
                }
                if (new_variant) {
                        v = &variants[n_variants++];
                        v->name = argv[i] + 2;
                }
                if (v->n_steps == STEPS_MAX) {
                        fprintf(stderr, "launchbench: variant %s: more than %d steps\n", v->name,
                                STEPS_MAX);
                        return 2;
                }
                if (i + 1 >= argc || strncmp(argv[i + 1], "::", 2) == 0) {
                        fprintf(stderr, "launchbench: variant %s: empty command\n", v->name);
                        return 2;
                }
                v->steps[v->n_steps] = &argv[i + 1];
                for (int j = i + 1; j < argc && strchr(argv[j], '=') && argv[j][0] != '=' &&
                                    strncmp(argv[j], "::", 2) != 0;
                     j++)
                        v->n_env[v->n_steps]++;
                if (i + 1 + (int)v->n_env[v->n_steps] >= argc ||
                    strncmp(argv[i + 1 + v->n_env[v->n_steps]], "::", 2) == 0) {
                        fprintf(stderr, "launchbench: variant %s: no command after the variables\n",
                                v->name);
                        return 2;
                }
                v->n_steps++;
                argv[i] = NULL; /* terminates the previous step's argv */
        }
        if (n_variants == 0) {
                usage(stderr);
                return 2;
        }
        for (size_t i = 0; i < n_variants; i++) {
                variants[i].total_us = calloc(rounds, sizeof(double));
                if (!variants[i].total_us)
                        return 2;
                for (size_t s = 0; s < variants[i].n_steps; s++) {
                        variants[i].step_us[s] = calloc(rounds, sizeof(double));
                        if (!variants[i].step_us[s])
                                return 2;
                }
        }
        scratch = calloc(rounds, sizeof(double));
        paired = calloc(rounds, sizeof(double));
        devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (!scratch || !paired || devnull < 0) {
                fprintf(stderr, "launchbench: setup: %s\n", strerror(errno));
                return 2;
        }

        for (unsigned r = 0; r < warmup + rounds; r++) {
                for (size_t i = 0; i < n_variants; i++) {
                        struct variant *v = &variants[i];
                        double total = 0;

                        for (size_t s = 0; s < v->n_steps; s++) {
                                double t = run_step(v, s, r, devnull);
                                if (r >= warmup)
                                        v->step_us[s][r - warmup] = t;
                                total += t;
                        }
                        if (r >= warmup)
                                v->total_us[r - warmup] = total;
                }
        }

        printf("%u rounds (after %u warm-up rounds), variants interleaved in each round in this "
               "order: ",
               rounds, warmup);
        for (size_t i = 0; i < n_variants; i++)
                printf("%s%s", i ? ", " : "", variants[i].name);
        printf(". Times in microseconds.\n\n");
        printf("| variant | median | p90 | min | median / %s | median − %s | paired Δ |\n",
               variants[0].name, variants[0].name);
        printf("|---|---:|---:|---:|---:|---:|---:|\n");
        for (size_t i = 0; i < n_variants; i++) {
                struct variant *v = &variants[i];
                double med, p90, min, paired_delta;

                for (unsigned r = 0; r < rounds; r++) {
                        scratch[r] = v->total_us[r];
                        paired[r] = v->total_us[r] - variants[0].total_us[r];
                }
                med = median(scratch, rounds);
                p90 = percentile_sorted(scratch, rounds, 90);
                min = scratch[0];
                paired_delta = median(paired, rounds);
                if (i == 0)
                        base_median = med;
                printf("| %s | %.0f | %.0f | %.0f | %.2f | %+.0f | %+.0f |\n", v->name, med, p90,
                       min, med / base_median, med - base_median, paired_delta);
        }
        printf("\n\"paired Δ\" is the median of the per-round differences to %s (both ran in the "
               "same round).\n",
               variants[0].name);

        for (size_t i = 0; i < n_variants; i++) {
                struct variant *v = &variants[i];

                if (v->n_steps < 2)
                        continue;
                printf("\nSteps of %s (median µs each):", v->name);
                for (size_t s = 0; s < v->n_steps; s++) {
                        for (unsigned r = 0; r < rounds; r++)
                                scratch[r] = v->step_us[s][r];
                        const char *cmd = v->steps[s][v->n_env[s]];
                        const char *slash = strrchr(cmd, '/');
                        printf("%s %s %.0f", s ? "," : "", slash ? slash + 1 : cmd,
                               median(scratch, rounds));
                }
                printf(".\n");
        }
        return 0;
}

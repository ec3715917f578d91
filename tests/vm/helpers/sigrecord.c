/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sigrecord FILE [ignore-term]: append the name of every signal received to FILE; exit 0
 * on SIGTERM, unless ignore-term is given, in which case TERM is ignored and it runs
 * until killed. Writes "ready" to FILE once its handlers are in place.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int out = -1;
static volatile sig_atomic_t term;

static void record(int sig)
{
        const char *name = sig == SIGTERM   ? "TERM\n"
                           : sig == SIGINT  ? "INT\n"
                           : sig == SIGHUP  ? "HUP\n"
                           : sig == SIGQUIT ? "QUIT\n"
                           : sig == SIGUSR1 ? "USR1\n"
                           : sig == SIGUSR2 ? "USR2\n"
                                            : "OTHER\n";
        ssize_t n = write(out, name, strlen(name));
        (void)n;
        if (sig == SIGTERM)
                term = 1;
}

int main(int argc, char **argv)
{
        static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};
        int ignore_term = argc == 3 && strcmp(argv[2], "ignore-term") == 0;
        struct sigaction sa;

        if (argc < 2 || (out = open(argv[1], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644)) < 0)
                return 2;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = record;
        for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
                sigaction(sigs[i], &sa, NULL);
        if (ignore_term)
                signal(SIGTERM, SIG_IGN);
        if (write(out, "ready\n", 6) != 6)
                return 2;
        while (!term)
                pause();
        return 0;
}

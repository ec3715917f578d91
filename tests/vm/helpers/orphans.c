/* SPDX-License-Identifier: Apache-2.0 */
/*
 * orphans N: leave N orphans behind (an intermediate child forks them and exits at once),
 * count them re-parented to our parent (the shim, a subreaper), then let them die and count
 * zombies whose parent is the shim. Exit 0 when all N were re-parented to it and none is
 * left a zombie. The orphans wait on a pipe until they have been counted, not for a time:
 * on a loaded machine forking 100 of them took longer than any sleep, and the first were
 * gone before the count (78 of 100 seen).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* how many processes have PPid == ppid, and how many of them are zombies */
static void scan(pid_t ppid, int *children, int *zombies)
{
        DIR *d = opendir("/proc");
        struct dirent *de;

        *children = *zombies = 0;
        while (d && (de = readdir(d))) {
                char path[300], line[256], state = 0;
                int pp = -1;
                FILE *f;
                if (de->d_name[0] < '0' || de->d_name[0] > '9')
                        continue;
                snprintf(path, sizeof(path), "/proc/%s/status", de->d_name);
                if (!(f = fopen(path, "re")))
                        continue;
                while (fgets(line, sizeof(line), f)) {
                        if (!strncmp(line, "State:", 6))
                                sscanf(line + 6, " %c", &state);
                        if (!strncmp(line, "PPid:", 5))
                                pp = atoi(line + 5);
                }
                fclose(f);
                if (pp == ppid) {
                        (*children)++;
                        *zombies += state == 'Z';
                }
        }
        if (d)
                closedir(d);
}

int main(int argc, char **argv)
{
        int n = argc == 2 ? atoi(argv[1]) : 0, children, zombies, max_seen = 0, gate[2];
        pid_t shim = getppid(), mid;

        if (n <= 0) {
                fprintf(stderr, "usage: orphans N\n");
                return 2;
        }
        if (pipe(gate) < 0) {
                perror("pipe");
                return 2;
        }
        mid = fork();
        if (mid == 0) {
                close(gate[1]);
                for (int i = 0; i < n; i++)
                        if (fork() == 0) {
                                char c;

                                /* until we close the pipe's other end: after the count */
                                while (read(gate[0], &c, 1) < 0)
                                        ;
                                _exit(0);
                        }
                _exit(0);
        }
        close(gate[0]);
        waitpid(mid, NULL, 0);
        /* re-parented when mid exits; looked at for up to 60 s */
        for (int i = 0; i < 600; i++) {
                scan(shim, &children, &zombies);
                if (children > max_seen)
                        max_seen = children;
                if (children == n + 1)
                        break;
                usleep(100000);
        }
        close(gate[1]);
        /* they exit now; give the shim time to reap them (up to 60 s, a guard) */
        for (int i = 0; i < 600; i++) {
                usleep(100000);
                scan(shim, &children, &zombies);
                if (children == 1 && zombies == 0)
                        break;
        }
        printf("orphans: re-parented to the shim %d (plus us), left %d, zombies %d\n", max_seen - 1,
               children - 1, zombies);
        return max_seen - 1 == n && children == 1 && zombies == 0 ? 0 : 1;
}

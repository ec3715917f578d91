/* SPDX-License-Identifier: Apache-2.0 */
/* memhog MIB: allocate and touch MIB mebibytes, one at a time, then exit 0. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
        long mib = argc == 2 ? atol(argv[1]) : 0;

        if (mib <= 0) {
                fprintf(stderr, "usage: memhog MIB\n");
                return 2;
        }
        for (long i = 0; i < mib; i++) {
                char *p = malloc(1 << 20);
                if (!p) {
                        fprintf(stderr, "memhog: malloc failed at %ld MiB\n", i);
                        return 3;
                }
                memset(p, (int)(i & 0xff) | 1, 1 << 20);
        }
        printf("memhog: touched %ld MiB\n", mib);
        return 0;
}

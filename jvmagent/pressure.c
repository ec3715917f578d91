/* SPDX-License-Identifier: Apache-2.0 */
/* Anonymous memory of the executor: cgroup v2 memory.stat "anon", or the process's RssAnon
 * where the executor's cgroup has no memory controller. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent-internal.h"

int jva_parse_decimal_u64(const char *p, uint64_t *ret_value, const char **ret_rest)
{
        uint64_t v = 0;

        assert(p);
        assert(ret_value);
        if (*p < '0' || *p > '9')
                return -EINVAL;
        for (; *p >= '0' && *p <= '9'; p++) {
                if (v > (UINT64_MAX - 9) / 10)
                        return -EINVAL;
                v = v * 10 + (uint64_t)(*p - '0');
        }
        *ret_value = v;
        if (ret_rest)
                *ret_rest = p;
        return 0;
}

/* The value after `key` at the start of a line, as decimal digits; -ENOENT without it. */
static int find_number(const char *text, const char *key, uint64_t *ret_value,
                       const char **ret_rest)
{
        size_t key_len = strlen(key);

        for (const char *line = text; line && *line;) {
                if (strncmp(line, key, key_len) == 0) {
                        const char *p = line + key_len;

                        while (*p == ' ' || *p == '\t')
                                p++;
                        return jva_parse_decimal_u64(p, ret_value, ret_rest);
                }
                line = strchr(line, '\n');
                if (line)
                        line++;
        }
        return -ENOENT;
}

int jva_parse_memory_stat_anon(const char *text, uint64_t *ret_bytes)
{
        const char *rest;
        uint64_t v;
        int r;

        assert(text);
        assert(ret_bytes);
        r = find_number(text, "anon ", &v, &rest);
        if (r < 0)
                return r;
        if (*rest != '\n' && *rest != '\0')
                return -EINVAL;
        *ret_bytes = v;
        return 0;
}

int jva_parse_proc_status_anon(const char *text, uint64_t *ret_bytes)
{
        const char *rest;
        uint64_t v;
        int r;

        assert(text);
        assert(ret_bytes);
        r = find_number(text, "RssAnon:", &v, &rest);
        if (r < 0)
                return r;
        if (strncmp(rest, " kB", 3) != 0 || v > UINT64_MAX / 1024)
                return -EINVAL;
        *ret_bytes = v * 1024;
        return 0;
}

int jva_read_anon(const char *cgroup_dir, uint64_t *ret_bytes)
{
        char path[JVA_PATH_MAX + 32], text[8192];
        bool cgroup = cgroup_dir && *cgroup_dir;
        size_t len = 0;
        ssize_t n;
        int fd;

        assert(ret_bytes);
        if (cgroup)
                snprintf(path, sizeof(path), "%s/memory.stat", cgroup_dir);
        else
                snprintf(path, sizeof(path), "/proc/self/status");
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        while (len < sizeof(text) - 1) {
                n = read(fd, text + len, sizeof(text) - 1 - len);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        n = -errno;
                        close(fd);
                        return (int)n;
                }
                if (n == 0)
                        break;
                len += (size_t)n;
        }
        close(fd);
        text[len] = '\0';
        return cgroup ? jva_parse_memory_stat_anon(text, ret_bytes)
                      : jva_parse_proc_status_anon(text, ret_bytes);
}

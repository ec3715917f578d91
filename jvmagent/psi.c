/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory pressure stall information (PSI) of the executor's cgroup, or of the system: a
 * kernel trigger ("some STALL WINDOW" written to memory.pressure, then POLLPRI) where the
 * kernel lets this process create one, else the "some" total read at every poll and its
 * growth compared with the same stall-per-window rate.
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent-internal.h"
#include "psi.h"

#define SYSTEM_PRESSURE "/proc/pressure/memory"

int jva_parse_psi_some_total(const char *text, uint64_t *ret_us)
{
        const char *p;
        uint64_t v = 0;

        assert(text);
        assert(ret_us);
        if (strncmp(text, "some ", 5) != 0)
                return -ENOENT;
        p = strstr(text, " total=");
        if (!p || (strchr(text, '\n') && p > strchr(text, '\n')))
                return -EINVAL;
        if (jva_parse_decimal_u64(p + 7, &v, &p) < 0 || (*p != '\n' && *p != '\0'))
                return -EINVAL;
        *ret_us = v;
        return 0;
}

static int read_total(struct jva_psi *psi, uint64_t *ret_us)
{
        char text[512];
        ssize_t n = pread(psi->fd, text, sizeof(text) - 1, 0);

        if (n < 0)
                return -errno;
        text[n] = '\0';
        return jva_parse_psi_some_total(text, ret_us);
}

int jva_psi_open(struct jva_psi *psi, const char *cgroup_dir, uint64_t stall_us, uint64_t window_us)
{
        char trigger[64];
        int fd, len, r;

        assert(psi);
        memset(psi, 0, sizeof(*psi));
        psi->fd = -1;
        if (stall_us == 0 || window_us == 0 || stall_us > window_us)
                return -EINVAL;
        psi->stall_us = stall_us;
        psi->window_us = window_us;
        if (cgroup_dir && cgroup_dir[0]) {
                if ((size_t)snprintf(psi->path, sizeof(psi->path), "%s/memory.pressure",
                                     cgroup_dir) >= sizeof(psi->path))
                        return -ENAMETOOLONG;
        } else {
                snprintf(psi->path, sizeof(psi->path), "%s", SYSTEM_PRESSURE);
        }

        /*
         * Without CAP_SYS_RESOURCE the kernel takes only windows that are multiples of 2 s
         * (EINVAL otherwise): then the same stall rate over the next such window.
         */
        for (int attempt = 0; attempt < 2; attempt++) {
                uint64_t window = window_us, stall = stall_us;

                if (attempt == 1) {
                        if (window_us % 2000000 == 0)
                                break;
                        window = (window_us / 2000000 + 1) * 2000000;
                        stall = stall_us * window / window_us;
                }
                len =
                    snprintf(trigger, sizeof(trigger), "some %" PRIu64 " %" PRIu64, stall, window);
                fd = open(psi->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
                if (fd < 0)
                        break;
                if (write(fd, trigger, (size_t)len + 1) == len + 1) {
                        psi->fd = fd;
                        psi->trigger = true;
                        psi->trigger_stall_us = stall;
                        psi->trigger_window_us = window;
                        return 0;
                }
                psi->trigger_error = errno ? errno : EIO;
                close(fd);
                fd = -1;
        }
        /* no trigger for us (unprivileged windows must be multiples of 2 s, or PSI is off):
         * read the totals instead */
        if (fd < 0 && !psi->trigger_error)
                psi->trigger_error = errno;
        fd = open(psi->path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        psi->fd = fd;
        r = read_total(psi, &psi->last_total_us);
        if (r < 0) {
                close(fd);
                psi->fd = -1;
                return r;
        }
        psi->last_ns = jva_now_ns();
        return 0;
}

#define PSI_POLL_MIN_US 100000

int jva_psi_poll(struct jva_psi *psi, bool *ret_fired)
{
        assert(psi);
        assert(ret_fired);

        *ret_fired = false;
        if (psi->fd < 0)
                return -EBADF;
        if (psi->trigger) {
                struct pollfd p = {.fd = psi->fd, .events = POLLPRI};
                int n = poll(&p, 1, 0);

                if (n < 0)
                        return errno == EINTR ? 0 : -errno;
                if (n > 0 && (p.revents & POLLERR))
                        return -ENODEV; /* the cgroup is gone */
                *ret_fired = n > 0 && (p.revents & POLLPRI);
        } else {
                uint64_t total, now = jva_now_ns(), elapsed_us;
                int r = read_total(psi, &total);

                if (r < 0)
                        return r;
                elapsed_us = (now - psi->last_ns) / 1000;
                /* rates over at least 100 ms, however often the agent samples: a stall of a
                 * few ms within a short sample is not STALL per WINDOW */
                if (elapsed_us < PSI_POLL_MIN_US)
                        return 0;
                /* at least STALL per WINDOW, as the trigger would have it */
                if (total >= psi->last_total_us &&
                    (total - psi->last_total_us) * psi->window_us >= psi->stall_us * elapsed_us)
                        *ret_fired = true;
                psi->last_total_us = total;
                psi->last_ns = now;
        }
        if (*ret_fired)
                psi->events++;
        return 0;
}

void jva_psi_close(struct jva_psi *psi)
{
        assert(psi);

        if (psi->fd >= 0)
                close(psi->fd);
        psi->fd = -1;
}

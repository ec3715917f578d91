/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Report sinks that never make their writer wait: see sink.h. Standard output is shared
 * with the executor, so its file description is never made non-blocking: a pipe or a
 * terminal is opened again through /proc/self/fd/1 (a description of our own), a socket
 * is written with MSG_DONTWAIT.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "sink.h"
#include "util.h"

static const char *const kind_names[] = {
    [SINK_FILE] = "file",
    [SINK_SOCKET] = "socket",
    [SINK_STDOUT] = "stdout",
};

void sink_init(struct sink *s, enum sink_kind kind, const char *path)
{
        memset(s, 0, sizeof(*s));
        s->kind = kind;
        s->name = kind_names[kind];
        s->fd = -1;
        snprintf(s->path, sizeof(s->path), "%s", path ? path : "");
}

/* "report file /x", "report socket /y", "report on stdout": how messages name the sink */
static const char *label(const struct sink *s, char *buf, size_t size)
{
        if (s->kind == SINK_STDOUT)
                snprintf(buf, size, "report on stdout");
        else
                snprintf(buf, size, "report %s %s", s->name, s->path);
        return buf;
}

static int fail(struct sink *s, struct util_error *err, int error, const char *what)
{
        char l[4200];

        snprintf(s->error, sizeof(s->error), "%s: %s", what, strerror(error));
        return util_error_set(err, error, "%s: %s", label(s, l, sizeof(l)), s->error);
}

/* Root appends to it: no symlink, no foreign or hard-linked file, no unsafe directory. */
static int open_file(struct sink *s, struct util_error *err)
{
        struct util_error why = {0};
        char l[4200];

        s->fd = util_open_append_safe(s->path, 0640, &why);
        if (s->fd >= 0)
                return 0;
        s->refused = s->fd == -EPERM;
        snprintf(s->error, sizeof(s->error), "%s", why.text);
        return util_error_set(err, -s->fd, "%s: %s", label(s, l, sizeof(l)), why.text);
}

static int open_socket(struct sink *s, struct util_error *err)
{
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        size_t len = strlen(s->path);
        _cleanup_close_ int fd = -1;

        if (len >= sizeof(addr.sun_path))
                return fail(s, err, ENAMETOOLONG, "path too long");
        memcpy(addr.sun_path, s->path, len + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return fail(s, err, errno, "socket");
        /* non-blocking: a listener whose backlog is full gives EAGAIN instead of a wait */
        if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
                return fail(s, err, errno, "cannot connect");
        s->fd = fd;
        fd = -1;
        s->use_send = s->may_block = true;
        return 0;
}

static int open_stdout(struct sink *s, struct util_error *err)
{
        struct stat st;

        if (fstat(STDOUT_FILENO, &st) < 0)
                return fail(s, err, errno, "fstat");
        if (S_ISSOCK(st.st_mode)) {
                s->use_send = true;
        } else if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) {
                s->fd = open("/proc/self/fd/1", O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
                /* ENXIO: a pipe nobody can read any more; writes fail with EPIPE right away */
                if (s->fd < 0 && errno != ENXIO)
                        return fail(s, err, errno, "cannot open /proc/self/fd/1 without blocking");
        }
        if (s->fd < 0)
                s->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
        if (s->fd < 0)
                return fail(s, err, errno, "dup");
        s->may_block = !S_ISREG(st.st_mode);
        return 0;
}

int sink_open(struct sink *s, struct util_error *err)
{
        s->error[0] = '\0';
        switch (s->kind) {
        case SINK_FILE:
                return open_file(s, err);
        case SINK_SOCKET:
                return open_socket(s, err);
        case SINK_STDOUT:
                return open_stdout(s, err);
        }
        return -EINVAL;
}

static void drop_head(struct sink *s)
{
        free(s->queue[s->head]);
        s->queue[s->head] = NULL;
        s->head = (s->head + 1) % SINK_QUEUE_LINES;
        s->count--;
        s->offset = 0;
}

void sink_push(struct sink *s, const char *line, size_t len)
{
        struct sink_line *l;

        if (s->fd < 0 || s->count == SINK_QUEUE_LINES) {
                s->dropped++;
                return;
        }
        l = malloc(sizeof(*l) + len);
        if (!l) {
                s->dropped++;
                return;
        }
        l->len = len;
        memcpy(l->text, line, len);
        s->queue[(s->head + s->count) % SINK_QUEUE_LINES] = l;
        s->count++;
}

static void drop_all(struct sink *s)
{
        while (s->count > 0) {
                drop_head(s);
                s->dropped++;
        }
}

int sink_flush(struct sink *s)
{
        while (s->count > 0 && s->fd >= 0) {
                const struct sink_line *l = s->queue[s->head];
                ssize_t n;

                n = s->use_send ? send(s->fd, l->text + s->offset, l->len - s->offset,
                                       MSG_DONTWAIT | MSG_NOSIGNAL)
                                : write(s->fd, l->text + s->offset, l->len - s->offset);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 1;
                if (n <= 0) {
                        int r = n < 0 ? errno : EIO;
                        fail(s, NULL, r, "write");
                        util_closep(&s->fd);
                        s->fd = -1;
                        drop_all(s);
                        return -r;
                }
                s->offset += (size_t)n;
                if (s->offset == l->len)
                        drop_head(s);
        }
        return 0;
}

void sink_discard_pending(struct sink *s)
{
        size_t keep = s->offset > 0 ? 1 : 0;

        while (s->count > keep) {
                size_t last = (s->head + s->count - 1) % SINK_QUEUE_LINES;
                free(s->queue[last]);
                s->queue[last] = NULL;
                s->count--;
                s->dropped++;
        }
}

size_t sink_pending(const struct sink *s)
{
        return s->count;
}

void sink_close(struct sink *s)
{
        drop_all(s);
        util_closep(&s->fd);
        s->fd = -1;
}

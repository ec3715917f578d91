/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Report sinks (private to measure/): a JSON-lines file, a unix stream socket, standard
 * output. Each sink has a bounded queue of whole lines and is written without blocking
 * (regular files excepted: a write to a hung disk blocks the monitor thread, never the
 * supervisor). A line the sink cannot take is counted in `dropped`, never waited for.
 *
 * Only the monitor thread touches a sink once the monitor has started.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shim-common.h"

/* Lines a sink holds while it does not take them; one more is dropped and counted. */
#define SINK_QUEUE_LINES 16

enum sink_kind {
        SINK_FILE,   /* JSON lines appended to a file */
        SINK_SOCKET, /* unix stream socket, (re)connected by the monitor */
        SINK_STDOUT, /* the shim's standard output */
};

struct sink_line {
        size_t len;
        char text[];
};

struct sink {
        enum sink_kind kind;
        const char *name; /* the key in the report's "sinks" object */
        char path[4096];  /* file or socket path, "" for stdout */
        int fd;           /* -1 while closed (not opened, or broken) */
        bool use_send;    /* a socket: send(MSG_DONTWAIT | MSG_NOSIGNAL) */
        bool may_block;   /* a write can return EAGAIN: wait for POLLOUT */
        struct sink_line *queue[SINK_QUEUE_LINES];
        size_t head, count;
        size_t offset;    /* bytes of the head line already written */
        uint64_t dropped; /* lines of this run the sink did not take */
        char error[256];  /* the last failure ("" when none), for the report and the log */
        bool refused;     /* the file is unsafe for root to write (util_open_append_safe) */
};

/* Set a closed sink up; path is copied. */
void sink_init(struct sink *s, enum sink_kind kind, const char *path);

/*
 * Open the sink: the file for appending (util_open_append_safe: -EPERM and s->refused when
 * it is unsafe), the socket connected (without waiting: a peer
 * whose backlog is full is -EAGAIN), a non-blocking descriptor of standard output.
 * Returns 0, or -errno with err and s->error saying why.
 */
int sink_open(struct sink *s, struct util_error *err);

/* Queue a copy of a line (with its newline); counts it as dropped when the sink cannot take it. */
void sink_push(struct sink *s, const char *line, size_t len);

/*
 * Write what the sink can take now, without waiting. Returns 1 when lines remain and the
 * sink wants POLLOUT, 0 when the queue is empty or the sink is closed.
 */
int sink_flush(struct sink *s);

/* Drop the queued lines whose writing has not begun (counted); a started line stays. */
void sink_discard_pending(struct sink *s);

/* Lines still queued (the started one included). */
size_t sink_pending(const struct sink *s);

/* Close the fd and free the queue; the lines still queued are counted as dropped. */
void sink_close(struct sink *s);

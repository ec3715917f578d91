/* SPDX-License-Identifier: Apache-2.0 */
/*
 * taskstats over generic netlink (libnl-genl): per-task queries and exit records.
 *
 * What a record holds (kernel/taskstats.c; checked on this project's 6.18 host):
 *
 *  - TASKSTATS_CMD_ATTR_PID (one task): fill_stats() runs every accounting subsystem:
 *    ac_utime/ac_stime of that thread (usec), the delay fields (cpu_count, cpu_delay_total,
 *    cpu_run_real_total, blkio/swapin/...), the thread's own I/O counters (read_bytes,
 *    write_bytes, read_char, ... rounded down to KiB multiples), and hiwater_rss/vm of the
 *    mm (so the same for every thread of a process; 0 for a task without mm: a kernel
 *    thread, or a zombie after exit_mm()), identity (ac_pid, ac_tgid, comm, ...).
 *
 *  - TASKSTATS_CMD_ATTR_TGID (one process): fill_stats_for_tgid() starts from the
 *    signal struct's accumulation of exited threads (signal->stats, allocated when a
 *    thread of a multi-threaded process exits) and adds, for each live thread (exit_state
 *    0): the delay fields, ac_etime, ac_utime/ac_stime and nvcsw/nivcsw. On 6.18 the
 *    exited threads' ac_utime/ac_stime/ac_etime/nvcsw are in signal->stats too (upstream
 *    "taskstats: retain dead thread stats in TGID queries"; older kernels add only their
 *    delay fields, so their CPU time vanishes from the TGID figure). It never contains
 *    I/O bytes, read_char/write_char, hiwater_rss/vm, coremem, the page-fault counts or
 *    identity: those read 0 (measured here: write_bytes 0 for a process that wrote 8 MiB,
 *    hiwater_rss 0, ac_pid 0).
 *
 *  - Exit records: every exiting task sends a per-task record (AGGR_PID, as for a PID
 *    query, taken before exit_mm() so hiwater_rss is still there); the last thread of a
 *    multi-threaded process adds the TGID record (signal->stats, same limits as above).
 *    A single-threaded process sends only the per-task record.
 *
 * So collect_taskstats_query() sums PID records of the live threads and
 * collect_taskstats_drain_exits() takes only per-task exit records: together every thread
 * is counted once, with I/O, on old and new kernels alike.
 *
 * CPU time: ac_utime/ac_stime and cpu_run_real_total are task_cputime(), i.e. tick
 * samples (CONFIG_TICK_CPU_ACCOUNTING here), not scaled to the scheduler's runtime as
 * /proc/<pid>/stat is; cpu_run_virtual_total is se.sum_exec_runtime, the precise one.
 *
 * Delay accounting: with kernel.task_delayacct=0, 6.18 still fills cpu_count,
 * cpu_delay_total, cpu_run_real_total and cpu_run_virtual_total (measured: nonzero with
 * the sysctl at 0); blkio/swapin/... need it on.
 *
 * Two sockets: queries on one (blocking, no auto-ack: each request gets exactly one reply
 * or one error), exit records on the other, which registers a cpumask and is drained
 * without blocking (the kernel sends to whichever port registered, so replies and exit
 * records must not share a socket).
 */
#include "collect.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/genetlink.h>
#include <linux/netlink.h>
#include <linux/taskstats.h>
#include <netlink/genl/ctrl.h>
#include <netlink/genl/genl.h>
#include <netlink/netlink.h>
#include <netlink/socket.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/sysinfo.h>

#include "util.h"

#define EXIT_BUFFER_SIZE (64 * 1024)
/* exit records are ~1.2 KiB each: room for a few thousand between two drains */
#define EXIT_RCVBUF    (4 * 1024 * 1024)
#define CPUMASK_MAX    1024
#define ACK_TIMEOUT_MS 2000

/* One per-task record, as the kernel sent it (fields beyond its struct version are 0). */
struct record {
        pid_t pid, tgid;
        struct taskstats stats;
};

struct collect_taskstats {
        struct nl_sock *query;
        struct nl_cb *query_cb;
        int family;
        /* exit records: NULL unless listen_exits */
        struct nl_sock *listen;
        char cpumask[CPUMASK_MAX];
        unsigned char *buffer;
        /* records that arrived while waiting for the registration's acknowledgement */
        struct record *pending;
        size_t npending, pending_capacity;
        uint64_t overflows;
};

/* libnl's NLE_* codes (any sign) as -errno; the kernel's own errno is kept where we have it. */
static int errno_from_nl(int nl_error)
{
        switch (nl_error < 0 ? -nl_error : nl_error) {
        case NLE_SUCCESS:
                return 0;
        case NLE_INTR:
                return -EINTR;
        case NLE_BAD_SOCK:
                return -EBADF;
        case NLE_AGAIN:
                return -EAGAIN;
        case NLE_NOMEM:
                return -ENOMEM;
        case NLE_EXIST:
                return -EEXIST;
        case NLE_INVAL:
                return -EINVAL;
        case NLE_RANGE:
                return -ERANGE;
        case NLE_MSGSIZE:
                return -EMSGSIZE;
        case NLE_OPNOTSUPP:
                return -EOPNOTSUPP;
        case NLE_AF_NOSUPPORT:
                return -EAFNOSUPPORT;
        case NLE_OBJ_NOTFOUND:
                return -ENOENT;
        case NLE_BUSY:
                return -EBUSY;
        case NLE_PROTO_MISMATCH:
                return -EPROTONOSUPPORT;
        case NLE_NOACCESS:
                return -EACCES;
        case NLE_PERM:
                return -EPERM;
        case NLE_NODEV:
                return -ENODEV;
        case NLE_SEQ_MISMATCH:
        case NLE_MSG_OVERFLOW:
        case NLE_MSG_TRUNC:
        case NLE_MSG_TOOSHORT:
        case NLE_MSGTYPE_NOSUPPORT:
        case NLE_PARSE_ERR:
        case NLE_NOATTR:
        case NLE_MISSING_ATTR:
        case NLE_ATTRSIZE:
                return -EBADMSG;
        default:
                return -EIO;
        }
}

static void add_record(struct collect_taskstats_totals *totals, const struct taskstats *s)
{
        uint64_t hiwater = s->hiwater_rss * 1024;

        totals->cpu_user_us += s->ac_utime;
        totals->cpu_system_us += s->ac_stime;
        totals->cpu_run_real_ns += s->cpu_run_real_total;
        totals->cpu_run_virtual_ns += s->cpu_run_virtual_total;
        totals->cpu_delay_ns += s->cpu_delay_total;
        totals->cpu_delay_count += s->cpu_count;
        totals->read_bytes += s->read_bytes;
        totals->write_bytes += s->write_bytes;
        /* the mm's high-water mark: every thread reports the same, so the max, not a sum */
        if (hiwater > totals->hiwater_rss_bytes)
                totals->hiwater_rss_bytes = hiwater;
        totals->tasks++;
}

static void add_totals(struct collect_taskstats_totals *totals,
                       const struct collect_taskstats_totals *more)
{
        totals->cpu_user_us += more->cpu_user_us;
        totals->cpu_system_us += more->cpu_system_us;
        totals->cpu_run_real_ns += more->cpu_run_real_ns;
        totals->cpu_run_virtual_ns += more->cpu_run_virtual_ns;
        totals->cpu_delay_ns += more->cpu_delay_ns;
        totals->cpu_delay_count += more->cpu_delay_count;
        totals->read_bytes += more->read_bytes;
        totals->write_bytes += more->write_bytes;
        if (more->hiwater_rss_bytes > totals->hiwater_rss_bytes)
                totals->hiwater_rss_bytes = more->hiwater_rss_bytes;
        totals->tasks += more->tasks;
}

/*
 * The per-task record (AGGR_PID: PID + STATS) of a TASKSTATS_CMD_NEW message. 1 if there
 * is one, 0 if not, -EBADMSG if the message is malformed.
 */
static int parse_task_record(struct nlmsghdr *nlh, struct record *ret)
{
        struct nlattr *top[TASKSTATS_TYPE_MAX + 1], *inner[TASKSTATS_TYPE_MAX + 1];
        struct record rec = {0};
        size_t len;

        if (!genlmsg_valid_hdr(nlh, 0) || genlmsg_hdr(nlh)->cmd != TASKSTATS_CMD_NEW)
                return -EBADMSG;
        if (genlmsg_parse(nlh, 0, top, TASKSTATS_TYPE_MAX, NULL) < 0)
                return -EBADMSG;
        if (!top[TASKSTATS_TYPE_AGGR_PID])
                return 0;
        if (nla_parse_nested(inner, TASKSTATS_TYPE_MAX, top[TASKSTATS_TYPE_AGGR_PID], NULL) < 0)
                return -EBADMSG;
        if (!inner[TASKSTATS_TYPE_PID] || !inner[TASKSTATS_TYPE_STATS] ||
            nla_len(inner[TASKSTATS_TYPE_PID]) < (int)sizeof(uint32_t))
                return -EBADMSG;
        rec.pid = (pid_t)nla_get_u32(inner[TASKSTATS_TYPE_PID]);

        /* older kernels send a shorter struct, newer ones a longer one (v16 on 6.18) */
        len = (size_t)nla_len(inner[TASKSTATS_TYPE_STATS]);
        memcpy(&rec.stats, nla_data(inner[TASKSTATS_TYPE_STATS]),
               len < sizeof(rec.stats) ? len : sizeof(rec.stats));
        /* ac_tgid came with version 12; before that a thread's process is unknown */
        if (len >= offsetof(struct taskstats, ac_tgid) + sizeof(rec.stats.ac_tgid) &&
            rec.stats.ac_tgid != 0)
                rec.tgid = (pid_t)rec.stats.ac_tgid;
        else
                rec.tgid = rec.pid;
        *ret = rec;
        return 1;
}

/* ---- sockets ---- */

static int socket_open(struct nl_sock **ret, struct util_error *err)
{
        struct nl_sock *sk;
        int r, fd, flags;

        sk = nl_socket_alloc();
        if (!sk)
                return util_error_set(err, -ENOMEM, "taskstats: out of memory");
        r = nl_connect(sk, NETLINK_GENERIC);
        if (r < 0) {
                nl_socket_free(sk);
                r = errno_from_nl(r);
                return util_error_set(err, r, "taskstats: generic netlink socket: %s",
                                      strerror(-r));
        }
        /* the shim execs the JVM: nothing may leak into it */
        fd = nl_socket_get_fd(sk);
        flags = fcntl(fd, F_GETFD);
        if (flags < 0 || fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) {
                r = -errno;
                nl_socket_free(sk);
                return util_error_set(err, r, "taskstats: FD_CLOEXEC: %s", strerror(-r));
        }
        *ret = sk;
        return 0;
}

static struct nl_msg *command_new(int family)
{
        struct nl_msg *msg = nlmsg_alloc();

        if (!msg)
                return NULL;
        if (!genlmsg_put(msg, NL_AUTO_PORT, NL_AUTO_SEQ, family, 0, 0, TASKSTATS_CMD_GET,
                         TASKSTATS_GENL_VERSION)) {
                nlmsg_free(msg);
                return NULL;
        }
        return msg;
}

/* The possible CPUs as the kernel's cpulist ("0-1"): any other CPU is rejected. */
static void possible_cpus(char *buf, size_t size)
{
        ssize_t n = util_read_at(AT_FDCWD, "/sys/devices/system/cpu/possible", buf, size);

        if (n > 0)
                return;
        snprintf(buf, size, "0-%d", get_nprocs_conf() - 1);
}

static int pending_add(struct collect_taskstats *t, const struct record *rec)
{
        if (t->npending == t->pending_capacity) {
                size_t capacity = t->pending_capacity ? t->pending_capacity * 2 : 8;
                struct record *p = realloc(t->pending, capacity * sizeof(*p));

                if (!p)
                        return -ENOMEM;
                t->pending = p;
                t->pending_capacity = capacity;
        }
        t->pending[t->npending++] = *rec;
        return 0;
}

/*
 * Register for exit records and wait for the acknowledgement. Exit records can arrive
 * before it (the registration takes effect first): they are kept for the first drain.
 */
static int listen_open(struct collect_taskstats *t, struct util_error *err)
{
        struct nl_msg *msg;
        uint32_t seq;
        int r, fd, size = EXIT_RCVBUF;

        r = socket_open(&t->listen, err);
        if (r < 0)
                return r;
        fd = nl_socket_get_fd(t->listen);
        r = nl_socket_set_nonblocking(t->listen);
        if (r < 0) {
                r = errno_from_nl(r);
                return util_error_set(err, r, "taskstats: O_NONBLOCK: %s", strerror(-r));
        }
        /* root may exceed rmem_max; otherwise take what SO_RCVBUF allows */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));

        t->buffer = malloc(EXIT_BUFFER_SIZE);
        if (!t->buffer)
                return util_error_set(err, -ENOMEM, "taskstats: out of memory");

        possible_cpus(t->cpumask, sizeof(t->cpumask));
        msg = command_new(t->family);
        if (!msg || nla_put_string(msg, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, t->cpumask) < 0) {
                nlmsg_free(msg);
                return util_error_set(err, -ENOMEM, "taskstats: out of memory");
        }
        /* auto-ack is on for this socket: the kernel answers with an ack or an error */
        r = nl_send_auto(t->listen, msg);
        seq = nlmsg_hdr(msg)->nlmsg_seq;
        nlmsg_free(msg);
        if (r < 0) {
                r = errno_from_nl(r);
                return util_error_set(err, r, "taskstats: sending the exit registration: %s",
                                      strerror(-r));
        }

        for (;;) {
                struct pollfd pfd = {.fd = fd, .events = POLLIN};
                ssize_t n = recv(fd, t->buffer, EXIT_BUFFER_SIZE, MSG_DONTWAIT);
                int len;

                if (n < 0) {
                        if (errno == ENOBUFS)
                                t->overflows++;
                        if (errno == EINTR || errno == ENOBUFS)
                                continue;
                        if (errno != EAGAIN && errno != EWOULDBLOCK)
                                return util_error_set(err, -errno, "taskstats: receiving: %s",
                                                      strerror(errno));
                        r = poll(&pfd, 1, ACK_TIMEOUT_MS);
                        if (r < 0 && errno != EINTR)
                                return util_error_set(err, -errno, "taskstats: poll: %s",
                                                      strerror(errno));
                        if (r == 0)
                                return util_error_set(
                                    err, -ETIMEDOUT,
                                    "taskstats: no answer to the exit registration");
                        continue;
                }
                len = (int)n;
                for (struct nlmsghdr *nlh = (struct nlmsghdr *)t->buffer; nlmsg_ok(nlh, len);
                     nlh = nlmsg_next(nlh, &len)) {
                        struct record rec;

                        if (nlh->nlmsg_type == NLMSG_ERROR && nlh->nlmsg_seq == seq) {
                                const struct nlmsgerr *e = nlmsg_data(nlh);

                                if (nlh->nlmsg_len < (uint32_t)nlmsg_size(sizeof(*e)))
                                        return util_error_set(err, -EBADMSG,
                                                              "taskstats: short acknowledgement");
                                if (e->error == -EPERM)
                                        return util_error_set(err, -EPERM,
                                                              "taskstats: registering for exit "
                                                              "records needs CAP_NET_ADMIN");
                                if (e->error == -EINVAL)
                                        return util_error_set(
                                            err, -EINVAL,
                                            "taskstats: exit registration refused "
                                            "(cpumask '%s', or not in the initial "
                                            "user and pid namespaces)",
                                            t->cpumask);
                                if (e->error < 0)
                                        return util_error_set(err, e->error,
                                                              "taskstats: exit registration: %s",
                                                              strerror(-e->error));
                                return 0;
                        }
                        if (nlh->nlmsg_type != t->family || parse_task_record(nlh, &rec) <= 0)
                                continue;
                        if (pending_add(t, &rec) < 0)
                                return util_error_set(err, -ENOMEM, "taskstats: out of memory");
                }
        }
}

struct collect_taskstats *collect_taskstats_open(bool listen_exits, struct util_error *err)
{
        struct collect_taskstats *t;
        int r;

        t = calloc(1, sizeof(*t));
        if (!t) {
                util_error_set(err, -ENOMEM, "taskstats: out of memory");
                return NULL;
        }
        r = socket_open(&t->query, err);
        if (r < 0)
                goto fail;
        /* one reply or one error per request: nothing else to wait for */
        nl_socket_disable_auto_ack(t->query);
        t->family = genl_ctrl_resolve(t->query, TASKSTATS_GENL_NAME);
        if (t->family < 0) {
                r = errno_from_nl(t->family);
                if (r == -ENOENT)
                        util_error_set(err, r,
                                       "taskstats: no %s generic netlink family "
                                       "(kernel without CONFIG_TASKSTATS)",
                                       TASKSTATS_GENL_NAME);
                else
                        util_error_set(err, r, "taskstats: resolving the %s family: %s",
                                       TASKSTATS_GENL_NAME, strerror(-r));
                goto fail;
        }
        t->query_cb = nl_cb_alloc(NL_CB_DEFAULT);
        if (!t->query_cb) {
                util_error_set(err, -ENOMEM, "taskstats: out of memory");
                goto fail;
        }
        if (listen_exits && listen_open(t, err) < 0)
                goto fail;
        return t;
fail:
        collect_taskstats_close(t);
        return NULL;
}

/* ---- queries ---- */

struct query_context {
        struct record record;
        bool have;
        int error; /* -errno from the kernel or from parsing */
};

static int on_reply(struct nl_msg *msg, void *arg)
{
        struct query_context *ctx = arg;
        int r = parse_task_record(nlmsg_hdr(msg), &ctx->record);

        if (r < 0)
                ctx->error = r;
        else if (r > 0)
                ctx->have = true;
        return NL_OK;
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
        struct query_context *ctx = arg;

        ctx->error = e->error < 0 ? e->error : -EIO;
        return NL_STOP;
}

/* One TASKSTATS_CMD_ATTR_PID request: 0 and *ret, or -errno (-ESRCH: no such task). */
static int query_task(struct collect_taskstats *t, pid_t pid, struct record *ret)
{
        struct query_context ctx = {.have = false};
        struct nl_msg *msg;
        int r;

        msg = command_new(t->family);
        if (!msg || nla_put_u32(msg, TASKSTATS_CMD_ATTR_PID, (uint32_t)pid) < 0) {
                nlmsg_free(msg);
                return -ENOMEM;
        }
        r = nl_send_auto(t->query, msg);
        nlmsg_free(msg);
        if (r < 0)
                return errno_from_nl(r);

        nl_cb_set(t->query_cb, NL_CB_VALID, NL_CB_CUSTOM, on_reply, &ctx);
        nl_cb_err(t->query_cb, NL_CB_CUSTOM, on_error, &ctx);
        r = nl_recvmsgs(t->query, t->query_cb);
        if (ctx.error < 0)
                return ctx.error;
        if (r < 0)
                return errno_from_nl(r);
        if (!ctx.have)
                return -EBADMSG;
        *ret = ctx.record;
        return 0;
}

static void closedirp(DIR **d)
{
        if (*d)
                closedir(*d);
}

int collect_taskstats_query(struct collect_taskstats *t, pid_t tgid,
                            struct collect_taskstats_totals *totals, struct util_error *err)
{
        _cleanup_(closedirp) DIR *d = NULL;
        struct collect_taskstats_totals sum = {0};
        char path[64];
        int n = 0;

        if (!t || !totals || tgid <= 0)
                return util_error_set(err, -EINVAL, "taskstats: invalid query of pid %d",
                                      (int)tgid);
        snprintf(path, sizeof(path), "/proc/%d/task", (int)tgid);
        d = opendir(path);
        if (!d) {
                if (errno == ENOENT || errno == ESRCH)
                        return util_error_set(err, -ESRCH, "taskstats: no process %d", (int)tgid);
                return util_error_set(err, -errno, "%s: %s", path, strerror(errno));
        }
        for (struct dirent *de; (errno = 0, de = readdir(d));) {
                struct record rec = {
                    0}; /* -O3 (the release build) cannot see query_task() fill it */
                int tid, r;

                if (de->d_name[0] == '.' || util_parse_int(de->d_name, &tid) < 0)
                        continue;
                r = query_task(t, tid, &rec);
                if (r == -ESRCH)
                        continue; /* exited since readdir: its exit record counts it */
                if (r == -EPERM)
                        return util_error_set(
                            err, r, "taskstats: querying task %d needs CAP_NET_ADMIN", tid);
                if (r < 0)
                        return util_error_set(err, r, "taskstats: querying task %d: %s", tid,
                                              strerror(-r));
                /* no mm: a zombie whose exit record was already sent */
                if (rec.stats.hiwater_rss == 0 && rec.stats.hiwater_vm == 0)
                        continue;
                add_record(&sum, &rec.stats);
                n++;
        }
        if (errno != 0)
                return util_error_set(err, -errno, "%s: %s", path, strerror(errno));
        add_totals(totals, &sum);
        return n;
}

/* ---- exit records ---- */

static bool wanted(pid_t tgid, const pid_t *pids, size_t npids)
{
        if (!pids)
                return true;
        for (size_t i = 0; i < npids; i++)
                if (pids[i] == tgid)
                        return true;
        return false;
}

int collect_taskstats_drain_exits(struct collect_taskstats *t, const pid_t *pids, size_t npids,
                                  struct collect_taskstats_totals *totals, struct util_error *err)
{
        int taken = 0, fd;

        if (!t || !totals)
                return util_error_set(err, -EINVAL, "taskstats: invalid arguments");
        if (!t->listen)
                return util_error_set(err, -EINVAL,
                                      "taskstats: not listening for exit records (opened without "
                                      "listen_exits)");

        for (size_t i = 0; i < t->npending; i++)
                if (wanted(t->pending[i].tgid, pids, npids)) {
                        add_record(totals, &t->pending[i].stats);
                        taken++;
                }
        t->npending = 0;

        fd = nl_socket_get_fd(t->listen);
        for (;;) {
                ssize_t n = recv(fd, t->buffer, EXIT_BUFFER_SIZE, MSG_DONTWAIT);
                int len;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == ENOBUFS) {
                                /* the kernel dropped records; what is queued is still good */
                                t->overflows++;
                                continue;
                        }
                        if (errno == EAGAIN || errno == EWOULDBLOCK)
                                return taken;
                        return util_error_set(err, -errno, "taskstats: receiving exit records: %s",
                                              strerror(errno));
                }
                len = (int)n;
                for (struct nlmsghdr *nlh = (struct nlmsghdr *)t->buffer; nlmsg_ok(nlh, len);
                     nlh = nlmsg_next(nlh, &len)) {
                        struct record rec;

                        if (nlh->nlmsg_type != t->family || parse_task_record(nlh, &rec) <= 0)
                                continue;
                        if (!wanted(rec.tgid, pids, npids))
                                continue;
                        add_record(totals, &rec.stats);
                        taken++;
                }
        }
}

int collect_taskstats_fd(const struct collect_taskstats *t)
{
        return t && t->listen ? nl_socket_get_fd(t->listen) : -1;
}

uint64_t collect_taskstats_overflows(const struct collect_taskstats *t)
{
        return t ? t->overflows : 0;
}

void collect_taskstats_close(struct collect_taskstats *t)
{
        if (!t)
                return;
        if (t->listen && t->cpumask[0]) {
                /* best effort: the kernel also drops listeners whose socket is gone */
                struct nl_msg *msg = command_new(t->family);

                nl_socket_disable_auto_ack(t->listen);
                if (msg &&
                    nla_put_string(msg, TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, t->cpumask) == 0)
                        (void)nl_send_auto(t->listen, msg);
                nlmsg_free(msg);
        }
        nl_socket_free(t->listen);
        nl_socket_free(t->query);
        if (t->query_cb)
                nl_cb_put(t->query_cb);
        free(t->buffer);
        free(t->pending);
        free(t);
}

/* SPDX-License-Identifier: Apache-2.0 */
/* Per-operator statistics and their JSON-lines snapshot. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent-internal.h"
#include "config.h"

static const char *const reason_names[JVA_REASON_COUNT] = {
    [JVA_REASON_FORCE] = "force-bytes",
    [JVA_REASON_PERIODIC] = "periodic",
    [JVA_REASON_PRESSURE] = "pressure",
};

static const char *const hook_state_names[] = {
    [JVA_HOOK_PENDING] = "pending",
    [JVA_HOOK_ON] = "on",
    [JVA_HOOK_OFF] = "off",
};

void jva_stats_init(struct jva_stats *stats)
{
        assert(stats);

        memset(stats, 0, sizeof(*stats));
        pthread_mutex_init(&stats->lock, NULL);
}

/* The entry for `name`, created on first use; NULL when the table is full. Lock held. */
static struct jva_operator *operator_locked(struct jva_stats *stats, const char *name)
{
        struct jva_operator *op;

        for (unsigned i = 0; i < stats->n_operators; i++)
                if (strcmp(stats->operators[i].name, name) == 0)
                        return &stats->operators[i];
        if (stats->n_operators == JVA_OPERATORS_MAX) {
                stats->dropped_operators++;
                return NULL;
        }
        op = &stats->operators[stats->n_operators++];
        memset(op, 0, sizeof(*op));
        snprintf(op->name, sizeof(op->name), "%s", name);
        return op;
}

void jva_stats_count_call(struct jva_stats *stats, const char *name, uint64_t requested_bytes)
{
        struct jva_operator *op;

        assert(stats);
        assert(name);
        pthread_mutex_lock(&stats->lock);
        op = operator_locked(stats, name);
        if (op) {
                op->calls++;
                op->requested_bytes += requested_bytes;
        }
        pthread_mutex_unlock(&stats->lock);
}

/* A pressure spill's reaction latency (0: not measured), under the stats lock. */
static void add_reaction(struct jva_operator *op, uint64_t reaction_ns)
{
        if (!reaction_ns)
                return;
        op->reactions++;
        op->reaction_ns_total += reaction_ns;
        if (reaction_ns > op->reaction_ns_max)
                op->reaction_ns_max = reaction_ns;
}

void jva_stats_count_spill(struct jva_stats *stats, const char *name, enum jva_reason reason,
                           uint64_t released, uint64_t spill_ns, uint64_t reaction_ns, bool failed)
{
        struct jva_operator *op;

        assert(stats);
        assert(name);
        pthread_mutex_lock(&stats->lock);
        op = operator_locked(stats, name);
        if (op) {
                if (failed) {
                        op->failed_spills++;
                } else {
                        op->forced_spills[reason]++;
                        if (released == 0)
                                op->empty_spills++;
                        op->released_bytes += released;
                }
                op->spill_ns_total += spill_ns;
                if (spill_ns > op->spill_ns_max)
                        op->spill_ns_max = spill_ns;
                add_reaction(op, reaction_ns);
        }
        pthread_mutex_unlock(&stats->lock);
}

void jva_stats_count_denial(struct jva_stats *stats, const char *name, enum jva_reason reason,
                            uint64_t holding, uint64_t reaction_ns)
{
        struct jva_operator *op;

        assert(stats);
        assert(name);
        pthread_mutex_lock(&stats->lock);
        op = operator_locked(stats, name);
        if (op) {
                op->forced_spills[reason]++;
                op->denials++;
                if (holding == 0)
                        op->empty_spills++;
                op->released_bytes += holding;
                add_reaction(op, reaction_ns);
        }
        pthread_mutex_unlock(&stats->lock);
}

void jva_stats_count_decision(struct jva_stats *stats, const char *name, uint64_t decision_ns)
{
        struct jva_operator *op;

        assert(stats);
        assert(name);
        pthread_mutex_lock(&stats->lock);
        op = operator_locked(stats, name);
        if (op) {
                op->decision_ns_total += decision_ns;
                if (decision_ns > op->decision_ns_max)
                        op->decision_ns_max = decision_ns;
        }
        pthread_mutex_unlock(&stats->lock);
}

void jva_stats_count_capped(struct jva_stats *stats, const char *name)
{
        struct jva_operator *op;

        assert(stats);
        assert(name);
        pthread_mutex_lock(&stats->lock);
        op = operator_locked(stats, name);
        if (op)
                op->capped++;
        pthread_mutex_unlock(&stats->lock);
}

bool jva_stats_get(struct jva_stats *stats, const char *name, struct jva_operator *ret)
{
        bool found = false;

        assert(stats);
        assert(name);
        assert(ret);
        pthread_mutex_lock(&stats->lock);
        for (unsigned i = 0; i < stats->n_operators; i++) {
                if (strcmp(stats->operators[i].name, name) == 0) {
                        *ret = stats->operators[i];
                        found = true;
                        break;
                }
        }
        pthread_mutex_unlock(&stats->lock);
        return found;
}

/* `s` as a JSON string body: quotes, backslashes and control characters escaped. */
static void put_json_string(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;
                if (c == '"' || c == '\\')
                        fprintf(f, "\\%c", c);
                else if (c < 0x20)
                        fprintf(f, "\\u%04x", c);
                else
                        fputc(c, f);
        }
        fputc('"', f);
}

static void write_operator(FILE *f, const struct jva_operator *op)
{
        uint64_t forced = 0;

        for (int r = 0; r < JVA_REASON_COUNT; r++)
                forced += op->forced_spills[r];
        fputs("{\"record\":\"operator\",\"operator\":", f);
        put_json_string(f, op->name);
        fprintf(f,
                ",\"calls\":%" PRIu64 ",\"requested_bytes\":%" PRIu64 ",\"forced_spills\":%" PRIu64
                ",\"forced_by\":{",
                op->calls, op->requested_bytes, forced);
        for (int r = 0; r < JVA_REASON_COUNT; r++)
                fprintf(f, "%s\"%s\":%" PRIu64, r ? "," : "", reason_names[r],
                        op->forced_spills[r]);
        fprintf(f,
                "},\"empty_spills\":%" PRIu64 ",\"failed_spills\":%" PRIu64
                ",\"released_bytes\":%" PRIu64 ",\"spill_ns_total\":%" PRIu64
                ",\"spill_ns_max\":%" PRIu64 ",\"reactions\":%" PRIu64
                ",\"reaction_ns_total\":%" PRIu64 ",\"reaction_ns_max\":%" PRIu64
                ",\"denials\":%" PRIu64 ",\"decision_ns_total\":%" PRIu64
                ",\"decision_ns_max\":%" PRIu64 ",\"capped\":%" PRIu64 "}\n",
                op->empty_spills, op->failed_spills, op->released_bytes, op->spill_ns_total,
                op->spill_ns_max, op->reactions, op->reaction_ns_total, op->reaction_ns_max,
                op->denials, op->decision_ns_total, op->decision_ns_max, op->capped);
}

int jva_stats_write(struct jva_stats *stats, const char *path, bool final,
                    const struct jva_hook *hooks, unsigned n_hooks,
                    const struct jva_pressure *pressure)
{
        struct jva_operator copy[JVA_OPERATORS_MAX];
        char tmp[JVA_PATH_MAX + 32];
        unsigned n;
        uint64_t dropped;
        FILE *f;
        int fd, r = 0;

        assert(stats);
        assert(path);
        pthread_mutex_lock(&stats->lock);
        n = stats->n_operators;
        memcpy(copy, stats->operators, n * sizeof(copy[0]));
        dropped = stats->dropped_operators;
        pthread_mutex_unlock(&stats->lock);

        snprintf(tmp, sizeof(tmp), "%s.%ld.tmp", path, (long)getpid());
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                close(fd);
                unlink(tmp);
                return r;
        }
        fprintf(f,
                "{\"record\":\"agent\",\"version\":\"%s\",\"pid\":%ld,\"final\":%s,"
                "\"operator_types_dropped\":%" PRIu64 "}\n",
                SPARKSHIM_VERSION, (long)getpid(), final ? "true" : "false", dropped);
        for (unsigned i = 0; i < n_hooks; i++) {
                fputs("{\"record\":\"hook\",\"hook\":", f);
                put_json_string(f, hooks[i].name);
                fprintf(f, ",\"state\":\"%s\"", hook_state_names[hooks[i].state]);
                if (hooks[i].state == JVA_HOOK_OFF) {
                        fputs(",\"reason\":", f);
                        put_json_string(f, hooks[i].reason);
                }
                fputs("}\n", f);
        }
        if (pressure) {
                fprintf(f,
                        "{\"record\":\"pressure\",\"source\":\"%s\",\"path\":", pressure->source);
                put_json_string(f, pressure->path);
                fprintf(f,
                        ",\"anon_bytes\":%" PRIu64 ",\"peak_anon_bytes\":%" PRIu64
                        ",\"threshold_bytes\":%" PRIu64 ",\"crossings\":%" PRIu64
                        ",\"under_pressure\":%s,\"read_errors\":%" PRIu64
                        ",\"execution_memory_bytes\":%" PRIu64
                        ",\"anon_over\":%s,\"episodes\":%" PRIu64 ",\"psi\":",
                        pressure->anon_bytes, pressure->peak_anon_bytes, pressure->threshold_bytes,
                        pressure->crossings, pressure->under_pressure ? "true" : "false",
                        pressure->read_errors, pressure->execution_memory_bytes,
                        pressure->anon_over ? "true" : "false", pressure->episodes);
                if (pressure->psi_on) {
                        fputs("{\"path\":", f);
                        put_json_string(f, pressure->psi_path ? pressure->psi_path : "");
                        fprintf(f,
                                ",\"trigger\":%s,\"stall_us\":%" PRIu64 ",\"window_us\":%" PRIu64
                                ",\"events\":%" PRIu64 ",\"over\":%s}",
                                pressure->psi_trigger ? "true" : "false", pressure->psi_stall_us,
                                pressure->psi_window_us, pressure->psi_events,
                                pressure->psi_over ? "true" : "false");
                } else {
                        fputs("null", f);
                }
                fputs(",\"heap\":", f);
                if (pressure->heap_on)
                        fprintf(f,
                                "{\"after_gc_bytes\":%" PRIu64 ",\"peak_after_gc_bytes\":%" PRIu64
                                ",\"max_bytes\":%" PRIu64 ",\"threshold_bytes\":%" PRIu64
                                ",\"crossings\":%" PRIu64 ",\"over\":%s}",
                                pressure->heap_after_gc_bytes, pressure->peak_heap_after_gc_bytes,
                                pressure->heap_max_bytes, pressure->heap_threshold_bytes,
                                pressure->heap_crossings, pressure->heap_over ? "true" : "false");
                else
                        fputs("null", f);
                fputs("}\n", f);
        }
        for (unsigned i = 0; i < n; i++)
                write_operator(f, &copy[i]);
        if (fflush(f) != 0 || ferror(f))
                r = -(errno ? errno : EIO);
        if (fclose(f) != 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                unlink(tmp);
        return r;
}

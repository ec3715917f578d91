/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The steps `sparkshim plan` and `sparkshim run` share: the policy loaded, the shim-level
 * overrides (fail mode, cgroup parent, name, grace, the agent) checked against it, the plan
 * computed from the executor's inputs, the executor's cgroup name; and `sparkshim plan`,
 * which prints the plan as JSON, as cgroup writes or as a pod's resources.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "inject.h"
#include "run.h"
#include "shim.h"
#include "util.h"

extern char **environ;

void shim_policy_load(const struct shim_options *o, struct policy *p)
{
        struct util_error err = {0};
        int r;

        policy_init_defaults(p);
        r = policy_load_file(o->policy_path, geteuid() == 0, p, &err);
        if (r == -ENOENT && !o->policy_explicit) {
                log_info("no policy at %s; using the built-in defaults", o->policy_path);
                policy_init_defaults(p);
                return;
        }
        if (r < 0)
                shim_die(SHIM_EXIT_POLICY, "%s", err.text);
}

/* The agent's overrides (on or off, the library) that the policy must allow. */
static void apply_agent_overrides(const struct shim_options *o, struct policy *p)
{
        struct util_error err = {0};
        enum policy_source source;

        if (o->agent >= 0) {
                source = o->agent_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if ((o->agent == 1) != p->agent.enabled &&
                    policy_check_override(p, POLICY_OVERRIDE_AGENT, source, o->agent_origin, &err) <
                        0)
                        shim_die(SHIM_EXIT_PLAN, "%s", err.text);
                p->agent.enabled = o->agent == 1;
        }
        if (o->agent_path) {
                const char *current = p->agent.path[0] ? p->agent.path : SPARKSHIM_AGENT_PATH;

                /* the JVM ends the library's path at the first '=' of -agentpath: */
                if (!shim_agent_option_path_ok(o->agent_path) || strchr(o->agent_path, '=') ||
                    strlen(o->agent_path) >= sizeof(p->agent.path))
                        shim_die(SHIM_EXIT_USAGE,
                                 "%s: '%s' is not a usable agent path; allowed: an absolute path "
                                 "without blanks, "
                                 "quotes, '\\', ',' or '='",
                                 o->agent_path_origin, o->agent_path);
                source = o->agent_path_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if (strcmp(o->agent_path, current) != 0 &&
                    policy_check_override(p, POLICY_OVERRIDE_AGENT, source, o->agent_path_origin,
                                          &err) < 0)
                        shim_die(SHIM_EXIT_PLAN, "%s", err.text);
                snprintf(p->agent.path, sizeof(p->agent.path), "%s", o->agent_path);
        }
}

/* Apply the shim-level overrides (fail mode, cgroup parent) that the policy must allow. */
static void apply_overrides(const struct shim_options *o, struct policy *p)
{
        struct util_error err = {0};
        enum policy_source source;

        if (o->fail_mode) {
                enum policy_fail_mode m;
                if (strcmp(o->fail_mode, "open") == 0)
                        m = POLICY_FAIL_OPEN;
                else if (strcmp(o->fail_mode, "closed") == 0)
                        m = POLICY_FAIL_CLOSED;
                else
                        shim_die(SHIM_EXIT_USAGE,
                                 "%s: '%s' is not a fail mode; allowed: open, closed",
                                 o->fail_mode_origin, o->fail_mode);
                source = o->fail_mode_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if (m != p->fail_mode && policy_check_override(p, POLICY_OVERRIDE_FAIL_MODE, source,
                                                               o->fail_mode_origin, &err) < 0)
                        shim_die(SHIM_EXIT_PLAN, "%s", err.text);
                p->fail_mode = m;
        }
        if (o->cgroup_parent) {
                char parent[POLICY_PATH_MAX];

                if (policy_normalize_cgroup_path(o->cgroup_parent, parent, sizeof(parent)) < 0)
                        shim_die(
                            SHIM_EXIT_USAGE,
                            "%s: '%s' is not a cgroup path; allowed: components of [A-Za-z0-9_.-], "
                            "none '.' or '..'",
                            o->cgroup_parent_origin, o->cgroup_parent);
                source = o->cgroup_parent_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if (strcmp(parent, p->cgroup_parent) != 0 &&
                    policy_check_override(p, POLICY_OVERRIDE_CGROUP_PARENT, source,
                                          o->cgroup_parent_origin, &err) < 0)
                        shim_die(SHIM_EXIT_PLAN, "%s", err.text);
                snprintf(p->cgroup_parent, sizeof(p->cgroup_parent), "%s", parent);
        }
        if (o->name) {
                /* whatever the name, a taken leaf is never shared (make_leaf): this gates the
                 * choice */
                source = o->name_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if (policy_check_override(p, POLICY_OVERRIDE_NAME, source, o->name_origin, &err) <
                    0)
                        shim_die(SHIM_EXIT_PLAN, "%s", err.text);
        }
        if (o->grace >= 0) {
                /* a shorter grace only hurts the executor's own shutdown; a longer one holds the
                 * node */
                source = o->grace_origin[0] == '-' ? POLICY_SOURCE_FLAG : POLICY_SOURCE_ENV;
                if ((unsigned)o->grace > p->grace_seconds &&
                    policy_check_override(p, POLICY_OVERRIDE_GRACE, source, o->grace_origin, &err) <
                        0)
                        shim_die(SHIM_EXIT_PLAN, "%s", err.text);
                p->grace_seconds = (unsigned)o->grace;
        }
        apply_agent_overrides(o, p);
}

static void compute_plan(struct shim_options *o, const struct policy *p, int argc, char **cmd,
                         struct policy_plan *plan)
{
        struct util_error err = {0};

        if (policy_inputs_from_spark_env(&o->inputs, environ, &err) < 0)
                shim_die(SHIM_EXIT_USAGE, "%s", err.text);
        if (argc > 0 && policy_inputs_from_command(&o->inputs, argc, cmd, &err) < 0)
                shim_die(SHIM_EXIT_USAGE, "%s", err.text);
        if (policy_inputs_from_env(&o->inputs, environ, &err) < 0)
                shim_die(SHIM_EXIT_USAGE, "%s", err.text);
        if (policy_inputs_check(&o->inputs, &err) < 0)
                shim_die(SHIM_EXIT_USAGE, "%s", err.text);
        if (policy_plan_compute(p, &o->inputs, plan, &err) < 0)
                shim_die(SHIM_EXIT_PLAN, "%s", err.text);
        if (plan->clamped[0])
                log_warn("clamped to the policy's bounds: %s", plan->clamped);
}

/*
 * The cgroup name: --name, else <app-id>-<executor-id> made safe, else executor-<pid>;
 * escaped so that it is never a kernel interface file's name (shim_cgroup_escape_name).
 */
void shim_executor_name(const struct shim_options *o, bool init_mode, char *buf, size_t size)
{
        char name[POLICY_NAME_MAX];
        size_t len;

        if (o->name) {
                if (!shim_cgroup_name_valid(o->name))
                        shim_die(SHIM_EXIT_USAGE,
                                 "%s: '%.200s' is not a valid cgroup name; allowed: 1-100 of "
                                 "[A-Za-z0-9_.-], not '.' or '..'",
                                 o->name_origin, o->name);
                shim_cgroup_escape_name(o->name, buf, size);
                return;
        }
        if (init_mode)
                snprintf(name, sizeof(name), "executor");
        else if (o->inputs.app_id[0] || o->inputs.executor_id[0])
                snprintf(name, sizeof(name), "%s%s%s", o->inputs.app_id,
                         o->inputs.app_id[0] && o->inputs.executor_id[0] ? "-" : "",
                         o->inputs.executor_id);
        else
                snprintf(name, sizeof(name), "executor-%d", (int)getpid());
        len = strnlen(name, sizeof(name));
        if (len > 100)
                name[len = 100] = '\0';
        for (size_t i = 0; i < len; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
                            name[i]))
                        name[i] = '_';
        if (!shim_cgroup_name_valid(name))
                snprintf(name, sizeof(name), "executor-%d", (int)getpid());
        shim_cgroup_escape_name(name, buf, size);
}

static int print_plan(const struct shim_options *o, const struct policy *policy,
                      const struct policy_plan *plan, const char *parent, const char *name)
{
        struct policy_write w[POLICY_WRITES_MAX];
        size_t n = policy_plan_writes(plan, w);
        const char *format = o->format ? o->format : "json";

        if (strcmp(format, "cgroup") == 0) {
                for (size_t i = 0; i < n; i++)
                        printf("%s %s\n", w[i].file, w[i].value);
        } else if (strcmp(format, "k8s") == 0) {
                char rc[32], rm[32], lc[32], lm[32];
                policy_format_cpu_quantity(plan->cpu_request_millicores, rc, sizeof(rc));
                policy_format_memory_quantity(plan->memory_request_bytes, rm, sizeof(rm));
                policy_format_cpu_quantity(plan->cpu_limit_millicores, lc, sizeof(lc));
                policy_format_memory_quantity(plan->memory_limit_bytes, lm, sizeof(lm));
                printf("resources:\n  requests:\n    cpu: \"%s\"\n    memory: \"%s\"\n"
                       "  limits:\n",
                       rc, rm);
                if (!plan->cpu_unlimited)
                        printf("    cpu: \"%s\"\n", lc);
                printf("    memory: \"%s\"\n", lm);
        } else {
                const struct policy_agent *a = &policy->agent;
                uint64_t threshold = policy_agent_threshold_bytes(a, plan);
                json_t *j = policy_plan_to_json(plan);
                json_t *cg = json_pack("{s:s, s:s}", "parent", parent, "name", name);
                json_t *agent =
                    json_pack("{s:b, s:s, s:o}", "enabled", a->enabled, "path",
                              a->path[0] ? a->path : SPARKSHIM_AGENT_PATH, "threshold_bytes",
                              threshold ? json_integer((json_int_t)threshold) : json_null());
                char *text;

                json_t *k8s = json_pack("{s:b}", "init", policy->kubernetes_init);

                if (!j || !cg || json_object_set_new(j, "cgroup", cg) < 0 || !agent ||
                    json_object_set_new(j, "agent", agent) < 0 || !k8s ||
                    json_object_set_new(j, "kubernetes", k8s) < 0)
                        shim_die(SHIM_EXIT_INTERNAL, "out of memory");
                text = json_dumps(j, JSON_INDENT(2));
                json_decref(j);
                if (!text)
                        shim_die(SHIM_EXIT_INTERNAL, "out of memory");
                puts(text);
                free(text);
        }
        return fflush(stdout) == 0 ? 0 : SHIM_EXIT_INTERNAL;
}

void shim_plan_compute(struct shim_options *o, int argc, char **cmd, struct policy *policy,
                       struct policy_plan *plan)
{
        shim_policy_load(o, policy);
        apply_overrides(o, policy);
        compute_plan(o, policy, argc, cmd, plan);
}

int shim_cmd_plan(struct shim_options *o, int argc, char **cmd)
{
        struct policy_plan plan;
        struct policy policy;
        char name[POLICY_NAME_MAX];

        shim_plan_compute(o, argc, cmd, &policy, &plan);
        shim_executor_name(o, o->init, name, sizeof(name));
        return print_plan(o, &policy, &plan, policy.cgroup_parent, name);
}

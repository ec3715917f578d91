/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sparkshim run`: one executor's run, in the order of its side effects. What can refuse the
 * start comes first (the plan, the agent's checks, the monitor's sinks); then the executor's
 * cgroup, the agent put into the launch, the monitor started, the command supervised to its
 * end, the final report and the cleanup. The steps share one struct run.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "inject.h"
#include "measure.h"
#include "run.h"
#include "shim.h"
#include "util.h"

extern char **environ;

/* One run: what its steps share, from the options to the monitor. */
struct run {
        struct shim_options *o;
        char **cmd;  /* the command as given */
        char **argv; /* the command to start: cmd, or a new argv with -agentpath: */
        bool pid1, init_mode;
        struct policy policy;
        struct policy_plan plan;
        struct policy_write w[POLICY_WRITES_MAX]; /* the plan's cgroup writes */
        size_t n;
        char name[POLICY_NAME_MAX]; /* the executor's cgroup name */
        struct shim_cgroup cg;
        bool enforced;
        char reason[UTIL_ERROR_TEXT_MAX]; /* why the plan is not enforced; "" when it is */
        struct shim_agent_run *agent;
        char agent_dir[POLICY_PATH_MAX]; /* the agent's private directory; "" when none */
        struct shim_monitor *monitor;
        bool measuring;
        unsigned interval; /* seconds between sample lines */
};

static void log_plan(const struct policy_plan *plan, const struct policy_write *w, size_t n,
                     const char *where)
{
        char limit[32] = "unlimited";

        if (!plan->cpu_unlimited)
                snprintf(limit, sizeof(limit), "%" PRIu64 "m", plan->cpu_limit_millicores);
        log_info("plan: cpu request %" PRIu64 "m limit %s; memory request %" PRIu64
                 " limit %" PRIu64 " bytes (burst ratio %.2f)",
                 plan->cpu_request_millicores, limit, plan->memory_request_bytes,
                 plan->memory_limit_bytes, plan->burst_ratio);
        for (size_t i = 0; i < n; i++)
                log_info("%s/%s = %s", where, w[i].file, w[i].value);
}

static bool monitor_rolling_term(void *data)
{
        return shim_monitor_rolling_term(data);
}

static void monitor_started(void *data, pid_t pid)
{
        shim_monitor_pid(data, pid);
}

static const char *nonempty(const char *a, const char *b)
{
        return a && *a ? a : b && *b ? b : NULL;
}

/*
 * Set up the executor's cgroup: enforced, or (fail_mode open, and measuring) a
 * measurement-only leaf.
 */
static bool setup_cgroup(struct run *run)
{
        const struct policy *policy = &run->policy;
        const char *cgroup_root = run->o->cgroup_root, *command = run->cmd[0];
        struct shim_cgroup *cg = &run->cg;
        struct shim_cgroup_host host = {0};
        struct util_error err = {0};
        int r;

        r = shim_cgroup_detect(cgroup_root, &host);
        if (r < 0)
                util_error_set(&err, r, "cannot inspect %s: %s", cgroup_root, strerror(-r));
        else if (run->init_mode)
                r = shim_cgroup_setup_init(&host, run->name, run->w, run->n, cg, &err);
        else
                r = shim_cgroup_setup_wrap(&host, policy->cgroup_parent, run->name, run->w, run->n,
                                           cg, &err);
        if (r >= 0)
                return true;
        if (policy->fail_mode == POLICY_FAIL_CLOSED)
                shim_die(SHIM_EXIT_CGROUP, "cannot enforce the plan: %s (fail_mode closed)",
                         err.text);
        snprintf(run->reason, sizeof(run->reason), "%s", err.text);
        log_warn("not enforcing the plan: %s; running %s unconstrained (fail_mode open)", err.text,
                 command);
        /* still measure in a leaf of our own where the hierarchy allows one */
        if (run->measuring &&
            (host.layout == SHIM_CGROUP_UNIFIED || host.layout == SHIM_CGROUP_HYBRID)) {
                r = run->init_mode ? shim_cgroup_setup_init(&host, run->name, NULL, 0, cg, &err)
                                   : shim_cgroup_setup_wrap(&host, policy->cgroup_parent, run->name,
                                                            NULL, 0, cg, &err);
                if (r >= 0)
                        log_info("measuring %s in %s (no limits)", command, cg->path);
                else
                        log_warn("no cgroup to measure %s in either: %s", command, err.text);
        }
        return false;
}

/* ---------------------------------------------------------------- the JVM agent */

/* The agent cannot be injected: refuse the start (fail_mode closed) or run without it. */
static void agent_unusable(const struct policy *p, struct shim_agent_run *run, const char *why)
{
        if (p->fail_mode == POLICY_FAIL_CLOSED)
                shim_die(SHIM_EXIT_CGROUP, "cannot inject the JVM agent: %s (fail_mode closed)",
                         why);
        log_warn("not injecting the JVM agent: %s; running without it (fail_mode open)", why);
        snprintf(run->reason, sizeof(run->reason), "%s", why);
        run->method = SHIM_AGENT_METHOD_NONE;
}

/*
 * Everything about the agent that can refuse the start, before anything is created: the
 * method, the library, an agent the command loads already.
 */
static void prepare_agent(struct run *run)
{
        const struct shim_options *o = run->o;
        const struct policy *p = &run->policy;
        const struct policy_agent *a = &p->agent;
        struct shim_agent_run *agent = run->agent;
        char **cmd = run->cmd;
        char where[64], stats[POLICY_PATH_MAX], why[UTIL_ERROR_TEXT_MAX], resolved[POLICY_PATH_MAX];
        struct util_error problem = {0};
        int r;

        *agent = (struct shim_agent_run){.enabled = a->enabled};
        if (!a->enabled) {
                snprintf(agent->reason, sizeof(agent->reason), "disabled by %s",
                         o->agent == 0 ? o->agent_origin : "the policy (agent.enabled is false)");
                return;
        }
        snprintf(agent->path, sizeof(agent->path), "%s",
                 a->path[0] ? a->path : SPARKSHIM_AGENT_PATH);

        r = shim_agent_find_loaded(agent->path, cmd, environ, where, sizeof(where), stats,
                                   sizeof(stats));
        if (r < 0)
                shim_die(SHIM_EXIT_INTERNAL, "out of memory");
        if (r > 0) {
                struct util_error perr = {0};

                /*
                 * The command loads the policy's agent with options of its own: a user value
                 * like any other. Two copies would both hook the same methods, so it is that
                 * one or none. Its statistics file is the user's choice: root does not read it.
                 */
                if (policy_check_override(p, POLICY_OVERRIDE_AGENT, POLICY_SOURCE_COMMAND, where,
                                          &perr) < 0)
                        shim_die(SHIM_EXIT_PLAN, "%s (the command loads the JVM agent itself)",
                                 perr.text);
                snprintf(agent->reason, sizeof(agent->reason),
                         "the command loads the agent already (%s); not injected a second time, "
                         "its statistics not read",
                         where);
                log_info("JVM agent: %s", agent->reason);
                return;
        }

        if (shim_agent_choose_method(a->injection, cmd[0], &agent->method) < 0) {
                snprintf(why, sizeof(why),
                         "agent.injection is agentpath, but %.200s is not a java launcher; allowed "
                         "there: auto or java_tool_options",
                         cmd[0]);
                agent_unusable(p, agent, why);
                return;
        }
        /* root loads it into the JVM: only root may be able to change it (docs/security.md) */
        if (util_trusted_file(agent->path, resolved, sizeof(resolved), &problem) < 0) {
                snprintf(why, sizeof(why),
                         "agent library %s: %s; allowed: a regular file owned by root and not "
                         "writable by group or others, in directories likewise",
                         agent->path, problem.text);
                agent_unusable(p, agent, why);
                return;
        }
        /* the JVM loads exactly the file that was checked */
        if (!shim_agent_option_path_ok(resolved) || strchr(resolved, '=')) {
                snprintf(why, sizeof(why),
                         "agent library %s resolves to %s, which -agentpath: cannot carry",
                         agent->path, resolved);
                agent_unusable(p, agent, why);
                return;
        }
        snprintf(agent->path, sizeof(agent->path), "%s", resolved);
}

/* The executor's cgroup directory for the agent's option cgroup=, or NULL for none. */
static const char *agent_cgroup_dir(const struct shim_cgroup *cg)
{
        /* memory.stat anon is the agent's pressure source; without it the agent reads its
         * own RssAnon (a hybrid host's leaf has no memory controller) */
        if (cg->leaf_fd < 0 || faccessat(cg->leaf_fd, "memory.stat", F_OK, 0) != 0)
                return NULL;
        if (shim_agent_option_path_ok(cg->path))
                return cg->path;
        log_warn("JVM agent: cgroup %s cannot be passed to the agent (',' or blanks); "
                 "it reads the JVM's own anonymous memory instead",
                 cg->path);
        return NULL;
}

/* When measuring: the statistics file in the run's private directory, into stats. */
static void agent_stats_file(struct run *run, char *stats, size_t size)
{
        struct util_error why = {0};

        if (!run->measuring)
                return;
        if (shim_agent_dir_make(run->agent_dir, sizeof(run->agent_dir), &why) < 0) {
                log_warn("JVM agent: no directory for its statistics: %s; the report has none",
                         why.text);
                run->agent_dir[0] = '\0';
                return;
        }
        snprintf(stats, size, "%s/stats.jsonl", run->agent_dir);
        snprintf(run->agent->stats_path, sizeof(run->agent->stats_path), "%s", stats);
}

/* The agent's threshold from the plan, said when the memory limit keeps it from being reached. */
static void agent_threshold(struct run *run)
{
        const struct policy_agent *a = &run->policy.agent;
        const struct policy_plan *plan = &run->plan;
        struct shim_agent_run *agent = run->agent;

        agent->threshold_bytes = policy_agent_threshold_bytes(a, plan);
        agent->threshold_of = a->threshold == POLICY_AGENT_THRESHOLD_REQUEST ? "request"
                              : a->threshold == POLICY_AGENT_THRESHOLD_LIMIT ? "limit"
                              : a->threshold == POLICY_AGENT_THRESHOLD_BYTES ? "bytes"
                                                                             : NULL;
        if (agent->threshold_bytes > plan->memory_limit_bytes)
                log_warn("JVM agent: threshold %" PRIu64 " bytes is above the memory limit %" PRIu64
                         " bytes: it is never reached",
                         agent->threshold_bytes, plan->memory_limit_bytes);
}

/*
 * The option string, then -agentpath:<library>=<options> after the java executable or in
 * JAVA_TOOL_OPTIONS. Returns the command to start (cmd, or a new argv), or NULL with the
 * agent's reason set.
 */
static char **agent_launch(struct run *run, const char *cgroup_dir, const char *stats)
{
        const struct policy_plan *plan = &run->plan;
        struct shim_agent_run *agent = run->agent;
        _cleanup_free_ char *arg = NULL, *value = NULL;
        char **argv = run->cmd;
        int r;

        r = shim_agent_options(
            &(struct shim_agent_params){
                .agent = &run->policy.agent,
                .threshold_bytes = agent->threshold_bytes,
                .limit_bytes = plan->memory_limit_bytes,
                .request_bytes = plan->memory_request_bytes,
                .cgroup_dir = cgroup_dir,
                .stats_path = stats[0] ? stats : NULL,
                .stats_interval_seconds = run->interval,
            },
            agent->options, sizeof(agent->options));
        if (r < 0 || asprintf(&arg, "-agentpath:%s=%s", agent->path, agent->options) < 0) {
                arg = NULL;
                snprintf(agent->reason, sizeof(agent->reason),
                         "cannot build the agent's options: %s", strerror(r < 0 ? -r : ENOMEM));
                return NULL;
        }
        if (agent->method == SHIM_AGENT_METHOD_AGENTPATH) {
                argv = shim_agent_argv(run->cmd, arg);
                if (!argv) {
                        snprintf(agent->reason, sizeof(agent->reason), "out of memory");
                        return NULL;
                }
                arg = NULL; /* the new argv holds it until exit */
        } else {
                value = shim_agent_java_tool_options(getenv(SHIM_AGENT_ENV), arg);
                if (!value || setenv(SHIM_AGENT_ENV, value, 1) < 0) {
                        snprintf(agent->reason, sizeof(agent->reason), "cannot set %s: %s",
                                 SHIM_AGENT_ENV, strerror(value ? errno : ENOMEM));
                        return NULL;
                }
        }
        return argv;
}

/*
 * Put the agent into the launch: the option string from the plan, the executor's cgroup and
 * a statistics file in a private directory (when measuring), then -agentpath: after the java
 * executable, or JAVA_TOOL_OPTIONS. Returns the command to start (cmd, or a new argv), or
 * NULL when the agent cannot be added and fail_mode is closed (logged).
 */
static char **inject_agent(struct run *run)
{
        struct shim_agent_run *agent = run->agent;
        char stats[POLICY_PATH_MAX] = "";
        const char *cgroup_dir;
        char **argv;

        if (!agent->enabled || agent->method == SHIM_AGENT_METHOD_NONE)
                return run->cmd;

        cgroup_dir = agent_cgroup_dir(&run->cg);
        agent_stats_file(run, stats, sizeof(stats));
        agent_threshold(run);
        argv = agent_launch(run, cgroup_dir, stats);
        if (argv) {
                agent->injected = true;
                log_info("JVM agent: %s -agentpath:%s=%s",
                         agent->method == SHIM_AGENT_METHOD_AGENTPATH ? "command line"
                                                                      : SHIM_AGENT_ENV,
                         agent->path, agent->options);
                return argv;
        }
        agent->method = SHIM_AGENT_METHOD_NONE;
        agent->options[0] = '\0';
        agent->stats_path[0] = '\0';
        shim_agent_dir_remove(run->agent_dir);
        run->agent_dir[0] = '\0';
        if (run->policy.fail_mode == POLICY_FAIL_CLOSED) {
                log_error("cannot inject the JVM agent: %s (fail_mode closed)", agent->reason);
                return NULL;
        }
        log_warn("not injecting the JVM agent: %s; running without it (fail_mode open)",
                 agent->reason);
        return run->cmd;
}

/* ---------------------------------------------------------------- the monitor */

/*
 * The monitor and its sinks, opened before anything is created: one that cannot be opened
 * stops us now (report.sink_failure refuse) or is said now.
 */
static void open_monitor(struct run *run)
{
        const struct shim_options *o = run->o;
        const struct policy *policy = &run->policy;
        const char *report_file = nonempty(o->report_file, policy->report_path);
        const char *report_socket = nonempty(o->report_socket, policy->report_socket);
        const char *prometheus = nonempty(o->prometheus, policy->report_prometheus);
        struct shim_monitor *monitor = NULL;
        struct util_error err = {0};
        struct util_error perr = {0};
        int r;

        /* the policy's templates were checked when it was loaded, the flags' are now */
        if (o->report_file && policy_template_check(o->report_file, false, &perr) < 0)
                shim_die(SHIM_EXIT_USAGE,
                         "--report: '%.200s' %s; allowed: a path whose file name may hold "
                         "{app_id}, {executor_id}, {name}",
                         o->report_file, perr.text);
        if (o->prometheus && policy_template_check(o->prometheus, true, &perr) < 0)
                shim_die(SHIM_EXIT_USAGE,
                         "--prometheus: '%.200s' %s; allowed: a path of a *.prom file whose name "
                         "may hold {app_id}, {executor_id}, {name}",
                         o->prometheus, perr.text);
        /* with nowhere to report, measuring would only cost the launch time */
        run->measuring = report_file || report_socket || prometheus || o->report_stdout ||
                         policy->rolling.enabled; /* rolling decides on what is measured */
        run->interval =
            o->report_interval > 0 ? (unsigned)o->report_interval : policy->report_interval_seconds;
        r = shim_monitor_open(
            &(struct shim_monitor_config){
                .file = report_file,
                .socket = report_socket,
                .prometheus = prometheus,
                .to_stdout = o->report_stdout,
                .interval_seconds = run->interval,
                .use_bpf = !o->no_bpf,
                .probe_root = o->probe_root,
                .use_taskstats = !o->no_taskstats,
                .sink_failure_refuse = policy->report_sink_failure == POLICY_SINK_REFUSE,
                .own_thread = true,
                .names = {.app_id = o->inputs.app_id,
                          .executor_id = o->inputs.executor_id,
                          .name = run->name},
                .rolling = policy->rolling,
            },
            &monitor, &err);
        if (r < 0)
                shim_die(SHIM_EXIT_REPORT, "%s", err.text);
        run->monitor = monitor;
}

/* When measuring: the monitor told about the agent and started on the run's cgroup. */
static void start_monitor(struct run *run)
{
        struct shim_monitor_identity id = {.app_id = run->o->inputs.app_id,
                                           .executor_id = run->o->inputs.executor_id,
                                           .name = run->name,
                                           .command = run->cmd[0],
                                           .argv = run->argv,
                                           .mode = run->init_mode ? "init" : "wrap"};

        if (!run->measuring)
                return;
        if (shim_monitor_set_agent(run->monitor, run->agent) < 0)
                log_warn("out of memory: the reports have no agent section");
        shim_monitor_start(run->monitor, &id, &run->plan, run->enforced, run->reason,
                           run->cg.leaf_fd, run->cg.leaf_fd >= 0 ? run->cg.path : NULL);
}

/* ---------------------------------------------------------------- the run */

/*
 * Everything that can refuse the start, before anything is created: the plan, the name, the
 * agent, the monitor's sinks.
 */
static void prepare_run(struct run *run, int argc)
{
        shim_plan_compute(run->o, argc, run->cmd, &run->policy, &run->plan);
        run->n = policy_plan_writes(&run->plan, run->w);
        shim_executor_name(run->o, run->init_mode, run->name, sizeof(run->name));
        prepare_agent(run);

        open_monitor(run);
}

/* Signals blocked, the orphans ours, and the executor's cgroup set up. */
static void enter_cgroup(struct run *run)
{
        int r;

        r = shim_signals_block();
        if (r < 0)
                shim_die(SHIM_EXIT_INTERNAL, "cannot block signals: %s", strerror(-r));
        if (!run->pid1 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
                log_warn(
                    "cannot become a subreaper: %s; orphans of the executor are reaped by init",
                    strerror(errno));

        run->enforced = setup_cgroup(run);
        if (run->cg.leaf_fd >= 0 && strcmp(run->cg.leaf_name, run->name) != 0) {
                /* the name was taken (make_leaf): the sinks' file names hold {name} */
                snprintf(run->name, sizeof(run->name), "%s", run->cg.leaf_name);
                shim_monitor_free(run->monitor);
                open_monitor(run);
        }
        if (run->enforced)
                log_plan(&run->plan, run->w, run->n, run->cg.path);
}

/* The command started and supervised until it exits: the exit status to use. */
static int supervise(struct run *run)
{
        struct util_error err = {0};
        int code;

        code = shim_supervise(
            &(struct shim_supervise_opts){
                .argv = run->argv,
                .cgroup_fd = run->cg.leaf_fd,
                .signal_group = run->o->signal_group,
                .grace_seconds = run->policy.grace_seconds,
                .cgroup = run->cg.leaf_fd >= 0 ? &run->cg : NULL,
                /* the monitor samples and writes in its own thread */
                .on_start = monitor_started,
                .on_rolling_term = monitor_rolling_term,
                .data = run->monitor,
            },
            &err);
        if (code < 0) {
                log_error("%s", err.text);
                code =
                    err.error == ENOMEM || !run->enforced ? SHIM_EXIT_INTERNAL : SHIM_EXIT_CGROUP;
        } else if (err.text[0]) {
                log_error("%s", err.text);
        }
        return code;
}

/* An OOM kill in the executor's cgroup: said, and the exit status is 137 (128 + SIGKILL). */
static int oom_status(const struct run *run, const struct util_memory_events *ev, int code)
{
        if (ev->oom_kill == 0)
                return code;
        log_error("%s was OOM-killed in %s: memory.events oom %" PRIu64 " oom_kill %" PRIu64
                  " max %" PRIu64 " high %" PRIu64 " low %" PRIu64 " (memory.max %" PRIu64 ")",
                  run->cmd[0], run->cg.path, ev->oom, ev->oom_kill, ev->max, ev->high, ev->low,
                  run->plan.memory_limit_bytes);
        return code == 128 + SIGKILL || code == 0 ? 128 + SIGKILL : code;
}

/* The final report (before the cgroup goes: it needs the final readings), then the cleanup. */
static void end_run(struct run *run, int code, const struct util_memory_events *ev)
{
        struct util_error err = {0};
        int r;

        if (shim_monitor_finish(run->monitor, code, ev, &err) < 0)
                log_warn("the final report did not reach every sink: %s", err.text);
        shim_monitor_free(run->monitor);
        if (run->cg.leaf_fd >= 0) {
                r = shim_cgroup_destroy(&run->cg);
                if (r < 0)
                        log_warn("cannot remove cgroup %s: %s", run->cg.path, strerror(-r));
        }
        shim_agent_dir_remove(run->agent_dir);
        /* reap what is already dead */
        while (waitpid(-1, NULL, WNOHANG) > 0)
                ;
}

int shim_cmd_run(struct shim_options *o, int argc, char **cmd)
{
        static struct shim_agent_run agent; /* 19 KiB: not on the stack */
        bool pid1 = getpid() == 1;
        struct run run = {
            .o = o,
            .cmd = cmd,
            .pid1 = pid1,
            .init_mode = o->init || pid1,
            .cg = SHIM_CGROUP_INIT,
            .agent = &agent,
        };
        struct util_memory_events ev;
        bool have_events = false;
        int code;

        if (argc == 0)
                shim_die(
                    SHIM_EXIT_USAGE,
                    "run: no command given; usage: sparkshim run [OPTIONS] -- COMMAND [ARGS...]");
        prepare_run(&run, argc);
        enter_cgroup(&run);
        run.argv = inject_agent(&run);
        if (!run.argv) {
                shim_monitor_free(run.monitor);
                if (run.cg.leaf_fd >= 0)
                        shim_cgroup_destroy(&run.cg);
                return SHIM_EXIT_CGROUP;
        }
        start_monitor(&run);

        code = supervise(&run);
        if (run.enforced && shim_cgroup_memory_events(&run.cg, &ev) == 0) {
                have_events = true;
                code = oom_status(&run, &ev, code);
        }
        end_run(&run, code, have_events ? &ev : NULL);
        if (run.argv != cmd) {
                free(run.argv[1]);
                free(run.argv);
        }
        return code;
}

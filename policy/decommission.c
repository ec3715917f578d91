/* SPDX-License-Identifier: Apache-2.0 */
/*
 * spark.decommission.enabled and spark.executor.decommission.signal as an executor's java
 * command line carries them (-D system properties). docs/rolling.md says why this is only a
 * hint: Spark puts neither on the command line itself, and the driver's conf wins.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "policy-internal.h"

static const char enabled_key[] = "spark.decommission.enabled";
static const char signal_key[] = "spark.executor.decommission.signal";

/* The value of "-D<key>=<value>" (or "" for "-D<key>"), else NULL. */
static const char *property_value(const char *arg, const char *key)
{
        size_t n = strlen(key);

        if (strncmp(arg, "-D", 2) != 0 || strncmp(arg + 2, key, n) != 0)
                return NULL;
        if (arg[2 + n] == '\0')
                return "";
        return arg[2 + n] == '=' ? arg + 3 + n : NULL;
}

/* ConfigBuilder.booleanConf: String.trim, then Scala's toBoolean ("true"/"false", any case). */
static enum policy_decommission spark_boolean(const char *value)
{
        const char *begin;
        size_t len;

        policy_trim(value, &begin, &len);
        if (len == 4 && strncasecmp(begin, "true", 4) == 0)
                return POLICY_DECOMMISSION_ON;
        if (len == 5 && strncasecmp(begin, "false", 5) == 0)
                return POLICY_DECOMMISSION_OFF;
        return POLICY_DECOMMISSION_INVALID;
}

/* The index of the argument holding the main class, or argc when it is not certain. */
static int main_class_index(int argc, char *const argv[])
{
        const char *main_class = NULL;

        if (policy_java_main_class(argc, argv, &main_class) != POLICY_JAVA_MAIN_CLASS ||
            !main_class)
                return argc;
        for (int i = 1; i < argc && argv[i]; i++)
                if (main_class >= argv[i] && main_class <= argv[i] + strlen(argv[i]))
                        return i;
        return argc;
}

void policy_decommission_from_command(int argc, char *const argv[],
                                      struct policy_decommission_conf *ret)
{
        struct policy_decommission_conf c = {.enabled = POLICY_DECOMMISSION_UNSET};
        int end = main_class_index(argc, argv);

        /* after the main class a -D is the program's argument, not a system property; the
         * last of a property wins, as in the JVM */
        for (int i = 1; i < end && i < argc && argv[i]; i++) {
                const char *v;

                if ((v = property_value(argv[i], enabled_key))) {
                        c.enabled = spark_boolean(v);
                        snprintf(c.origin, sizeof(c.origin), "-D%s", enabled_key);
                        snprintf(c.value, sizeof(c.value), "%s", v);
                } else if ((v = property_value(argv[i], signal_key))) {
                        const char *begin;
                        size_t len;

                        policy_trim(v, &begin, &len);
                        if (len >= sizeof(c.signal))
                                len = 0; /* no signal has such a name: Spark fails to register */
                        memcpy(c.signal, begin, len);
                        c.signal[len] = '\0';
                        c.signal_set = true;
                }
        }
        *ret = c;
}

const char *policy_decommission_name(enum policy_decommission d)
{
        switch (d) {
        case POLICY_DECOMMISSION_ON:
                return "true";
        case POLICY_DECOMMISSION_OFF:
                return "false";
        case POLICY_DECOMMISSION_INVALID:
                return "invalid";
        case POLICY_DECOMMISSION_UNSET:
                break;
        }
        return "unset";
}

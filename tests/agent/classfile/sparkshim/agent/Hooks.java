/* SPDX-License-Identifier: Apache-2.0 */
// The agent's hook class in Java, for tests/agent/classfile.sh: the same names and
// descriptors the edits call, recording the calls instead of deciding spills.
package sparkshim.agent;

public final class Hooks {
    public static volatile boolean armed;
    public static boolean deny;
    public static final StringBuilder calls = new StringBuilder();

    public static void acquire(Object self, long required, Object consumer) {
        calls.append("acquire(").append(required).append(',').append(consumer).append(')');
    }

    public static boolean page(Object self, long required) {
        calls.append("page(").append(required).append(')');
        return deny;
    }

    public static void insert(Object self, Object base, long offset, int length, long prefix,
            boolean isNull) {
        calls.append("insert(").append(base).append(',').append(offset).append(',').append(length)
                .append(',').append(prefix).append(',').append(isNull).append(')');
    }

    public static long grant(Object self, long amount) {
        calls.append("grant(").append(amount).append(')');
        return 0;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
// A TaskMemoryManager from a Spark the agent does not know: the hooked method is missing.
package org.apache.spark.memory;

public class TaskMemoryManager {
    public long acquireExecutionMemory(long required) {
        return required;
    }

    public static void main(String[] args) {
        System.out.println("unknown-spark granted=" + new TaskMemoryManager().acquireExecutionMemory(4096));
    }
}

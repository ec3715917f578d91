/* SPDX-License-Identifier: Apache-2.0 */
// A TaskMemoryManager from a Spark the agent does not know: the hooked method is missing.
// main also loads the other classes the agent hooks, each with a signature it does not know.
package org.apache.spark.memory;

import org.apache.spark.sql.execution.UnsafeFixedWidthAggregationMap;
import org.apache.spark.unsafe.map.BytesToBytesMap;
import org.apache.spark.util.collection.Spillable;

public class TaskMemoryManager {
    public long acquireExecutionMemory(long required) {
        return required;
    }

    public static void main(String[] args) {
        boolean spilled = new Spillable().maybeSpill(null, 1 << 30);
        boolean page = new BytesToBytesMap().allocateNewPage(1 << 20);
        Object buffer = new UnsafeFixedWidthAggregationMap().getAggregationBufferFromUnsafeRow("k");
        System.out.println("unknown-spark granted=" + new TaskMemoryManager().acquireExecutionMemory(4096)
                + " spilled=" + spilled + " page=" + page + " buffer=" + buffer);
    }
}

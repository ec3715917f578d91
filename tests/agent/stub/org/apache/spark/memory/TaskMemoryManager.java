/* SPDX-License-Identifier: Apache-2.0 */
// A stand-in for Spark's TaskMemoryManager: same method signatures, grants every request.
package org.apache.spark.memory;

public class TaskMemoryManager {
    public long pageSizeBytes() {
        return 1024;
    }

    public long acquireExecutionMemory(long required, MemoryConsumer requestingConsumer) {
        synchronized (this) {
            return required;
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
// A stand-in sorter: asks for pages like Spark's, and its spill() records what the agent must
// guarantee (the caller's thread, the manager's lock held) and re-enters the manager the way
// Spark's reset() does.
package org.apache.spark.util.collection.unsafe.sort;

import java.io.IOException;

import org.apache.spark.memory.MemoryConsumer;
import org.apache.spark.memory.TaskMemoryManager;

public final class UnsafeExternalSorter extends MemoryConsumer {
    private final TaskMemoryManager manager;
    private final Thread owner = Thread.currentThread();
    public boolean failNextSpill;
    public int spills;
    public int spillsWithoutLock;
    public int spillsFromOtherThreads;

    public UnsafeExternalSorter(TaskMemoryManager manager) {
        this.manager = manager;
    }

    public void insertPage() {
        used += manager.acquireExecutionMemory(1024, this);
    }

    @Override
    public long spill(long size, MemoryConsumer trigger) throws IOException {
        if (trigger != this) {
            return 0;
        }
        if (failNextSpill) {
            failNextSpill = false;
            throw new IOException("No space left on device (stub)");
        }
        spills++;
        if (!Thread.holdsLock(manager)) {
            spillsWithoutLock++;
        }
        if (Thread.currentThread() != owner) {
            spillsFromOtherThreads++;
        }
        long released = used;
        used = manager.acquireExecutionMemory(64, this); // a fresh pointer array, as reset()
        return released - used;
    }
}

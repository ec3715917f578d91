/* SPDX-License-Identifier: Apache-2.0 */
// A stand-in for Spark's MemoryConsumer with the members the agent uses (same signatures).
package org.apache.spark.memory;

import java.io.IOException;

public abstract class MemoryConsumer {
    protected long used;

    public long getUsed() {
        return used;
    }

    public abstract long spill(long size, MemoryConsumer trigger) throws IOException;
}

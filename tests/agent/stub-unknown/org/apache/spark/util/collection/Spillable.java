/* SPDX-License-Identifier: Apache-2.0 */
// A Spillable from a Spark the agent does not know: maybeSpill takes an int.
package org.apache.spark.util.collection;

public class Spillable {
    public boolean maybeSpill(Object collection, int currentMemory) {
        return false;
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
// Drives the stand-in classes: `StubJob ok` inserts pages and reports the spills the agent
// forced; `StubJob fail` makes the first forced spill throw and reports what the task saw.
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.util.collection.unsafe.sort.UnsafeExternalSorter;

public final class StubJob {
    public static void main(String[] args) {
        TaskMemoryManager manager = new TaskMemoryManager();
        UnsafeExternalSorter sorter = new UnsafeExternalSorter(manager);
        String outcome = "none";
        sorter.failNextSpill = args[0].equals("fail");
        for (int i = 0; i < 40; i++) {
            try {
                sorter.insertPage();
            } catch (RuntimeException e) {
                outcome = e.getClass().getName() + " cause=" + e.getCause().getClass().getName();
            }
        }
        System.out.println("stubjob spills=" + sorter.spills + " without_lock=" + sorter.spillsWithoutLock
                + " other_threads=" + sorter.spillsFromOtherThreads + " used=" + sorter.getUsed()
                + " thrown=" + outcome);
    }
}

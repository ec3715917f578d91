/* SPDX-License-Identifier: Apache-2.0 */
// Drives the stand-in classes: `StubJob ok` inserts pages and reports the spills the agent
// forced; `StubJob fail` makes the first forced spill throw and reports what the task saw.
// A second argument, seconds, keeps the JVM alive that long after the spills (so that a
// sample line and the Prometheus file of the run can see them).
import org.apache.spark.memory.TaskMemoryManager;
import org.apache.spark.util.collection.unsafe.sort.UnsafeExternalSorter;

public final class StubJob {
    public static void main(String[] args) throws InterruptedException {
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
        if (args.length > 1) {
            Thread.sleep(Long.parseLong(args[1]) * 1000);
        }
    }
}

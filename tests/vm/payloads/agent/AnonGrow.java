/* SPDX-License-Identifier: Apache-2.0 */
// A JVM whose anonymous memory grows, for the agent's cgroup pressure source (no Spark):
// allocates MB MiB of direct ByteBuffers in STEP MiB pieces (allocateDirect zeroes them, so
// every page is touched: malloc'd anon memory outside the Java heap), keeps them, creates
// READY, waits until RELEASE exists, then exits with the buffers still held (they go away
// with the process). Prints "anongrow mb=MB rss_anon=BYTES" at the top.
// Usage: AnonGrow MB STEP READY RELEASE
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;

public final class AnonGrow {
    static long rssAnon() throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("RssAnon:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return -1;
    }

    public static void main(String[] args) throws IOException, InterruptedException {
        int mb = Integer.parseInt(args[0]);
        int step = Integer.parseInt(args[1]);
        Path ready = Paths.get(args[2]);
        Path release = Paths.get(args[3]);
        List<ByteBuffer> held = new ArrayList<>();
        for (int done = 0; done < mb; done += step) {
            held.add(ByteBuffer.allocateDirect(Math.min(step, mb - done) << 20));
        }
        System.out.println("anongrow mb=" + mb + " buffers=" + held.size() + " rss_anon=" + rssAnon());
        System.out.flush();
        Files.createFile(ready);
        while (!Files.exists(release)) {
            Thread.sleep(20);
        }
    }
}

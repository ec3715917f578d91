/* SPDX-License-Identifier: Apache-2.0 */
// The real Spark job of the agent suite, its pressure tests and bench/spill: a global sort on
// local[2] of ROWS rows of a random key, the id and WIDTH more long columns (8 bytes each in
// Spark's UnsafeRow; sortjob.width=WIDTH, default 0), so that the two sorters of the sort
// stage hold from tens to hundreds of MB. Prints one line: rows, an order-sensitive checksum
// of the result, Spark's own spill metrics summed over every task by a listener, this
// process's anonymous memory (RssAnon of /proc/self/status, the source the agent reads
// without a cgroup, sampled every 10 ms by a daemon thread) just before the job ("baseAnon"),
// at its highest before the last stage (the sort) starts ("preSortAnon") and at its highest
// while the job runs ("peakAnon"), and the job's time.
// Usage: SortJob ROWS [sortjob.width=WIDTH] [key=value Spark settings...]
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.rand;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.api.java.function.Function2;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public final class SortJob {
    static final AtomicLong MEMORY_SPILLED = new AtomicLong();
    static final AtomicLong DISK_SPILLED = new AtomicLong();
    static final AtomicLong PEAK_ANON = new AtomicLong();
    /** PEAK_ANON when the latest stage was submitted: the last one is the sort. */
    static final AtomicLong PRE_STAGE_ANON = new AtomicLong();

    /** RssAnon of this process in bytes; -1 when /proc cannot tell. */
    static long rssAnon() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
                if (line.startsWith("RssAnon:")) {
                    return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
                }
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }

    /** Per partition: index, rows, checksum of the ids in order, first and last key, sorted. */
    static final class Checksum implements Function2<Integer, Iterator<Row>, Iterator<String>> {
        @Override
        public Iterator<String> call(Integer index, Iterator<Row> rows) {
            long n = 0, hash = 17;
            boolean sorted = true;
            double firstR = Double.NaN, lastR = Double.NaN;
            long lastId = Long.MIN_VALUE;
            while (rows.hasNext()) {
                Row row = rows.next();
                long id = row.getLong(0);
                double r = row.getDouble(1);
                if (n == 0) {
                    firstR = r;
                } else if (r < lastR || (r == lastR && id < lastId)) {
                    sorted = false;
                }
                lastR = r;
                lastId = id;
                hash = hash * 1000003L + id;
                n++;
            }
            List<String> out = new ArrayList<>();
            out.add(index + " " + n + " " + hash + " " + firstR + " " + lastR + " " + sorted);
            return out.iterator();
        }
    }

    public static void main(String[] args) throws InterruptedException {
        long rows = Long.parseLong(args[0]);
        int width = 0;
        SparkSession.Builder builder = SparkSession.builder()
                .master("local[2]")
                .appName("sparkshim-agent-sort")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.sql.adaptive.enabled", "false")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1");
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv[0].equals("sortjob.width")) {
                width = Integer.parseInt(kv[1]);
            } else {
                builder.config(kv[0], kv[1]);
            }
        }
        SparkSession spark = builder.getOrCreate();
        spark.sparkContext().setLogLevel("ERROR");
        spark.sparkContext().addSparkListener(new SparkListener() {
            @Override
            public void onStageSubmitted(SparkListenerStageSubmitted submitted) {
                PRE_STAGE_ANON.set(Math.max(PEAK_ANON.get(), rssAnon()));
            }

            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                TaskMetrics metrics = end.taskMetrics();
                if (metrics != null) {
                    MEMORY_SPILLED.addAndGet(metrics.memoryBytesSpilled());
                    DISK_SPILLED.addAndGet(metrics.diskBytesSpilled());
                }
            }
        });

        long base = rssAnon();
        PEAK_ANON.set(base);
        Thread sampler = new Thread(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                PEAK_ANON.accumulateAndGet(rssAnon(), Math::max);
                try {
                    Thread.sleep(10);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "sortjob-anon-sampler");
        sampler.setDaemon(true);
        sampler.start();

        long start = System.nanoTime();
        Column[] columns = new Column[2 + width];
        columns[0] = col("id");
        columns[1] = rand(42).as("r");
        for (int i = 0; i < width; i++) {
            columns[2 + i] = col("id").multiply(2 * i + 3).as("c" + i);
        }
        Dataset<Row> sorted = spark.range(0, rows).select(columns).orderBy(col("r"), col("id"));
        List<String> parts = sorted.javaRDD().mapPartitionsWithIndex(new Checksum(), true).collect();
        double seconds = (System.nanoTime() - start) / 1e9;
        sampler.interrupt();
        sampler.join();
        PEAK_ANON.accumulateAndGet(rssAnon(), Math::max);
        spark.stop(); // drains the listener bus: every task end has been counted

        long total = 0, checksum = 1;
        boolean ordered = true;
        double previousLast = Double.NEGATIVE_INFINITY;
        for (String part : parts) {
            String[] f = part.split(" ");
            long n = Long.parseLong(f[1]);
            total += n;
            checksum = checksum * 31 + Long.parseLong(f[2]);
            ordered &= Boolean.parseBoolean(f[5]);
            if (n > 0) {
                ordered &= Double.parseDouble(f[3]) >= previousLast;
                previousLast = Double.parseDouble(f[4]);
            }
        }
        System.out.printf("sortjob rows=%d checksum=%d ordered=%b partitions=%d "
                + "memoryBytesSpilled=%d diskBytesSpilled=%d baseAnon=%d preSortAnon=%d peakAnon=%d "
                + "seconds=%.3f%n",
                total, checksum, ordered, parts.size(), MEMORY_SPILLED.get(), DISK_SPILLED.get(),
                base, PRE_STAGE_ANON.get(), PEAK_ANON.get(), seconds);
    }
}

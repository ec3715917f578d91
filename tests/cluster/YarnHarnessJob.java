// SPDX-License-Identifier: Apache-2.0
// The Spark driver of tests/cluster/yarn.sh, in yarn client mode (its Spark configuration
// comes from -Dspark.* system properties):
//
//   java ... YarnHarnessJob LABEL WORKDIR WATCH_PID
//
// It waits for every executor it asked for, then runs
// 1. an identity job: every executor says, from inside its own JVM, its executor id, pid,
//    parent pid and the parent's executable, JAVA_HOME, java.home and command line (its
//    arguments separated by U+001F);
//    written to WORKDIR/LABEL.executors, one tab-separated line per executor;
// 2. the result job: a grouped aggregation across a shuffle between the executors, its
//    rows written to WORKDIR/LABEL.result (the file compared between runs).
// Then, with the application (its ApplicationMaster and executors) still running, it
// writes WORKDIR/LABEL.running (the application id) and waits up to 120 s for
// WORKDIR/LABEL.inspected, so that the test can look at the live processes. The JVM exits
// when process WATCH_PID (the test script) ends.
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import org.apache.spark.SparkEnv;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public final class YarnHarnessJob {
    private YarnHarnessJob() {
    }

    /** The JVM's own command line, its arguments separated by U+001F. */
    static String cmdline() {
        try {
            String raw = new String(Files.readAllBytes(Paths.get("/proc/self/cmdline")), StandardCharsets.UTF_8);
            if (raw.endsWith("\0")) {
                raw = raw.substring(0, raw.length() - 1);
            }
            return raw.replace('\0', '\u001f');
        } catch (IOException e) {
            return "?";
        }
    }

    /** One executor's view of itself: tab-separated, tabs and newlines replaced. */
    static String identity() {
        ProcessHandle self = ProcessHandle.current();
        ProcessHandle parent = self.parent().orElse(null);
        String[] fields = {
            SparkEnv.get().executorId(),
            Long.toString(self.pid()),
            parent == null ? "?" : Long.toString(parent.pid()),
            parent == null ? "?" : parent.info().command().orElse("?"),
            String.valueOf(System.getenv("JAVA_HOME")),
            System.getProperty("java.home"),
            cmdline(),
        };
        StringBuilder sb = new StringBuilder();
        for (String f : fields) {
            if (sb.length() > 0) {
                sb.append('\t');
            }
            sb.append(f.replace('\t', ' ').replace('\n', ' '));
        }
        return sb.toString();
    }

    static void write(Path file, List<String> lines) throws IOException {
        Path tmp = Paths.get(file + ".tmp");
        Files.write(tmp, lines, StandardCharsets.UTF_8);
        Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE);
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: YarnHarnessJob LABEL WORKDIR WATCH_PID");
            System.exit(2);
        }
        String label = args[0];
        Path work = Paths.get(args[1]);
        long watch = Long.parseLong(args[2]);
        Thread watcher = new Thread(() -> {
            while (ProcessHandle.of(watch).map(ProcessHandle::isAlive).orElse(false)) {
                try {
                    Thread.sleep(500);
                } catch (InterruptedException e) {
                    return;
                }
            }
            System.err.println("YarnHarnessJob: process " + watch + " ended");
            System.exit(3);
        });
        watcher.setDaemon(true);
        watcher.start();
        SparkSession spark = SparkSession.builder().appName("sparkshim-yarn-" + label).getOrCreate();
        try {
            JavaSparkContext sc = JavaSparkContext.fromSparkContext(spark.sparkContext());
            int want = Integer.parseInt(sc.getConf().get("spark.executor.instances"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            // the driver counts itself in the executor infos
            while (sc.sc().statusTracker().getExecutorInfos().length < want + 1) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(
                        "only " + (sc.sc().statusTracker().getExecutorInfos().length - 1)
                        + " of " + want + " executors registered within 120 s");
                }
                Thread.sleep(200);
            }
            System.err.println("YarnHarnessJob: " + label + ": " + want + " executors registered, app "
                               + sc.sc().applicationId());

            // 1. identities: enough short tasks that both executors run some
            List<Integer> seeds = new ArrayList<>();
            for (int i = 0; i < 8 * want; i++) {
                seeds.add(i);
            }
            List<String> seen = sc.parallelize(seeds, seeds.size()).map(i -> {
                Thread.sleep(250);
                return identity();
            }).collect();
            write(work.resolve(label + ".executors"), new ArrayList<>(new TreeSet<>(seen)));

            // 2. the result: an aggregation across a shuffle
            List<Row> rows = spark.range(0, 200000, 1, 6)
                .selectExpr("id % 13 AS k", "(id * 7919) % 1009 AS v")
                .groupBy("k")
                .agg(org.apache.spark.sql.functions.count("v").alias("n"),
                     org.apache.spark.sql.functions.sum("v").alias("s"),
                     org.apache.spark.sql.functions.max("v").alias("m"))
                .orderBy("k")
                .collectAsList();
            List<String> result = new ArrayList<>();
            for (Row r : rows) {
                result.add(r.getLong(0) + " " + r.getLong(1) + " " + r.getLong(2) + " " + r.getLong(3));
            }
            write(work.resolve(label + ".result"), result);

            // 3. let the test look at the live ApplicationMaster and executors
            Path running = work.resolve(label + ".running");
            write(running, List.of(sc.sc().applicationId()));
            Path inspected = work.resolve(label + ".inspected");
            deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!Files.exists(inspected) && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
        } finally {
            spark.stop();
        }
    }
}

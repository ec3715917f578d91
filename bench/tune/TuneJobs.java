/* SPDX-License-Identifier: Apache-2.0 */
// The recurring jobs of bench/tune (issue 13, "The loop on real Spark"): three shapes of job
// that the tuner is run against, each printing one line with a result checksum that does not
// depend on the settings being tuned (partitions, memory, cores), so that every iteration of
// a loop can be checked against the first:
//
//   cpu-light  ROWS rows in PARTS input partitions; each task sleeps SLEEP_MS, sums its
//              partition and the rows are then aggregated by id % 100 (one small shuffle):
//              little CPU per task, the executors mostly wait. With LOOKUP > 0 the tasks
//              look each row up in a table of LOOKUP MiB (a long[]) broadcast to every
//              executor, as an enrichment job holds a dimension table or a model: memory
//              the executor needs for as long as its tasks run, whatever else it does.
//   mem-sort   a global sort of ROWS rows (id, xxhash64 key, a long, a short string) read
//              from PARTS input partitions, followed by an aggregation of the sorted rows into
//              ROWS / 16 groups: the map side buffers a whole input partition (tens to hundreds
//              of MB) and spills when the heap is small; the sort side spills when
//              spark.sql.shuffle.partitions is small.
//   skew       ROWS rows of which SKEW percent have the key 0 and the rest 997 other keys,
//              hash-partitioned by key (spark.sql.shuffle.partitions) and sorted within each
//              partition: one task of that stage gets most of the rows. With PAYLOAD > 0 a
//              second skewed stage follows, the classic skew OOM: a string of PAYLOAD bytes a
//              row collected into one list per key (collect_list), so that the task of key 0
//              holds SKEW percent of ROWS x (PAYLOAD + ~50) bytes of JVM objects at once and
//              fails with java.lang.OutOfMemoryError when the heap is too small.
//
// Adaptive query execution is off by default (spark.sql.adaptive.enabled=false) so that
// spark.sql.shuffle.partitions is what the stages really use; any key=value argument that
// is not one of the job's sizes is passed to the SparkSession as a setting.
//
// Usage: TuneJobs JOB [rows=N] [parts=N] [sleep_ms=N] [lookup=MIB] [skew=PERCENT] [payload=BYTES]
//                     [spark.key=value ...]
// Prints: tunejob job=JOB rows=N checksum=HEX ordered=true|false seconds=S
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.collect_list;
import static org.apache.spark.sql.functions.concat;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.pmod;
import static org.apache.spark.sql.functions.size;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;
import static org.apache.spark.sql.functions.xxhash64;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.api.java.function.FlatMapFunction;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.api.java.function.Function2;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public final class TuneJobs {
    /** A 64-bit mix of one value (splitmix64's finaliser): row hashes that add up well. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /** cpu-light: sleep, then the sum of the partition's mixed ids. */
    static final class SleepSum implements FlatMapFunction<Iterator<Row>, Long> {
        private final long sleepMs;
        private final Broadcast<long[]> lookup; // null: none

        SleepSum(long sleepMs, Broadcast<long[]> lookup) {
            this.sleepMs = sleepMs;
            this.lookup = lookup;
        }

        @Override
        public Iterator<Long> call(Iterator<Row> rows) throws InterruptedException {
            long[] table = lookup == null ? null : lookup.value();
            Thread.sleep(sleepMs);
            long s = 0;
            while (rows.hasNext()) {
                long id = rows.next().getLong(0);
                s += mix(id);
                if (table != null) {
                    s += table[(int) Math.floorMod(mix(id), (long) table.length)];
                }
            }
            List<Long> out = new ArrayList<>();
            out.add(s);
            return out.iterator();
        }
    }

    /**
     * Per partition, for rows ordered by (long column A, long column B): index, rows, the
     * order-insensitive sum of the mixed (A, B), whether the partition is in order, its first
     * and last (A, B).
     */
    static final class OrderedSum implements Function2<Integer, Iterator<Row>, Iterator<String>> {
        private final int a, b;

        OrderedSum(int a, int b) {
            this.a = a;
            this.b = b;
        }

        @Override
        public Iterator<String> call(Integer index, Iterator<Row> rows) {
            long n = 0, s = 0, firstA = 0, firstB = 0, lastA = 0, lastB = 0;
            boolean sorted = true;
            while (rows.hasNext()) {
                Row row = rows.next();
                long va = row.getLong(a), vb = row.getLong(b);
                if (n == 0) {
                    firstA = va;
                    firstB = vb;
                } else if (va < lastA || (va == lastA && vb < lastB)) {
                    sorted = false;
                }
                lastA = va;
                lastB = vb;
                s += mix(va * 1000003L + vb);
                n++;
            }
            List<String> out = new ArrayList<>();
            out.add(index + " " + n + " " + s + " " + sorted + " " + firstA + " " + firstB + " " + lastA + " "
                    + lastB);
            return out.iterator();
        }
    }

    /** The checksum of OrderedSum's lines; ordered[0] says whether the whole result is in order. */
    static long combine(List<String> parts, boolean[] ordered, long[] rows, boolean global) {
        long s = 0, n = 0, prevA = Long.MIN_VALUE, prevB = Long.MIN_VALUE;
        boolean ok = true;
        for (String part : parts) {
            String[] f = part.split(" ");
            long pn = Long.parseLong(f[1]);
            n += pn;
            s += Long.parseLong(f[2]);
            ok &= Boolean.parseBoolean(f[3]);
            if (global && pn > 0) {
                long fa = Long.parseLong(f[4]), fb = Long.parseLong(f[5]);
                ok &= fa > prevA || (fa == prevA && fb >= prevB);
                prevA = Long.parseLong(f[6]);
                prevB = Long.parseLong(f[7]);
            }
        }
        ordered[0] = ok;
        rows[0] = n;
        return s;
    }

    public static void main(String[] args) {
        if (args.length < 1) {
            System.err.println("usage: TuneJobs cpu-light|mem-sort|skew [rows=N] [parts=N] [sleep_ms=N] "
                    + "[lookup=MIB] [skew=PERCENT] [payload=BYTES] [spark.key=value ...]");
            System.exit(2);
        }
        String job = args[0];
        Map<String, Long> sizes = new HashMap<>();
        switch (job) {
            case "cpu-light":
                sizes.put("rows", 2_000_000L);
                sizes.put("parts", 24L);
                sizes.put("sleep_ms", 1000L);
                sizes.put("lookup", 0L);
                break;
            case "mem-sort":
                sizes.put("rows", 3_000_000L);
                sizes.put("parts", 2L);
                break;
            case "skew":
                sizes.put("rows", 2_000_000L);
                sizes.put("parts", 4L);
                sizes.put("skew", 80L);
                sizes.put("payload", 64L);
                break;
            default:
                System.err.println("TuneJobs: unknown job '" + job + "'; allowed: cpu-light, mem-sort, skew");
                System.exit(2);
        }
        SparkSession.Builder builder = SparkSession.builder()
                .appName("tune-" + job)
                .config("spark.sql.adaptive.enabled", "false")
                // the checksums add with wrap-around; Spark 4 turns ANSI mode (overflow errors) on
                .config("spark.sql.ansi.enabled", "false");
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            if (kv.length != 2) {
                System.err.println("TuneJobs: argument '" + args[i] + "' is not key=value");
                System.exit(2);
            }
            if (sizes.containsKey(kv[0])) {
                sizes.put(kv[0], Long.parseLong(kv[1]));
            } else if (kv[0].startsWith("spark.")) {
                builder.config(kv[0], kv[1]);
            } else {
                System.err.println("TuneJobs: " + job + " has no size '" + kv[0] + "'; allowed: " + sizes.keySet()
                        + " or spark.* settings");
                System.exit(2);
            }
        }
        SparkSession spark = builder.getOrCreate();
        spark.sparkContext().setLogLevel("WARN");
        long rows = sizes.get("rows");
        int parts = (int) (long) sizes.get("parts");
        long start = System.nanoTime();
        long checksum;
        long[] n = {0};
        boolean[] ordered = {true};

        switch (job) {
            case "cpu-light": {
                Dataset<Row> in = spark.range(0, rows, 1, parts).toDF();
                Broadcast<long[]> lookup = null;
                long lookupMib = sizes.get("lookup");
                if (lookupMib > 0) {
                    long[] table = new long[(int) (lookupMib * 1024 * 1024 / 8)];
                    for (int i = 0; i < table.length; i++) {
                        table[i] = mix(i);
                    }
                    lookup = JavaSparkContext.fromSparkContext(spark.sparkContext()).broadcast(table);
                }
                List<Long> sums = in.javaRDD().mapPartitions(new SleepSum(sizes.get("sleep_ms"), lookup)).collect();
                checksum = 0;
                for (long s : sums) {
                    checksum += s;
                }
                List<Row> groups = in.groupBy(pmod(col("id"), lit(100)).as("g"))
                        .agg(count(lit(1)).as("n"), sum(col("id")).as("s")).collectAsList();
                for (Row g : groups) {
                    checksum += mix(g.getLong(0) * 1000003L + g.getLong(2));
                    n[0] += g.getLong(1);
                }
                break;
            }
            case "mem-sort": {
                Dataset<Row> in = spark.range(0, rows, 1, parts).select(col("id"), xxhash64(col("id")).as("k"),
                        col("id").multiply(31).as("a"), concat(lit("row-"), col("id").cast("string")).as("s"));
                Dataset<Row> sorted = in.orderBy(col("k"), col("id")).select(col("k"), col("id"));
                List<String> out = sorted.javaRDD().mapPartitionsWithIndex(new OrderedSum(0, 1), true).collect();
                checksum = combine(out, ordered, n, true);
                List<Row> groups = in.groupBy(pmod(col("k"), lit(Math.max(1, rows / 16))).as("g"))
                        .agg(count(lit(1)).as("n"), sum(col("a")).as("sa")).agg(sum(col("n")), sum(col("sa")))
                        .collectAsList();
                checksum = checksum * 31 + mix(groups.get(0).getLong(0)) + groups.get(0).getLong(1);
                break;
            }
            default: { // skew
                long skew = sizes.get("skew");
                Dataset<Row> in = spark.range(0, rows, 1, parts).select(
                        when(pmod(col("id"), lit(100)).lt(skew), lit(0L))
                                .otherwise(pmod(xxhash64(col("id")), lit(997)).plus(1)).as("key"),
                        xxhash64(col("id"), lit(7)).as("v"));
                Dataset<Row> sorted = in.repartition(col("key")).sortWithinPartitions(col("key"), col("v"));
                List<String> out = sorted.javaRDD().mapPartitionsWithIndex(new OrderedSum(0, 1), true).collect();
                checksum = combine(out, ordered, n, false);
                long payload = sizes.get("payload");
                if (payload > 0) {
                    // the list's order depends on the shuffle: sum its elements' hashes
                    Row g = in.select(col("key"), concat(col("v").cast("string"), lit(":"),
                            expr("repeat('x', " + payload + ")")).as("p"))
                            .groupBy(col("key")).agg(collect_list(col("p")).as("l"))
                            .select(col("key"), size(col("l")).as("n"),
                                    expr("aggregate(l, 0L, (acc, x) -> acc + xxhash64(x))").as("h"))
                            .agg(sum(col("n")), sum(xxhash64(col("key"), col("n"), col("h"))))
                            .collectAsList().get(0);
                    checksum = checksum * 31 + mix(g.getLong(0)) + g.getLong(1);
                }
                break;
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        spark.stop();
        System.out.printf("tunejob job=%s rows=%d checksum=%016x ordered=%b seconds=%.3f%n", job, n[0], checksum,
                ordered[0], seconds);
    }
}

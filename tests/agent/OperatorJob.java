/* SPDX-License-Identifier: Apache-2.0 */
// Real Spark jobs for the agent suite, one per kind of operator that spills, on local[2]:
//   agg-codegen    groupBy + sum/count, whole-stage codegen on  (hash aggregation map)
//   agg-nocodegen  the same with whole-stage codegen off        (TungstenAggregationIterator)
//   agg-object     groupBy + collect_list                        (ObjectHashAggregateExec: past
//                  spark.sql.objectHashAggregate.sortBased.fallbackThreshold keys, 128, its
//                  rows go to UnsafeKVExternalSorter.insertKV, an UnsafeExternalSorter)
//   repartition    hash repartition into 300 partitions          (UnsafeShuffleWriter's
//                  ShuffleExternalSorter: > spark.shuffle.sort.bypassMergeThreshold)
//   reduce-by-key  RDD reduceByKey                               (ExternalSorter on the map
//                  side, ExternalAppendOnlyMap on the reduce side)
//   group-by-key   RDD groupByKey                                (ExternalAppendOnlyMap)
// Each job runs under its own job group; a listener sums Spark's own spill metrics
// (memoryBytesSpilled, diskBytesSpilled) per group. One line per job:
//   opjob job=NAME rows=N checksum=C memoryBytesSpilled=M diskBytesSpilled=D seconds=S
// The checksum is a sum of mixed row hashes: independent of row and partition order.
// Usage: OperatorJob ROWS JOB[,JOB...]|all [key=value Spark settings...]
// (the RDD jobs take ROWS / 2 rows; every job groups into about a third as many keys)
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.collect_list;
import static org.apache.spark.sql.functions.count;
import static org.apache.spark.sql.functions.expr;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.pmod;
import static org.apache.spark.sql.functions.sum;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerStageSubmitted;
import org.apache.spark.scheduler.SparkListenerTaskEnd;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

import scala.Tuple2;

public final class OperatorJob {
    static final List<String> JOBS =
            Arrays.asList("agg-codegen", "agg-nocodegen", "agg-object", "repartition", "reduce-by-key",
                    "group-by-key");
    static final Map<Integer, String> STAGE_GROUP = new ConcurrentHashMap<>();
    static final Map<String, long[]> SPILLED = new ConcurrentHashMap<>();

    /** splitmix64's finaliser: spreads every input bit over the whole word. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    static long mix(long a, long b, long c) {
        return mix(mix(mix(a) + b) + c);
    }

    /** Per partition: "rows checksum" of rows of three longs. */
    static Iterator<String> digest(Iterator<long[]> rows) {
        long n = 0, checksum = 0;
        while (rows.hasNext()) {
            long[] r = rows.next();
            checksum += mix(r[0], r[1], r[2]);
            n++;
        }
        return Collections.singletonList(n + " " + checksum).iterator();
    }

    static String total(List<String> parts) {
        long n = 0, checksum = 0;
        for (String part : parts) {
            String[] f = part.split(" ");
            n += Long.parseLong(f[0]);
            checksum += Long.parseLong(f[1]);
        }
        return "rows=" + n + " checksum=" + checksum;
    }

    static List<String> digestRows(Dataset<Row> rows) {
        return rows.javaRDD().mapPartitions(it -> digest(new Iterator<long[]>() {
            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public long[] next() {
                Row r = it.next();
                return new long[] {r.getLong(0), r.getLong(1), r.getLong(2)};
            }
        })).collect();
    }

    static List<String> digestPairs(JavaPairRDD<Long, long[]> pairs) {
        return pairs.mapPartitions(it -> digest(new Iterator<long[]>() {
            @Override
            public boolean hasNext() {
                return it.hasNext();
            }

            @Override
            public long[] next() {
                Tuple2<Long, long[]> t = it.next();
                return new long[] {t._1(), t._2()[0], t._2()[1]};
            }
        })).collect();
    }

    static String run(SparkSession spark, String job, long rows) {
        // about rows / 3 distinct keys: the hash maps hold several pages (16 MiB each here)
        long keys = Math.max(1, rows / 3);
        switch (job) {
            case "agg-codegen":
            case "agg-nocodegen": {
                spark.conf().set("spark.sql.codegen.wholeStage", job.equals("agg-codegen"));
                Dataset<Row> in = spark.range(0, rows)
                        .select(col("id"), pmod(col("id").multiply(7919L), lit(keys)).as("k"));
                Dataset<Row> out = in.groupBy(col("k"))
                        .agg(sum(col("id")).as("s"), count(lit(1)).as("c"))
                        .select(col("k"), col("s"), col("c"));
                return total(digestRows(out));
            }
            case "agg-object": {
                // collect_list is a TypedImperativeAggregate: ObjectHashAggregateExec; the
                // lists' sums and sizes do not depend on the order the rows came in
                Dataset<Row> in = spark.range(0, rows)
                        .select(col("id"), pmod(col("id").multiply(7919L), lit(keys)).as("k"));
                Dataset<Row> out = in.groupBy(col("k"))
                        .agg(collect_list(col("id")).as("l"))
                        .select(col("k"), expr("aggregate(l, 0L, (a, x) -> a + x)"),
                                expr("CAST(size(l) AS BIGINT)"));
                if (!out.queryExecution().executedPlan().toString().contains("ObjectHashAggregate")) {
                    throw new IllegalStateException("agg-object: no ObjectHashAggregate in "
                            + out.queryExecution().executedPlan());
                }
                return total(digestRows(out));
            }
            case "repartition": {
                Dataset<Row> in = spark.range(0, rows).select(col("id"),
                        col("id").multiply(3L).as("b"), col("id").multiply(7L).as("c"));
                return total(digestRows(in.repartition(300, col("id"))));
            }
            case "reduce-by-key":
            case "group-by-key": {
                // boxed pairs are several times larger than Tungsten rows: half the rows
                long half = rows / 2;
                long rddKeys = Math.max(1, half / 3);
                JavaRDD<Long> ids = spark.range(0, half).javaRDD();
                JavaPairRDD<Long, Long> pairs =
                        ids.mapToPair(id -> new Tuple2<>(Math.floorMod(id * 7919L, rddKeys), id));
                JavaPairRDD<Long, long[]> out;
                if (job.equals("reduce-by-key")) {
                    out = pairs.mapValues(v -> new long[] {v, 1})
                            .reduceByKey((a, b) -> new long[] {a[0] + b[0], a[1] + b[1]}, 2);
                } else {
                    out = pairs.groupByKey(2).mapValues(vs -> {
                        long s = 0, c = 0;
                        for (long v : vs) {
                            s += v;
                            c++;
                        }
                        return new long[] {s, c};
                    });
                }
                return total(digestPairs(out));
            }
            default:
                throw new IllegalArgumentException("unknown job " + job + "; allowed: " + JOBS + " or all");
        }
    }

    public static void main(String[] args) {
        long rows = Long.parseLong(args[0]);
        List<String> jobs = args[1].equals("all") ? JOBS : Arrays.asList(args[1].split(","));
        SparkSession.Builder builder = SparkSession.builder()
                .master("local[2]")
                .appName("sparkshim-agent-operators")
                .config("spark.sql.shuffle.partitions", "2")
                .config("spark.sql.adaptive.enabled", "false")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.driver.bindAddress", "127.0.0.1");
        for (int i = 2; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            builder.config(kv[0], kv[1]);
        }
        SparkSession spark = builder.getOrCreate();
        spark.sparkContext().setLogLevel("ERROR");
        spark.sparkContext().addSparkListener(new SparkListener() {
            @Override
            public void onStageSubmitted(SparkListenerStageSubmitted submitted) {
                String group = submitted.properties() == null ? null
                        : submitted.properties().getProperty("spark.jobGroup.id");
                if (group != null) {
                    STAGE_GROUP.put(submitted.stageInfo().stageId(), group);
                }
            }

            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                TaskMetrics metrics = end.taskMetrics();
                String group = STAGE_GROUP.get(end.stageId());
                if (metrics != null && group != null) {
                    long[] s = SPILLED.computeIfAbsent(group, g -> new long[2]);
                    synchronized (s) {
                        s[0] += metrics.memoryBytesSpilled();
                        s[1] += metrics.diskBytesSpilled();
                    }
                }
            }
        });

        List<String> results = new ArrayList<>();
        for (String job : jobs) {
            spark.sparkContext().setJobGroup(job, job, false);
            long start = System.nanoTime();
            String result = run(spark, job, rows);
            results.add(String.format("%s seconds=%.1f", result, (System.nanoTime() - start) / 1e9));
        }
        spark.stop(); // drains the listener bus: every task end has been counted
        for (int i = 0; i < jobs.size(); i++) {
            long[] s = SPILLED.getOrDefault(jobs.get(i), new long[2]);
            String[] r = results.get(i).split(" seconds=");
            System.out.printf("opjob job=%s %s memoryBytesSpilled=%d diskBytesSpilled=%d seconds=%s%n",
                    jobs.get(i), r[0], s[0], s[1], r[1]);
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
// The job of the rolling suite (tests/cluster/rolling.sh): a large shuffle on a standalone
// cluster, long enough for an executor to be decommissioned in its middle.
//
//   stage 0 (map):    MAPS tasks; task i makes RECORDS records of a unique 64-bit key
//                     (splitmix64 of i * RECORDS + j, a bijection) and a value of VALUE
//                     pseudo-random (incompressible) bytes derived from the key, about
//                     MAPS * RECORDS * VALUE bytes of shuffle write in total, and is held
//                     MAP_SLEEP_MS after its records are made: a slow stage, so that an
//                     executor rolled in it migrates its shuffle files and exits while the
//                     stage still runs;
//   stage 1 (reduce): REDUCES partitions sorted by key (repartitionAndSortWithinPartitions),
//                     each checksummed in order (keys and every value byte), and then held
//                     REDUCE_SLEEP_MS.
//
// Prints one line: "rolljob rows=N checksum=C ordered=B partitions=P shuffleWrite=BYTES
// tasks=T failedTasks=F seconds=S" where checksum folds the partitions' checksums in
// partition order (order-sensitive; the same for the same arguments on any cluster) and
// shuffleWrite / tasks / failedTasks are summed by a listener over every task end.
// Usage: RollJob MAPS RECORDS VALUE MAP_SLEEP_MS REDUCES REDUCE_SLEEP_MS [key=value ...]
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.spark.HashPartitioner;
import org.apache.spark.SparkConf;
import org.apache.spark.Success$;
import org.apache.spark.api.java.JavaPairRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.executor.TaskMetrics;
import org.apache.spark.scheduler.SparkListener;
import org.apache.spark.scheduler.SparkListenerTaskEnd;

import scala.Tuple2;

public final class RollJob {
    static final AtomicLong SHUFFLE_WRITE = new AtomicLong();
    static final AtomicLong TASKS = new AtomicLong();
    static final AtomicLong FAILED_TASKS = new AtomicLong();

    static long mix(long z) {
        z += 0x9e3779b97f4a7c15L;
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    static byte[] value(long key, int size) {
        byte[] v = new byte[size];
        long s = key;
        for (int i = 0; i < size; i += 8) {
            s = mix(s);
            for (int b = 0; b < 8 && i + b < size; b++) {
                v[i + b] = (byte) (s >>> (8 * b));
            }
        }
        return v;
    }

    public static void main(String[] args) {
        final int maps = Integer.parseInt(args[0]);
        final long records = Long.parseLong(args[1]);
        final int size = Integer.parseInt(args[2]);
        final long mapSleepMs = Long.parseLong(args[3]);
        final int reduces = Integer.parseInt(args[4]);
        final long reduceSleepMs = Long.parseLong(args[5]);
        SparkConf conf = new SparkConf().setAppName("sparkshim-rolljob");
        for (int i = 6; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            conf.set(kv[0], kv[1]);
        }
        JavaSparkContext sc = new JavaSparkContext(conf);
        sc.sc().addSparkListener(new SparkListener() {
            @Override
            public void onTaskEnd(SparkListenerTaskEnd end) {
                TASKS.incrementAndGet();
                if (end.reason() != Success$.MODULE$) {
                    FAILED_TASKS.incrementAndGet();
                }
                TaskMetrics metrics = end.taskMetrics();
                if (metrics != null) {
                    SHUFFLE_WRITE.addAndGet(metrics.shuffleWriteMetrics().bytesWritten());
                }
            }
        });

        long start = System.nanoTime();
        List<Integer> indices = new ArrayList<>();
        for (int i = 0; i < maps; i++) {
            indices.add(i);
        }
        JavaPairRDD<Long, byte[]> pairs = sc.parallelize(indices, maps).flatMapToPair(i -> {
            return new Iterator<Tuple2<Long, byte[]>>() {
                long j = 0;

                @Override
                public boolean hasNext() {
                    if (j < records) {
                        return true;
                    }
                    if (j == records) {
                        j++;
                        try {
                            Thread.sleep(mapSleepMs);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                    }
                    return false;
                }

                @Override
                public Tuple2<Long, byte[]> next() {
                    long key = mix(i * records + j++);
                    return new Tuple2<>(key, value(key, size));
                }
            };
        });
        List<String> parts = pairs.repartitionAndSortWithinPartitions(new HashPartitioner(reduces))
                .mapPartitionsWithIndex((index, rows) -> {
                    long n = 0, hash = 17, last = 0;
                    boolean sorted = true;
                    while (rows.hasNext()) {
                        Tuple2<Long, byte[]> row = rows.next();
                        if (n > 0 && row._1() <= last) {
                            sorted = false;
                        }
                        last = row._1();
                        hash = hash * 1000003L + row._1();
                        for (byte b : row._2()) {
                            hash = hash * 31 + b;
                        }
                        n++;
                    }
                    Thread.sleep(reduceSleepMs);
                    List<String> out = new ArrayList<>();
                    out.add(index + " " + n + " " + hash + " " + sorted);
                    return out.iterator();
                }, true)
                .collect();
        double seconds = (System.nanoTime() - start) / 1e9;
        sc.stop(); // drains the listener bus: every task end has been counted

        long total = 0, checksum = 1;
        boolean ordered = true;
        for (String part : parts) {
            String[] f = part.split(" ");
            total += Long.parseLong(f[1]);
            checksum = checksum * 31 + Long.parseLong(f[2]);
            ordered &= Boolean.parseBoolean(f[3]);
        }
        System.out.printf("rolljob rows=%d checksum=%d ordered=%b partitions=%d shuffleWrite=%d "
                + "tasks=%d failedTasks=%d seconds=%.3f%n",
                total, checksum, ordered, parts.size(), SHUFFLE_WRITE.get(), TASKS.get(),
                FAILED_TASKS.get(), seconds);
    }
}

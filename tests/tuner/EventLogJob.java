/* SPDX-License-Identifier: Apache-2.0 */
// The Spark job of tests/tuner/eventlog-spark.sh: an application of known shape whose event
// log the reader must understand. On local[2,2] (2 task slots, 2 attempts per task):
//   job 0: 4 map tasks (the first attempt of partition 0 throws, its retry succeeds) ->
//          reduceByKey into 3 partitions with every sorter forced to spill
//          (spark.shuffle.spill.numElementsForceSpillThreshold) -> collect: 2 stages,
//          4 + 1 + 3 = 8 task attempts, 1 failed;
//   job 1: a count over 2 partitions: 1 stage, 2 tasks.
// With "lose-executor" (on local-cluster only: executors are JVMs of their own), the first
// attempt of job 1's first task halts its executor's JVM: a lost executor, an
// ExecutorLostFailure, and the task's retry on another executor: 3 attempts in job 1.
// Prints "ok <distinct keys> <count>".
// Usage: EventLogJob APP_NAME [lose-executor]
import java.util.ArrayList;
import java.util.List;

import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;

import scala.Tuple2;

public final class EventLogJob {
    public static void main(String[] args) {
        SparkConf conf = new SparkConf().setAppName(args[0]);
        try (JavaSparkContext sc = new JavaSparkContext(conf)) {
            List<Integer> numbers = new ArrayList<>();
            for (int i = 0; i < 20000; i++) {
                numbers.add(i);
            }
            JavaRDD<Integer> rdd = sc.parallelize(numbers, 4);
            long keys = rdd.mapToPair(i -> {
                TaskContext tc = TaskContext.get();
                if (tc.partitionId() == 0 && tc.attemptNumber() == 0) {
                    throw new IllegalStateException("eventlog test: the first attempt fails");
                }
                return new Tuple2<>(i % 5000, (long) i);
            }).reduceByKey(Long::sum, 3).collect().size();
            boolean lose = args.length > 1 && args[1].equals("lose-executor");
            long count = sc.parallelize(numbers, 2).map(i -> {
                TaskContext tc = TaskContext.get();
                if (lose && tc.partitionId() == 0 && tc.attemptNumber() == 0) {
                    Runtime.getRuntime().halt(1);
                }
                return i;
            }).count();
            System.out.println("ok " + keys + " " + count);
        }
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
// A Spark SQL query of six tables joined on one key, with broadcast joins and adaptive
// execution off so that every join is a sort-merge join: the plan Spark writes into its event
// log (SparkListenerSQLExecutionStart's sparkPlanInfo, a tree of children) nests about 8 JSON
// levels a join, deeper than the 64 levels the tuner's scanner once refused (issue 23).
// Table t<i> holds k = 0..ROWS-1 and v<i> = k * (i + 1): the join keeps ROWS rows, and the sum
// of v0..v5 is 21 * ROWS * (ROWS - 1) / 2. Prints "ok <rows> <sum>".
// Usage: SqlJoinJob APP_NAME ROWS
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public final class SqlJoinJob {
    public static void main(String[] args) {
        long rows = Long.parseLong(args[1]);
        SparkSession spark = SparkSession.builder().appName(args[0])
                .config("spark.sql.autoBroadcastJoinThreshold", "-1")
                .config("spark.sql.adaptive.enabled", "false")
                .config("spark.sql.shuffle.partitions", "4")
                .getOrCreate();
        try {
            for (int i = 0; i < 6; i++) {
                spark.range(0, rows).selectExpr("id AS k", "id * " + (i + 1) + " AS v" + i)
                        .createOrReplaceTempView("t" + i);
            }
            Row r = spark.sql("SELECT count(*), sum(v0 + v1 + v2 + v3 + v4 + v5) FROM t0"
                    + " JOIN t1 USING (k) JOIN t2 USING (k) JOIN t3 USING (k)"
                    + " JOIN t4 USING (k) JOIN t5 USING (k)").collectAsList().get(0);
            System.out.println("ok " + r.getLong(0) + " " + r.getLong(1));
        } finally {
            spark.stop();
        }
    }
}

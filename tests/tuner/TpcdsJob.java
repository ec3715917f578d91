/* SPDX-License-Identifier: Apache-2.0 */
// TPC-DS queries on Spark SQL (issue 23: the loop and ingest on real multi-join SQL): the
// tables of scripts/tpcds-data (one Parquet directory each) as views, then each named query
// of its queries/ directory, collected. Prints one line a query,
//   tpcds q=<name> rows=<n> checksum=<16 hex>
// and at the end
//   tpcds ok queries=<k> rows=<sum> checksum=<16 hex>
// The checksum is the sum of a hash of every row's cells, so it does not depend on the order
// of rows nor on the settings being tuned (partitions, heap): doubles are hashed at 9
// significant digits, since their sums change in the last bits with the order in which
// partitions are added; decimals are exact and hashed as they are. DuckDB's queries quote
// column aliases with double quotes (SQL's identifiers), which Spark's parser reads as
// strings: they are given to Spark in backquotes (outside '...' literals only).
// Usage: TpcdsJob APP_NAME DATA_DIR QUERY[,QUERY...] [REPEAT]
import java.io.File;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Locale;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;

public final class TpcdsJob {
    private static long mix(long h) {
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        return h ^ (h >>> 33);
    }

    private static String cell(Object v) {
        if (v == null) {
            return "\u0000null";
        }
        if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            return d == 0.0 ? "0" : String.format(Locale.ROOT, "%.9g", d);
        }
        if (v instanceof BigDecimal) {
            return ((BigDecimal) v).toPlainString();
        }
        return v.toString();
    }

    private static long rowHash(Row r) {
        long h = 17;
        for (int i = 0; i < r.length(); i++) {
            h = mix(h * 31 + cell(r.get(i)).hashCode() + i);
        }
        return h;
    }

    /** SQL's "identifier" as Spark's `identifier`, outside single-quoted literals. */
    private static String backquoted(String sql) {
        StringBuilder out = new StringBuilder(sql.length());
        boolean literal = false;
        for (int i = 0; i < sql.length(); i++) {
            char c = sql.charAt(i);
            if (c == '\'') {
                literal = !literal; // '' inside a literal toggles twice: still inside
            } else if (c == '"' && !literal) {
                c = '`';
            }
            out.append(c);
        }
        return out.toString();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: TpcdsJob APP_NAME DATA_DIR QUERY[,QUERY...] [REPEAT]");
            System.exit(2);
        }
        File data = new File(args[1]);
        int repeat = args.length > 3 ? Integer.parseInt(args[3]) : 1;
        SparkSession spark = SparkSession.builder().appName(args[0]).getOrCreate();
        try {
            File[] tables = new File(data, "tables").listFiles(File::isDirectory);
            if (tables == null || tables.length == 0) {
                throw new IllegalArgumentException(data + "/tables: no table directories");
            }
            for (File t : tables) {
                spark.read().parquet(t.getPath()).createOrReplaceTempView(t.getName());
            }
            long allRows = 0;
            long allSum = 0;
            int done = 0;
            for (int round = 0; round < repeat; round++) {
                for (String q : args[2].split(",")) {
                    String text = new String(Files.readAllBytes(new File(data, "queries/" + q + ".sql").toPath()),
                            StandardCharsets.UTF_8).trim();
                    if (text.endsWith(";")) {
                        text = text.substring(0, text.length() - 1);
                    }
                    text = backquoted(text);
                    List<Row> rows = spark.sql(text).collectAsList();
                    long sum = 0;
                    for (Row r : rows) {
                        sum += rowHash(r);
                    }
                    System.out.printf("tpcds q=%s rows=%d checksum=%016x%n", q, rows.size(), sum);
                    allRows += rows.size();
                    allSum += sum;
                    done++;
                }
            }
            System.out.printf("tpcds ok queries=%d rows=%d checksum=%016x%n", done, allRows, allSum);
        } finally {
            spark.stop();
        }
    }
}

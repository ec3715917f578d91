// SPDX-License-Identifier: Apache-2.0
// A real single-process YARN for tests/cluster/yarn.sh: Hadoop's MiniYARNCluster (one
// ResourceManager, one NodeManager) on the loopback interface, its directories under the
// current directory (the test's temporary directory).
//
//   java -cp "MINICLUSTER/*:CLASSES" YarnHarness WORKDIR WATCH_PID
//
// Once the ResourceManager has its real address, the cluster's configuration is written as
// WORKDIR/conf/{yarn-site,core-site}.xml (a HADOOP_CONF_DIR / YARN_CONF_DIR for a Spark
// driver) and WORKDIR/ready appears, holding the ResourceManager's address. The cluster stops
// and the JVM exits when WORKDIR/stop appears, when process WATCH_PID ends (the test script
// died) or on TERM/INT. A failure to start is printed to stderr with exit status 1.
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.MiniYARNCluster;

public final class YarnHarness {
    private static final Object LOCK = new Object();
    private static MiniYARNCluster cluster;
    private static boolean stopped;

    private YarnHarness() {
    }

    static YarnConfiguration configuration() {
        YarnConfiguration conf = new YarnConfiguration();
        // Room for Spark's ApplicationMaster (ExecutorLauncher) and two small executors:
        // each asks for 512m + 384m overhead, rounded up to the 256 MiB allocation unit.
        conf.setInt(YarnConfiguration.NM_PMEM_MB, 6144);
        conf.setInt(YarnConfiguration.NM_VCORES, 4);
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MINIMUM_ALLOCATION_MB, 256);
        conf.setInt(YarnConfiguration.RM_SCHEDULER_MAXIMUM_ALLOCATION_MB, 2048);
        // the executors are measured by sparkshim, not killed by the NodeManager's monitor
        conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
        conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
        // a full disk on a shared machine must not mark the only node unhealthy
        conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
        // keep each container's directory (launch_container.sh) after its application ends,
        // for the test to read; the whole tree goes with the test's temporary directory
        conf.setInt(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 3600);
        // the jar has no capacity-scheduler.xml: one queue that takes everything
        conf.set("yarn.scheduler.capacity.root.queues", "default");
        conf.setInt("yarn.scheduler.capacity.root.default.capacity", 100);
        conf.setFloat("yarn.scheduler.capacity.root.default.user-limit-factor", 1);
        conf.setInt("yarn.scheduler.capacity.root.default.maximum-capacity", 100);
        conf.set("yarn.scheduler.capacity.root.default.state", "RUNNING");
        conf.set("yarn.scheduler.capacity.root.default.acl_submit_applications", "*");
        conf.set("yarn.scheduler.capacity.root.default.acl_administer_queue", "*");
        conf.setFloat("yarn.scheduler.capacity.maximum-am-resource-percent", 1.0f);
        conf.setInt("yarn.scheduler.capacity.node-locality-delay", -1);
        // loopback only
        conf.set(YarnConfiguration.RM_HOSTNAME, "127.0.0.1");
        conf.set(YarnConfiguration.NM_ADDRESS, "127.0.0.1:0");
        conf.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, "127.0.0.1:0");
        conf.set(YarnConfiguration.NM_WEBAPP_ADDRESS, "127.0.0.1:0");
        conf.set(YarnConfiguration.RM_WEBAPP_ADDRESS, "127.0.0.1:0");
        conf.set("yarn.nodemanager.hostname", "127.0.0.1");
        // everything Hadoop writes stays in the test's directory
        conf.set("fs.defaultFS", "file:///");
        conf.set("hadoop.tmp.dir", new File("hadoop-tmp").getAbsolutePath());
        conf.setBoolean(YarnConfiguration.LOG_AGGREGATION_ENABLED, false);
        return conf;
    }

    static void writeXml(Configuration conf, File file) throws IOException {
        File tmp = new File(file.getPath() + ".tmp");
        try (OutputStream out = new FileOutputStream(tmp)) {
            conf.writeXml(out);
        }
        Files.move(tmp.toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE);
    }

    static void stop(String why) {
        synchronized (LOCK) {
            if (stopped) {
                return;
            }
            stopped = true;
            System.err.println("YarnHarness: stopping (" + why + ")");
            if (cluster != null) {
                cluster.stop();
            }
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: YarnHarness WORKDIR WATCH_PID");
            System.exit(2);
        }
        File work = new File(args[0]);
        long watch = Long.parseLong(args[1]);
        File confDir = new File(work, "conf");
        File stopFile = new File(work, "stop");
        if (!confDir.isDirectory() && !confDir.mkdirs()) {
            throw new IOException(confDir + ": cannot create the configuration directory");
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> stop("JVM shutdown")));

        YarnConfiguration conf = configuration();
        synchronized (LOCK) {
            // its work, local and log directories go to ./target/<name>
            cluster = new MiniYARNCluster("sparkshim-yarn", 1, 1, 1);
            cluster.init(conf);
            cluster.start();
        }
        // start() can return before the ResourceManager wrote its bound port back
        Configuration live = cluster.getConfig();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (live.get(YarnConfiguration.RM_ADDRESS, "").endsWith(":0")) {
            if (System.nanoTime() > deadline) {
                System.err.println("YarnHarness: the ResourceManager has no address after 60 s");
                System.exit(1);
            }
            Thread.sleep(100);
        }
        // and the NodeManager must have registered before a job asks for containers
        deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (cluster.getResourceManager().getRMContext().getRMNodes().isEmpty()) {
            if (System.nanoTime() > deadline) {
                System.err.println("YarnHarness: no NodeManager registered after 60 s");
                System.exit(1);
            }
            Thread.sleep(100);
        }
        writeXml(live, new File(confDir, "yarn-site.xml"));
        Configuration core = new Configuration(false);
        core.set("fs.defaultFS", "file:///");
        writeXml(core, new File(confDir, "core-site.xml"));
        String rm = live.get(YarnConfiguration.RM_ADDRESS);
        File ready = new File(work, "ready");
        File readyTmp = new File(work, "ready.tmp");
        Files.write(readyTmp.toPath(), (rm + "\n").getBytes(StandardCharsets.UTF_8));
        Files.move(readyTmp.toPath(), ready.toPath(), StandardCopyOption.ATOMIC_MOVE);
        System.err.println("YarnHarness: ready, ResourceManager at " + rm);

        String why;
        while (true) {
            if (stopFile.exists()) {
                why = "asked to";
                break;
            }
            if (!ProcessHandle.of(watch).map(ProcessHandle::isAlive).orElse(false)) {
                why = "process " + watch + " ended";
                break;
            }
            Thread.sleep(250);
        }
        stop(why);
        System.exit(0);
    }
}

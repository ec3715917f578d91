// SPDX-License-Identifier: Apache-2.0
package sparkshim.k8s;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.SparkPod;
import org.apache.spark.deploy.k8s.features.KubernetesExecutorCustomFeatureConfigStep;

/**
 * A Spark executor feature step (spark.kubernetes.executor.pod.featureSteps) that gives the
 * executor container the resources of sparkshim's plan, and, where the policy says so
 * (kubernetes.init), makes "sparkshim run --init" its command. See sparkshim-k8s(7).
 *
 * <p>The plan is sparkshim's own: the step runs "sparkshim plan --format json" with the
 * executor's settings and the container's environment (what "sparkshim run --init" sees
 * in the pod) and copies the numbers; it computes nothing itself.
 *
 * <p>Compiled against Spark 3.5 and run on 3.5 and 4.x: it uses only the fabric8 model's
 * plain getters and setters and one builder call whose binary form is the same in the
 * fabric8 6.x and 7.x that these Spark releases ship.
 */
public class SparkshimExecutorFeatureStep implements KubernetesExecutorCustomFeatureConfigStep {
  /** The sparkshim binary the driver runs to plan. */
  public static final String CONF_BINARY = "spark.sparkshim.binary";
  /**
   * The policy the plan is made with: the one the executor image's sparkshim uses. Unset:
   * sparkshim's own default (its build's path, the built-in defaults when that is absent),
   * as "sparkshim run --init" in the pod takes it.
   */
  public static final String CONF_POLICY = "spark.sparkshim.policy";
  /** The sparkshim binary inside the executor image (init mode). */
  public static final String CONF_CONTAINER_BINARY = "spark.sparkshim.container.binary";
  /** The image's entrypoint, run by sparkshim when the container has no command of its own. */
  public static final String CONF_ENTRYPOINT = "spark.sparkshim.container.entrypoint";
  /** Seconds sparkshim plan may take. */
  public static final String CONF_TIMEOUT = "spark.sparkshim.plan.timeoutSeconds";

  static final String DEFAULT_BINARY = "/usr/bin/sparkshim";
  static final String DEFAULT_ENTRYPOINT = "/opt/entrypoint.sh";
  static final long DEFAULT_TIMEOUT = 30;

  private SparkConf conf;

  @Override
  public void init(KubernetesExecutorConf config) {
    this.conf = config.sparkConf();
  }

  /** The plan's flags for the executor settings of the Spark conf that sparkshim takes as flags. */
  static List<String> planFlags(SparkConf conf) {
    List<String> flags = new ArrayList<>();
    String millicores = conf.get("spark.executor.millicores", "").trim();
    String requestCores = conf.get("spark.kubernetes.executor.request.cores", "").trim();
    String limitCores = conf.get("spark.kubernetes.executor.limit.cores", "").trim();

    if (!millicores.isEmpty()) {
      flags.add("--millicores");
      flags.add(millicores);
    } else if (!requestCores.isEmpty()) {
      flags.add("--millicores");
      flags.add(cores(requestCores));
    }
    if (!limitCores.isEmpty()) {
      flags.add("--limit-millicores");
      flags.add(cores(limitCores));
    }
    String overhead = conf.get("spark.executor.memoryOverhead", "").trim();
    if (!overhead.isEmpty()) {
      flags.add("--memory-overhead");
      flags.add(overhead);
    }
    if (conf.getBoolean("spark.memory.offHeap.enabled", false)) {
      flags.add("--offheap");
      flags.add(conf.get("spark.memory.offHeap.size", "0").trim());
    }
    String pyspark = conf.get("spark.executor.pyspark.memory", "").trim();
    if (!pyspark.isEmpty()) {
      flags.add("--pyspark-memory");
      flags.add(pyspark);
    }
    String burst = conf.get("spark.executor.memoryBurst.ratio", "").trim();
    if (!burst.isEmpty()) {
      flags.add("--burst-ratio");
      flags.add(burst);
    }
    return flags;
  }

  /*
   * A Kubernetes CPU quantity ("2", "0.5", "500m") as --millicores takes it: a bare integer
   * there means millicores, so whole cores get a ".0". Anything else goes as it is, for
   * sparkshim to accept or refuse.
   */
  private static String cores(String quantity) {
    return quantity.matches("[0-9]+") ? quantity + ".0" : quantity;
  }

  @Override
  public SparkPod configurePod(SparkPod pod) {
    if (conf == null) {
      throw new IllegalStateException(
          "sparkshim feature step: init was not called; list the step in "
              + "spark.kubernetes.executor.pod.featureSteps");
    }
    String binary = conf.get(CONF_BINARY, DEFAULT_BINARY);
    String policy = conf.get(CONF_POLICY, "").trim();
    List<String> flags = planFlags(conf);
    Container original = pod.container();

    List<String> command = new ArrayList<>(Arrays.asList(binary, "plan", "--format", "json"));
    if (!policy.isEmpty()) {
      command.add("--policy");
      command.add(policy);
    }
    command.addAll(flags);
    JsonNode plan = runPlan(command, original.getEnv(),
        conf.getLong(CONF_TIMEOUT, DEFAULT_TIMEOUT));

    long cpuRequest = number(plan, binary, "cpu", "request_millicores", false);
    long cpuLimit = number(plan, binary, "cpu", "limit_millicores", true);
    long memoryRequest = number(plan, binary, "memory", "request_bytes", false);
    long memoryLimit = number(plan, binary, "memory", "limit_bytes", false);
    JsonNode init = plan.path("kubernetes").path("init");

    /* a copy: the container Spark's steps built is left as it was */
    Container container = new ContainerBuilder(original).build();
    ResourceRequirements resources =
        container.getResources() != null ? container.getResources() : new ResourceRequirements();
    Map<String, Quantity> requests = new LinkedHashMap<>();
    Map<String, Quantity> limits = new LinkedHashMap<>();
    if (resources.getRequests() != null) {
      requests.putAll(resources.getRequests());
    }
    if (resources.getLimits() != null) {
      limits.putAll(resources.getLimits());
    }
    requests.put("cpu", new Quantity(cpuRequest + "m"));
    requests.put("memory", memory(memoryRequest));
    if (cpuLimit < 0) {
      limits.remove("cpu"); /* the policy's overcommit "unlimited" */
    } else {
      limits.put("cpu", new Quantity(cpuLimit + "m"));
    }
    limits.put("memory", memory(memoryLimit));
    resources.setRequests(requests);
    resources.setLimits(limits);
    container.setResources(resources);

    if (init.asBoolean(false)) {
      List<String> wrapped = new ArrayList<>(Arrays.asList(
          conf.get(CONF_CONTAINER_BINARY, DEFAULT_BINARY), "run", "--init"));
      wrapped.addAll(flags);
      wrapped.add("--");
      if (original.getCommand() != null && !original.getCommand().isEmpty()) {
        wrapped.addAll(original.getCommand());
      } else {
        wrapped.add(conf.get(CONF_ENTRYPOINT, DEFAULT_ENTRYPOINT));
      }
      container.setCommand(wrapped); /* the args ("executor") stay the entrypoint's */
    }
    return new SparkPod(pod.pod(), container);
  }

  /* Bytes as a quantity: whole MiB as Spark writes them ("2432Mi"), else plain bytes. */
  private static Quantity memory(long bytes) {
    long mib = 1024L * 1024L;
    return bytes % mib == 0 ? new Quantity((bytes / mib) + "Mi") : new Quantity(Long.toString(bytes));
  }

  private static long number(JsonNode plan, String binary, String section, String key,
      boolean nullable) {
    JsonNode v = plan.path(section).path(key);
    if (nullable && v.isNull()) {
      return -1;
    }
    if (!v.canConvertToLong() || !v.isIntegralNumber() || v.asLong() <= 0) {
      throw new IllegalStateException(
          "sparkshim feature step: sparkshim plan's JSON has no positive integer " + section + "."
              + key + " (got " + v + "); is " + binary + " a sparkshim of this release?");
    }
    return v.asLong();
  }

  /*
   * Run sparkshim plan in the environment the container will have (its literal env values:
   * SPARK_EXECUTOR_MEMORY, SPARK_EXECUTOR_CORES, SPARK_JAVA_OPT_n ...), nothing of the
   * driver's, and parse its JSON. Any failure is one exception naming the command.
   */
  static JsonNode runPlan(List<String> command, List<EnvVar> env, long timeoutSeconds) {
    String shown = String.join(" ", command);
    ProcessBuilder pb = new ProcessBuilder(command);
    Map<String, String> penv = pb.environment();
    penv.clear();
    penv.put("PATH", "/usr/sbin:/usr/bin:/sbin:/bin");
    if (env != null) {
      for (EnvVar e : env) {
        if (e.getName() != null && e.getValue() != null && e.getValueFrom() == null) {
          penv.put(e.getName(), e.getValue());
        }
      }
    }
    pb.redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null")));
    Process p;
    try {
      p = pb.start();
    } catch (IOException e) {
      throw new IllegalStateException("sparkshim feature step: cannot run '" + shown + "': "
          + e.getMessage() + " (set " + CONF_BINARY + " to the sparkshim binary on the driver)", e);
    }
    try {
      /* both pipes read beside the wait, so that neither a full pipe nor a hung sparkshim
       * holds the driver longer than the timeout */
      StreamReader out = new StreamReader(p.getInputStream(), "sparkshim-plan-stdout");
      StreamReader err = new StreamReader(p.getErrorStream(), "sparkshim-plan-stderr");
      out.start();
      err.start();
      if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException("sparkshim feature step: '" + shown + "' took more than "
            + timeoutSeconds + " s (" + CONF_TIMEOUT + ")");
      }
      out.join(TimeUnit.SECONDS.toMillis(5));
      err.join(TimeUnit.SECONDS.toMillis(5));
      int code = p.exitValue();
      if (code != 0) {
        String why = err.text().trim().replace('\n', ' ');
        throw new IllegalStateException("sparkshim feature step: '" + shown + "' failed (exit "
            + code + "): " + (why.isEmpty() ? "no message" : why));
      }
      if (out.failure() != null) {
        throw new IllegalStateException("sparkshim feature step: cannot read the output of '"
            + shown + "': " + out.failure());
      }
      try {
        JsonNode plan = new ObjectMapper().readTree(out.text());
        if (plan == null || !plan.isObject()) {
          throw new IllegalStateException("sparkshim feature step: '" + shown
              + "' printed no JSON plan (" + (out.text().isEmpty() ? "no output" : "not an object")
              + ")");
        }
        return plan;
      } catch (IOException e) {
        throw new IllegalStateException("sparkshim feature step: '" + shown
            + "' printed no JSON plan: " + firstLine(e.getMessage()), e);
      }
    } catch (InterruptedException e) {
      p.destroyForcibly();
      Thread.currentThread().interrupt();
      throw new IllegalStateException("sparkshim feature step: interrupted while running '"
          + shown + "'", e);
    }
  }

  private static String firstLine(String s) {
    return s == null ? "no message" : s.split("\n", 2)[0];
  }

  private static byte[] readAll(InputStream in) throws IOException {
    ByteArrayOutputStream buf = new ByteArrayOutputStream();
    byte[] chunk = new byte[8192];
    for (int n; (n = in.read(chunk)) > 0; ) {
      if (buf.size() > (1 << 20)) {
        throw new IOException("more than 1 MiB of output");
      }
      buf.write(chunk, 0, n);
    }
    return buf.toByteArray();
  }

  /* one of sparkshim's pipes, read to its end in a thread of its own */
  private static final class StreamReader extends Thread {
    private final InputStream in;
    private volatile String text = "";
    private volatile String failure;

    StreamReader(InputStream in, String name) {
      super(name);
      setDaemon(true);
      this.in = in;
    }

    @Override
    public void run() {
      try {
        text = new String(readAll(in), StandardCharsets.UTF_8);
      } catch (IOException e) {
        failure = e.getMessage();
        text = "(cannot read it: " + e.getMessage() + ")";
      }
    }

    String text() {
      return text;
    }

    String failure() {
      return failure;
    }
  }
}

// SPDX-License-Identifier: Apache-2.0
//
// Builds executor pods with Spark's own KubernetesExecutorBuilder over a
// KubernetesExecutorConf (no cluster), once as Spark builds them and once with the
// feature steps of spark.kubernetes.executor.pod.featureSteps, and prints what the
// executor container got:
//
//   java -cp "SPARK_K8S_JARS/*:sparkshim-k8s.jar:CLASSES" K8sExecutorPod CASES
//
// CASES has one case a line: NAME<TAB>key=value<TAB>key=value ... (Spark conf entries).
// For each case it prints one line
//
//   POD NAME cpu.request=<millicores> cpu.limit=<millicores|none> memory.request=<bytes>
//       memory.limit=<bytes> quantities=<requests/limits as Spark writes them>
//       command=<json> args=<json> env=<json: the literal environment, blanks JSON-escaped>
//       rest=<same|changed: ...>
//
// where rest compares the whole pod with the baseline pod (Spark without the step) after
// the four resource values and the container command are put back to the baseline's, or
//
//   ERROR NAME <the exception's message>
//
// when building the pod failed. tests/cluster/k8s.sh checks these lines against
// sparkshim plan.
import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.api.model.Quantity;
import io.fabric8.kubernetes.api.model.ResourceRequirements;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.SecurityManager;
import org.apache.spark.SparkConf;
import org.apache.spark.deploy.k8s.KubernetesConf$;
import org.apache.spark.deploy.k8s.KubernetesExecutorConf;
import org.apache.spark.deploy.k8s.SparkPod;
import org.apache.spark.resource.ResourceProfile;
import org.apache.spark.resource.ResourceProfile$;
import org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBuilder;

public class K8sExecutorPod {
  static final String STEPS = "spark.kubernetes.executor.pod.featureSteps";

  public static void main(String[] args) throws Exception {
    List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
    for (String line : lines) {
      if (line.trim().isEmpty() || line.startsWith("#")) {
        continue;
      }
      String[] fields = line.split("\t");
      SparkConf conf = new SparkConf(false)
          .set("spark.app.name", "sparkshim-k8s-test")
          .set("spark.app.id", "spark-0123456789abcdef")
          .set("spark.kubernetes.container.image", "apache/spark:test")
          .set("spark.kubernetes.namespace", "spark")
          .set("spark.kubernetes.executor.podNamePrefix", "sparkshim-test")
          .set("spark.driver.host", "driver-svc.spark.svc")
          .set("spark.driver.port", "7078");
      for (int i = 1; i < fields.length; i++) {
        int eq = fields[i].indexOf('=');
        conf.set(fields[i].substring(0, eq), fields[i].substring(eq + 1));
      }
      String name = fields[0];
      SparkConf plain = conf.clone().remove(STEPS);
      try {
        SparkPod base = build(plain);
        SparkPod got = build(conf);
        System.out.println("POD " + name + " " + describe(got.container())
            + " rest=" + rest(base, got));
      } catch (Exception e) {
        Throwable t = e;
        while (t.getCause() != null && !(t instanceof IllegalStateException)) {
          t = t.getCause();
        }
        System.out.println("ERROR " + name + " " + t.getClass().getSimpleName() + ": "
            + String.valueOf(t.getMessage()).replace('\n', ' '));
      }
    }
  }

  static SparkPod build(SparkConf conf) {
    ResourceProfile profile = ResourceProfile$.MODULE$.reInitDefaultProfile(conf);
    KubernetesExecutorConf ec = KubernetesConf$.MODULE$.createExecutorConf(
        conf, "1", "spark-0123456789abcdef", scala.Option.<Pod>empty(),
        profile.id());
    SecurityManager sm = new SecurityManager(conf, SecurityManager.$lessinit$greater$default$2(),
        SecurityManager.$lessinit$greater$default$3());
    return new KubernetesExecutorBuilder().buildFromFeatures(ec, sm, null, profile).pod();
  }

  /* The executor container (the one Spark built: the SparkPod's) put back into its pod. */
  static Pod whole(SparkPod p) {
    return new PodBuilder(p.pod()).editOrNewSpec().addToContainers(p.container()).endSpec()
        .build();
  }

  static String describe(Container c) {
    ResourceRequirements r = c.getResources();
    Map<String, Quantity> req = r == null || r.getRequests() == null ? new LinkedHashMap<>()
        : r.getRequests();
    Map<String, Quantity> lim = r == null || r.getLimits() == null ? new LinkedHashMap<>()
        : r.getLimits();
    return "cpu.request=" + millicores(req.get("cpu")) + " cpu.limit=" + millicores(lim.get("cpu"))
        + " memory.request=" + bytes(req.get("memory")) + " memory.limit="
        + bytes(lim.get("memory")) + " quantities=" + req + "/" + lim
        + " command=" + Serialization.asJson(c.getCommand())
        + " args=" + Serialization.asJson(c.getArgs()) + " env=" + literalEnv(c);
  }

  /* The container's literal environment (no valueFrom) as a JSON object. */
  static String literalEnv(Container c) {
    Map<String, String> env = new LinkedHashMap<>();
    if (c.getEnv() != null) {
      for (io.fabric8.kubernetes.api.model.EnvVar e : c.getEnv()) {
        if (e.getValue() != null && e.getValueFrom() == null) {
          env.put(e.getName(), e.getValue());
        }
      }
    }
    return Serialization.asJson(env).replace(" ", "\\u0020");
  }

  static String millicores(Quantity q) {
    if (q == null) {
      return "none";
    }
    return Quantity.getAmountInBytes(q).multiply(BigDecimal.valueOf(1000)).stripTrailingZeros()
        .toPlainString();
  }

  static String bytes(Quantity q) {
    return q == null ? "none" : Quantity.getAmountInBytes(q).stripTrailingZeros().toPlainString();
  }

  /* "same", or what differs, once the step's four values and command are the baseline's. */
  static String rest(SparkPod base, SparkPod got) {
    Container c = Serialization.clone(got.container());
    Container b = base.container();
    ResourceRequirements r = c.getResources() != null ? c.getResources() : new ResourceRequirements();
    Map<String, Quantity> req = new LinkedHashMap<>(r.getRequests() != null ? r.getRequests()
        : new LinkedHashMap<>());
    Map<String, Quantity> lim = new LinkedHashMap<>(r.getLimits() != null ? r.getLimits()
        : new LinkedHashMap<>());
    ResourceRequirements br = b.getResources() != null ? b.getResources() : new ResourceRequirements();
    for (String k : new String[] {"cpu", "memory"}) {
      restore(req, br.getRequests(), k);
      restore(lim, br.getLimits(), k);
    }
    r.setRequests(req);
    r.setLimits(lim);
    c.setResources(r);
    c.setCommand(b.getCommand());
    String want = Serialization.asJson(whole(base));
    String have = Serialization.asJson(whole(new SparkPod(got.pod(), c)));
    if (want.equals(have)) {
      return "same";
    }
    int at = 0;
    while (at < want.length() && at < have.length() && want.charAt(at) == have.charAt(at)) {
      at++;
    }
    int from = Math.max(0, at - 60);
    return "changed: Spark's pod ..." + want.substring(from, Math.min(want.length(), at + 60))
        + "... with the step ..." + have.substring(from, Math.min(have.length(), at + 60)) + "...";
  }

  static void restore(Map<String, Quantity> into, Map<String, Quantity> from, String key) {
    if (from != null && from.containsKey(key)) {
      into.put(key, from.get(key));
    } else {
      into.remove(key);
    }
  }
}

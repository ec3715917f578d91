/* SPDX-License-Identifier: Apache-2.0 */
// A small real Java program without any Spark class, for test-agent.sh: holds some memory
// for a while, then prints how many agents its JVM was started with (-agentpath:/-agentlib:
// from the command line and JAVA_TOOL_OPTIONS alike) and the property sparkshim.test.
// Usage: AgentProbe [MILLIS [GATE_FILE]]
import java.lang.management.ManagementFactory;

public final class AgentProbe {
    public static void main(String[] args) throws Exception {
        long millis = args.length > 0 ? Long.parseLong(args[0]) : 0;
        long agents = ManagementFactory.getRuntimeMXBean().getInputArguments().stream()
                .filter(a -> a.startsWith("-agentpath:") || a.startsWith("-agentlib:"))
                .count();
        byte[][] held = new byte[32][];
        for (int i = 0; i < held.length; i++) {
            held[i] = new byte[1 << 20];
            held[i][i] = 1;
        }
        Thread.sleep(millis);
        // a gate file (second argument): held until the test has seen what it waits for, at
        // most 120 s, rather than for a time that a loaded machine may not honour
        if (args.length > 1) {
            java.io.File gate = new java.io.File(args[1]);
            for (int i = 0; i < 2400 && !gate.exists(); i++) {
                Thread.sleep(50);
            }
        }
        System.out.println("agentprobe agents=" + agents + " prop=" + System.getProperty("sparkshim.test")
                + " held=" + held.length);
    }
}
